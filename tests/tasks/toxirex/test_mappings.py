import json

import pytest

from tests.tasks.toxirex.helpers import NA, full, just_inappropriate, no_implication, not_toxic, reasoning
from verimod.core.errors import InputError
from verimod.tasks.toxirex.mappings import (
    categories_for,
    check_category,
    describe_pattern,
    load_mappings,
    parse_mappings,
    required_traits,
)
from verimod.tasks.toxirex.schema import ATTITUDE_SCALE, ContentCategory, Role, Temporality

# ---------------------------------------------------------------- trait pattern → category (hand cases)


def test_threat_needs_intent_incitement_needs_desire():
    # "That chick ... should watch her back": future harm to an individual
    wished_and_intended = reasoning(full(attitudes=("Very high", "Very high", "High", "Low", NA)))
    wished_only = reasoning(full(attitudes=("High", "High", "Medium", "Low", NA)))
    assert categories_for(wished_and_intended, "ihc") == ("incitement", "threatening")
    assert categories_for(wished_only, "ihc") == ("incitement",)
    past_harm = reasoning(full(temporality=("past",), attitudes=("Very high", "Very high", "High", "Low", NA)))
    assert categories_for(past_harm, "ihc") == ()
    assert categories_for(wished_and_intended, "edos") == ("1.1", "1.2", "4.1")
    assert categories_for(wished_and_intended, "trs0") == ("harmed", "negative")


def test_inferiority_language_positive_quality_experts_disbelieve():
    # "Japanese people have higher IQ": a Positive Quality of a group that experts disbelieve
    claim = full(
        category="Quality",
        polarity="Positive",
        temporality=("present",),
        specificity="group",
        group="Japanese people",
        group_type="Race/Ethnicity",
        attitudes=("High", "High", NA, "Medium", "Very low"),
    )
    assert categories_for(reasoning(claim), "ihc") == ("inferiority", "stereotypical")
    claim["attitudes"]["expertBelief"] = NA  # Not applicable satisfies no ordinal bound
    assert categories_for(reasoning(claim), "ihc") == ()
    claim["attitudes"]["expertBelief"] = "Medium"
    assert categories_for(reasoning(claim), "ihc") == ()
    individual = full(category="Behavior", polarity="Positive", attitudes=("High", "High", NA, "Medium", "Low"))
    assert "inferiority" not in categories_for(reasoning(individual), "ihc")  # needs a group


def test_other_ihc_and_trs0_cases():
    sarcastic = reasoning(full(category="Behavior", sarcasm=True, attitudes=("Medium",) * 5))
    assert categories_for(sarcastic, "ihc") == ("irony",)
    compared = full(
        category="Quality",
        polarity="Negative",
        temporality=("present",),
        specificity="group",
        group="外地人",
        other={"role": "author", "group": "本地人", "otherTokens": []},
        stereotype=True,
        attitudes=("Very high", "Low", NA, "Medium", "Very low"),
    )
    assert categories_for(reasoning(compared), "ihc") == ("inferiority", "stereotypical")
    assert categories_for(reasoning(compared), "trs0") == ("inferior", "negative", "stereotype")
    grievance = full(
        polarity="Negative",
        temporality=("present",),
        specificity="group",
        role="author",
        group="our people",
        attitudes=("Very high", "Low", NA, "Low", "Very low"),
    )
    assert categories_for(reasoning(grievance), "ihc") == ("white_grievance", "stereotypical")


def test_no_implication_maps_to_no_implication_category():
    for data in (not_toxic(), no_implication(), just_inappropriate()):
        assert categories_for(reasoning(data), "ihc") == ()
        assert categories_for(reasoning(data), "trs0") == ()
    assert categories_for(reasoning(just_inappropriate()), "edos") == ("3.1",)
    # values an unconstrained model filled beyond its stop are not used
    beyond = {**full(attitudes=("Very high", "Very high", "Very high", "Low", NA)), "hasImplication": False}
    assert categories_for(reasoning(beyond), "ihc") == ()


