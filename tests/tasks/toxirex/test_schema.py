import json
import random

import jsonschema
import pytest
from pydantic import ValidationError

from tests.tasks.toxirex.helpers import (
    NA,
    fixture_lines,
    full,
    just_inappropriate,
    no_implication,
    not_toxic,
    reasoning,
)
from verimod.tasks.toxirex.schema import (
    ATTITUDE_SCALE,
    AnnotationRecord,
    Attitude,
    ContentCategory,
    GroupType,
    PredictionRecord,
    Role,
    Temporality,
    ThreadReasoning,
    ToxicReasoning,
    attitude_rank,
    response_format,
    toxic_reasoning_json_schema,
)
from verimod.tasks.toxirex.stopping import (
    GATE_VARIABLES,
    VARIABLE_NAMES,
    reached_variables,
    stopping_violations,
    variable_values,
)

# ---------------------------------------------------------------- models and round trips


def test_fixture_annotations_round_trip_through_json_names():
    for line in fixture_lines("annotations.jsonl"):
        record = AnnotationRecord.model_validate(line)
        dumped = record.model_dump(mode="json", exclude_none=True)
        assert dumped == line  # JSON names out, the same document back
        assert AnnotationRecord.model_validate_json(json.dumps(dumped, ensure_ascii=False)) == record


def test_python_names_validate_too_and_dump_as_json_names():
    by_alias = reasoning(full(specificity="group", group="cyclists", group_type="Other"))
    python = ToxicReasoning.model_validate(by_alias.model_dump())  # model_dump uses JSON names
    assert python == by_alias
    by_name = ToxicReasoning(toxicity=False, counternarrative=True, just_inappropriate=False, has_implication=False)
    assert by_name.model_dump(exclude_none=True) == {
        "toxicity": False,
        "counternarrative": True,
        "justInappropriate": False,
        "hasImplication": False,
    }
    assert by_alias.composition is not None and by_alias.composition.subject.group_type is GroupType.OTHER


@pytest.mark.parametrize(
    ("patch", "loc"),
    [
        ({"toxicty": True}, ("toxicty",)),
        ({"toxicity": "yes"}, ("toxicity",)),  # strict booleans: no coercion of strings
        ({"implSarcasm": 0}, ("implSarcasm",)),
        ({"propositionComposition": {"implPolarity": "Neutral"}}, ("propositionComposition", "implPolarity")),
        ({"propositionComposition": {"implTemporality": []}}, ("propositionComposition", "implTemporality")),
        (
            {"propositionComposition": {"implTemporality": ["past", "past"]}},
            ("propositionComposition", "implTemporality"),
        ),
        ({"attitudes": {"authorBelief": "Somewhat"}}, ("attitudes", "authorBelief")),
        ({"implication": "   "}, ("implication",)),
        ({"propositionComposition": {"implTokens": [""]}}, ("propositionComposition", "implTokens")),
    ],
)
def test_schema_violations_name_the_field(patch, loc):
    data = full()
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    with pytest.raises(ValidationError) as info:
        ToxicReasoning.model_validate(data)
    assert info.value.errors()[0]["loc"][: len(loc)] == loc


def test_temporality_is_a_set_in_canonical_order():
    r = reasoning(full(temporality=("future", "past")))
    assert r.composition is not None
    assert r.composition.temporality == [Temporality.PAST, Temporality.FUTURE]


def test_attitude_scale_ranks():
    assert [attitude_rank(a) for a in ATTITUDE_SCALE] == [0, 1, 2, 3, 4]
    assert attitude_rank(Attitude.NOT_APPLICABLE) is None


def test_prediction_record_has_reasoning_or_error_class():
    PredictionRecord.model_validate({"commentId": 1, "reasoning": not_toxic()})
    PredictionRecord.model_validate({"commentId": "c", "errorClass": "invalid_json"})
    with pytest.raises(ValidationError):
        PredictionRecord.model_validate({"commentId": "c"})
    with pytest.raises(ValidationError):
        PredictionRecord.model_validate({"commentId": "c", "reasoning": not_toxic(), "errorClass": "missing"})
    with pytest.raises(ValidationError):
        PredictionRecord.model_validate({"commentId": "c", "errorClass": "broken"})