# ---------------------------------------------------------------- category → required traits

THREAT = "implCategory is Situation and implPolarity is Negative and implTemporality includes future and " + (
    "authorIntent is at least High"
)


def test_required_traits_and_descriptions():
    (pattern,) = required_traits("threatening", "ihc")
    assert describe_pattern(pattern) == THREAT
    first, second = required_traits("inferiority", "ihc")
    assert describe_pattern(first) == (
        "implCategory is one of Quality or Behavior and implPolarity is Positive and specificity is group and "
        "expertBelief is at most Low"
    )
    assert "hasOther is true" in describe_pattern(second)
    assert required_traits("nonhuman", "trs0") is None
    with pytest.raises(KeyError, match="did you mean 'threatening'"):
        required_traits("threatning", "ihc")
    with pytest.raises(KeyError, match="did you mean 'ihc'"):
        required_traits("threatening", "ihx")


def test_check_category_lists_what_is_missing():
    wished_only = reasoning(full(attitudes=("High", "High", "Low", "Low", NA)))
    check = check_category(wished_only, "threatening", "ihc")
    assert check.expressible and not check.matches
    assert [c.describe() for c in check.unmet[0]] == ["authorIntent is at least High"]
    assert check_category(wished_only, "incitement", "ihc").matches
    unexpressible = check_category(wished_only, "2.2", "edos")
    assert not unexpressible.expressible and not unexpressible.matches


# ---------------------------------------------------------------- both directions on every bundled pattern


def _lower(value: str, steps: int) -> str:
    index = ATTITUDE_SCALE.index(value) + steps
    return ATTITUDE_SCALE[max(0, min(index, len(ATTITUDE_SCALE) - 1))].value


def _render(s: dict) -> dict:
    if s.get("justInappropriate"):
        return just_inappropriate()
    other = {"role": "author", "group": "us", "otherTokens": []} if s.get("hasOther") else None
    return full(
        category=s.get("implCategory", "Behavior"),
        polarity=s.get("implPolarity", "Negative"),
        temporality=tuple(s.get("implTemporality", ["present"])),
        specificity=s.get("specificity", "personal"),
        role=s.get("subject", "someone else"),
        group="g" if s.get("specificity") == "group" else None,
        other=other,
        sarcasm=s.get("implSarcasm", False),
        stereotype=s.get("implStereotype", False),
        attitudes=tuple(
            s.get(k, "Medium")
            for k in ("authorBelief", "authorPrefer", "authorIntent", "typicalBelief", "expertBelief")
        ),
    )


def _satisfy(condition, settings: dict) -> None:
    if condition.op == "has":
        settings[condition.var] = [condition.value]
    elif condition.op == "in":
        settings[condition.var] = condition.value[0]
    else:
        settings[condition.var] = condition.value


def _violate(condition, settings: dict) -> None:
    var, op, value = condition.var, condition.op, condition.value
    if op == "has":
        settings[var] = [t.value for t in Temporality if t.value != value][:1]
    elif op == "atLeast":
        settings[var] = _lower(value, -1)
    elif op == "atMost":
        settings[var] = _lower(value, +1)
    elif isinstance(value, bool):
        settings[var] = not value
    else:
        excluded = value if op == "in" else (value,)
        vocab = {
            "implCategory": [c.value for c in ContentCategory],
            "implPolarity": ["Negative", "Positive"],
            "specificity": ["personal", "group"],
            "subject": [r.value for r in Role],
        }[var]
        settings[var] = next(v for v in vocab if v not in excluded)


def _cases():
    for tax in load_mappings().values():
        for category in tax.categories:
            for i, pattern in enumerate(category.patterns or ()):
                yield pytest.param(tax.key, category.key, pattern, id=f"{tax.key}-{category.key}-{i}")