# ---------------------------------------------------------------- JSON Schema export


def _walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


@pytest.mark.parametrize("scope", ["thread", "comment"])
def test_json_schema_is_self_contained_and_strict(scope):
    schema = toxic_reasoning_json_schema(scope)
    jsonschema.Draft202012Validator.check_schema(schema)
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text and "default" not in text
    assert schema["type"] == "object"
    for node in _walk(schema):
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert sorted(node["required"]) == sorted(node["properties"])
    if scope == "thread":  # the model names the message before annotating it
        assert next(iter(schema["properties"]["comments"]["items"]["properties"])) == "messageNr"
    fmt = response_format(scope)
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == schema


def _random_reasoning(rng: random.Random) -> dict:
    gate = rng.randrange(4)
    if gate == 0:
        return not_toxic()
    if gate == 1:
        return just_inappropriate(rng.random() < 0.5, True)
    if gate == 2:
        return no_implication(True, rng.random() < 0.5)
    specificity = rng.choice(["personal", "group"])
    other = None
    if rng.random() < 0.5:
        other = {
            "role": rng.choice([r.value for r in Role]),
            "group": rng.choice([None, "本地人", "drivers"]),
            "otherTokens": rng.sample(["we", "us", "他们"], rng.randrange(3)),
        }
    return full(
        category=rng.choice([c.value for c in ContentCategory]),
        polarity=rng.choice(["Negative", "Positive"]),
        temporality=tuple(rng.sample(["past", "present", "future"], rng.randint(1, 3))),
        specificity=specificity,
        role=rng.choice([r.value for r in Role]),
        subject_tokens=tuple(rng.sample(["外地人", "they", "her"], rng.randrange(3))),
        attitudes=tuple(rng.choice([a.value for a in Attitude]) for _ in range(5)),
        group="外地人" if specificity == "group" else None,
        group_type=rng.choice([g.value for g in GroupType]),
        other=other,
        sarcasm=rng.random() < 0.5,
        stereotype=rng.random() < 0.5,
    )


def test_every_valid_instance_is_accepted_by_the_exported_schema():
    rng = random.Random(7)
    comments = []
    for nr in range(1, 201):
        r = reasoning(_random_reasoning(rng))
        assert not stopping_violations(r)
        comments.append({"messageNr": nr, **r.model_dump(mode="json")})  # nulls kept, as strict outputs give
    thread = ThreadReasoning.model_validate({"comments": comments})
    jsonschema.validate(thread.model_dump(mode="json"), toxic_reasoning_json_schema("thread"))
    for comment in comments[:20]:
        single = {k: v for k, v in comment.items() if k != "messageNr"}
        jsonschema.validate(single, toxic_reasoning_json_schema("comment"))


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c.update(extra=1),
        lambda c: c.update(toxicity="yes"),
        lambda c: c["propositionComposition"].update(implCategory="Nature"),
        lambda c: c["attitudes"].pop("expertBelief"),
        lambda c: c["propositionComposition"]["subject"].update(role="the author"),
    ],
)
def test_exported_schema_rejects_invalid_instances(mutate):
    comment = reasoning(full()).model_dump(mode="json")
    mutate(comment)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(comment, toxic_reasoning_json_schema("comment"))


# ---------------------------------------------------------------- stopping logic, every path