@pytest.mark.parametrize(("taxonomy", "category", "pattern"), list(_cases()))
def test_each_pattern_maps_to_its_category_and_needs_every_condition(taxonomy, category, pattern):
    settings: dict = {}
    for condition in pattern:
        _satisfy(condition, settings)
    witness = reasoning(_render(settings))
    assert category in categories_for(witness, taxonomy)  # traits → category
    for condition in pattern:  # category → traits: each condition is required by this alternative
        broken = dict(settings)
        _violate(condition, broken)
        check = check_category(reasoning(_render(broken)), category, taxonomy)
        index = required_traits(category, taxonomy).index(pattern)
        assert condition in check.unmet[index], condition.describe()


# ---------------------------------------------------------------- the data file itself


def test_bundled_mappings_cover_the_paper_categories():
    mappings = load_mappings()
    assert [c.key for c in mappings["ihc"].categories] == [
        "white_grievance",
        "incitement",
        "inferiority",
        "irony",
        "stereotypical",
        "threatening",
    ]
    assert {c.key for c in mappings["trs0"].categories} == {
        "harmed",
        "inferior",
        "negative",
        "nonhuman",
        "stereotype",
        "superior",
    }
    assert mappings["ihc"].category("threatening").source == "ToxiREX §3.1"


@pytest.mark.parametrize(
    ("condition", "field", "message"),
    [
        ({"var": "implCatgory", "is": "Situation"}, "patterns.0.0.var", "did you mean 'implCategory'"),
        ({"var": "implCategory", "is": "Harm"}, "patterns.0.0.is", "not one of Situation, Quality, Behavior"),
        ({"var": "implCategory", "atLeast": "High"}, "patterns.0.0.atLeast", "does not apply"),
        ({"var": "authorBelief", "atMost": "Not applicable"}, "patterns.0.0.atMost", "not on the ordinal scale"),
        ({"var": "implTokens", "is": "x"}, "patterns.0.0.is", "does not apply"),
        ({"var": "hasOther", "is": "yes"}, "patterns.0.0.is", "true or false"),
        ({"var": "implCategory", "is": "Situation", "in": ["Quality"]}, "patterns.0.0", "exactly one operator"),
    ],
)
def test_bad_mapping_data_names_the_field(condition, field, message):
    doc = {
        "taxonomies": {
            "x": {
                "name": "X",
                "categories": {"c": {"label": "C", "definition": "d", "source": "s", "patterns": [[condition]]}},
            }
        }
    }
    with pytest.raises(InputError) as info:
        parse_mappings(doc, "m.json")
    assert info.value.problem.field == f"taxonomies.x.categories.c.{field}"
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_mapping_files_load_with_one_line_errors(tmp_path):
    good = tmp_path / "m.json"
    good.write_text(
        json.dumps(
            {
                "taxonomies": {
                    "mine": {
                        "name": "Mine",
                        "categories": {
                            "threat": {
                                "label": "Threat",
                                "definition": "d",
                                "source": "s",
                                "patterns": [[{"var": "authorIntent", "atLeast": "Very high"}]],
                            }
                        },
                    }
                }
            }
        ),
        encoding="utf-8",
    )
    tax = load_mappings(good)["mine"]
    strong = reasoning(full(attitudes=("High", "High", "Very high", "Low", NA)))
    assert categories_for(strong, tax) == ("threat",)
    bad = tmp_path / "bad.json"
    bad.write_text('{"taxonomies": {', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.json:1: invalid JSON"):
        load_mappings(bad)
    with pytest.raises(InputError, match="file not found"):
        load_mappings(tmp_path / "absent.json")
    missing = tmp_path / "missing.json"
    missing.write_text(
        json.dumps(
            {"taxonomies": {"t": {"name": "T", "categories": {"c": {"label": "C", "definition": "d", "source": "s"}}}}}
        ),
        encoding="utf-8",
    )
    with pytest.raises(InputError, match=r"field 'taxonomies\.t\.categories\.c\.patterns': missing"):
        load_mappings(missing)