IMPLICATION_ALWAYS = {
    "implication",
    "implCategory",
    "implPolarity",
    "implTemporality",
    "specificity",
    "subject",
    "subjectTokens",
    "hasOther",
    "implTopic",
    "implTokens",
    "implSarcasm",
    "implStereotype",
    "authorBelief",
    "authorPrefer",
    "authorIntent",
    "typicalBelief",
    "expertBelief",
}
GATES_ALL = set(GATE_VARIABLES)
OTHER = {"role": "author", "group": "本地人", "otherTokens": ["我们"]}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (not_toxic(), {"toxicity", "counternarrative"}),
        (just_inappropriate(True, False), {"toxicity", "counternarrative", "justInappropriate"}),
        (just_inappropriate(False, True), {"toxicity", "counternarrative", "justInappropriate"}),
        (no_implication(True, False), GATES_ALL),
        (no_implication(False, True), GATES_ALL),
        (full(specificity="personal"), GATES_ALL | IMPLICATION_ALWAYS),
        (full(specificity="group", group="g"), GATES_ALL | IMPLICATION_ALWAYS | {"subjectGroup", "subjectGroupType"}),
        (full(other=OTHER), GATES_ALL | IMPLICATION_ALWAYS | {"other", "otherGroup", "otherTokens"}),
        (
            full(specificity="group", group="g", other={**OTHER, "group": None}),
            GATES_ALL | IMPLICATION_ALWAYS | {"subjectGroup", "subjectGroupType", "other", "otherGroup", "otherTokens"},
        ),
    ],
)
def test_reached_variables_on_every_path(data, expected):
    r = reasoning(data)
    assert reached_variables(r) == expected
    assert stopping_violations(r) == []
    values = variable_values(r)
    assert list(values) == list(VARIABLE_NAMES)
    filled = {k for k, v in values.items() if v is not None}
    assert filled == expected - ({"otherGroup"} if values["otherGroup"] is None else set())


def _paths(r, allow_unreached=False):
    return [v.path for v in stopping_violations(r, allow_unreached)]


def test_filled_fields_beyond_a_stop_are_violations():
    complete = full()
    stopped = {**complete, "toxicity": False, "counternarrative": False}
    assert _paths(reasoning(stopped)) == [
        "justInappropriate",
        "hasImplication",
        "implication",
        "propositionComposition",
        "implSarcasm",
        "implStereotype",
        "attitudes",
    ]
    inappropriate = {**complete, "justInappropriate": True}
    assert _paths(reasoning(inappropriate))[0] == "hasImplication"
    assert "hasImplication is false" not in str(stopping_violations(reasoning(inappropriate))[0])
    no_impl = {**complete, "hasImplication": False}
    violations = stopping_violations(reasoning(no_impl))
    assert violations[0].path == "implication"
    assert "because hasImplication is false" in violations[0].message
    # an unconstrained model may fill everything: allowed with allow_unreached
    for data in (stopped, inappropriate, no_impl):
        assert _paths(reasoning(data), allow_unreached=True) == []


def test_missing_reached_fields_are_violations():
    assert _paths(reasoning({"toxicity": True, "counternarrative": False})) == ["justInappropriate"]
    assert _paths(reasoning({"toxicity": False, "counternarrative": True, "justInappropriate": False})) == [
        "hasImplication"
    ]
    bare = {**no_implication(), "hasImplication": True}
    assert _paths(reasoning(bare)) == [
        "implication",
        "propositionComposition",
        "implSarcasm",
        "implStereotype",
        "attitudes",
    ]
    # missing fields stay violations even for unconstrained models
    assert _paths(reasoning(bare), allow_unreached=True) == _paths(reasoning(bare))


def test_branches_inside_the_composition():
    group_without_description = full(specificity="group")
    del group_without_description["propositionComposition"]["subject"]["group"]
    assert _paths(reasoning(group_without_description)) == ["propositionComposition.subject.group"]
    personal_with_group = full()
    personal_with_group["propositionComposition"]["subject"].update(group="x", groupType="Age")
    assert _paths(reasoning(personal_with_group)) == [
        "propositionComposition.subject.group",
        "propositionComposition.subject.groupType",
    ]
    assert _paths(reasoning(personal_with_group), allow_unreached=True) == []
    other_missing = full()
    other_missing["propositionComposition"]["hasOther"] = True
    assert _paths(reasoning(other_missing)) == ["propositionComposition.other"]
    other_unwanted = full(other=OTHER)
    other_unwanted["propositionComposition"]["hasOther"] = False
    violations = stopping_violations(reasoning(other_unwanted))
    assert [v.path for v in violations] == ["propositionComposition.other"]
    assert str(violations[0]) == "propositionComposition.other: must be null because hasOther is false"


def test_values_beyond_a_stop_are_kept_in_the_flat_view():
    data = {**full(attitudes=("Low", "Low", "Low", "Low", NA)), "hasImplication": False}
    r = reasoning(data)
    assert "authorBelief" not in reached_variables(r)
    assert variable_values(r)["authorBelief"] is Attitude.LOW
