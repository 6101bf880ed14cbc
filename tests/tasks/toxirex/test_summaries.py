import json

import pytest

from tests.tasks.toxirex.helpers import FIXTURES, full, no_implication, not_toxic, reasoning
from verimod.core.errors import InputError
from verimod.resources import resource_path
from verimod.tasks.toxirex.io import load_annotations, load_predictions
from verimod.tasks.toxirex.schema import PropositionComposition
from verimod.tasks.toxirex.summaries import (
    compare_compositions,
    load_templates,
    reasoning_summary,
    summary_accuracy,
    summary_sentence,
)


def comp(**kwargs) -> PropositionComposition:
    r = reasoning(full(**kwargs))
    assert r.composition is not None
    return r.composition


CHICK = {"subject_tokens": ("That", "chick", "her")}

# ---------------------------------------------------------------- sentences


@pytest.mark.parametrize(
    ("kwargs", "english", "chinese"),
    [
        (
            CHICK,
            "An individual [That, chick, her] will have harm come to them.",
            "某个人[That、chick、her]将会遭受伤害。",
        ),
        (
            {
                "category": "Quality",
                "temporality": ("present",),
                "specificity": "group",
                "group": "外地人",
                "subject_tokens": ("外地人",),
            },
            'Members of the group "外地人" [外地人] have a bad nature.',
            "群体「外地人」[外地人]本性低劣。",
        ),
        (
            {
                "category": "Behavior",
                "temporality": ("past", "future"),
                "role": "conversation participant",
                "subject_tokens": (),
            },
            "A conversation participant behaved badly and will behave badly.",
            "一位对话参与者过去行为恶劣，并且将会行为恶劣。",
        ),
        (
            {"polarity": "Positive", "temporality": ("present",), "role": "author", "subject_tokens": ("I",)},
            "The author [I] has good things coming to them.",
            "作者本人[I]正处境良好。",
        ),
        (
            {
                "category": "Quality",
                "polarity": "Positive",
                "temporality": ("present",),
                "specificity": "group",
                "role": "author",
                "group": "locals",
                "subject_tokens": ("we",),
                "other": {"role": "someone else", "group": "expats", "otherTokens": ["them"]},
            },
            'Members of the author\'s group "locals" [we] have a good nature (compared to the group "expats" [them]).',
            "作者所属的群体「locals」[we]本性优良（与群体「expats」[them]相比）。",
        ),
        (
            {
                "category": "Behavior",
                "polarity": "Positive",
                "temporality": ("present",),
                "subject_tokens": ("she",),
                "other": {"role": "conversation participant", "group": None, "otherTokens": []},
            },
            "An individual [she] behaves well (compared to a conversation participant).",
            "某个人[she]表现良好（与一位对话参与者相比）。",
        ),
    ],
)
def test_summary_sentences_in_english_and_chinese(kwargs, english, chinese):
    c = comp(**kwargs)
    assert summary_sentence(c, "en") == english
    assert summary_sentence(c, "zh") == chinese


def test_inserted_values_are_not_template_text():
    c = comp(specificity="group", group="{subject} {predicate}", subject_tokens=("{tokens}",))
    assert summary_sentence(c) == 'Members of the group "{subject} {predicate}" [{tokens}] will have harm come to them.'


def test_summary_of_a_reasoning_needs_an_implication():
    assert (
        reasoning_summary(reasoning(full(**CHICK))) == "An individual [That, chick, her] will have harm come to them."
    )
    for data in (not_toxic(), no_implication(), {**full(), "hasImplication": False}):
        assert reasoning_summary(reasoning(data)) is None


def test_template_files_are_checked_for_every_combination(tmp_path):
    assert set(load_templates()) == {"en", "zh"}
    data = json.loads(resource_path("toxirex/summary_templates.json").read_text("utf-8"))
    del data["zh"]["predicates"]["Behavior/Positive"]["future"]["plural"]
    broken = tmp_path / "t.json"
    broken.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_templates(broken)
    assert info.value.problem.field == "zh.predicates.Behavior/Positive.future.plural"


# ---------------------------------------------------------------- comparison categories

BASE = {
    "category": "Quality",
    "temporality": ("present",),
    "specificity": "group",
    "group": "Cyclists",
    "subject_tokens": ("Cyclists",),
}


@pytest.mark.parametrize(
    ("change", "outcome", "slot"),
    [
        ({}, "identical", None),
        ({"group": "  cyclists ", "subject_tokens": ("them",), "impl_tokens": ("x",)}, "identical", None),
        ({"group": "ｃｙｃｌｉｓｔｓ"}, "identical", None),  # full-width letters fold by NFKC
        ({"temporality": ("past", "present")}, "small_difference", "temporality"),
        ({"group": "people on bikes"}, "small_difference", "subjectGroup"),
        ({"other": {"role": "author", "group": "drivers", "otherTokens": []}}, "small_difference", "other"),
        ({"category": "Behavior"}, "small_difference", "category"),
        ({"category": "Situation"}, "no_match", None),
        ({"polarity": "Positive"}, "no_match", None),
        ({"role": "author"}, "no_match", None),
        ({"specificity": "personal"}, "no_match", None),
        ({"temporality": ("future",)}, "no_match", None),
        ({"category": "Behavior", "group": "bikers"}, "no_match", None),
    ],
)
def test_compare_compositions(change, outcome, slot):
    gold = comp(**BASE)
    pred = comp(**{**BASE, **change})
    assert compare_compositions(pred, gold) == (outcome, slot)


def test_temporality_small_difference_both_ways():
    narrow, wide = comp(temporality=("future",)), comp(temporality=("present", "future"))
    assert compare_compositions(narrow, wide) == ("small_difference", "temporality")
    assert compare_compositions(wide, narrow) == ("small_difference", "temporality")
    assert compare_compositions(comp(temporality=("past", "present")), wide)[0] == "no_match"


def test_summary_accuracy_takes_the_best_annotator():
    gold_same = full(**BASE)
    gold_close = full(**{**BASE, "category": "Behavior"})
    gold_far = full(**{**BASE, "polarity": "Positive"})
    items = [
        ("c1", reasoning(full(**BASE)), [("a1", reasoning(gold_far)), ("a2", reasoning(gold_same))]),
        (
            "c2",
            reasoning(full(**BASE)),
            [("a1", reasoning(gold_far)), ("a2", reasoning(gold_close)), ("a3", reasoning(gold_close))],
        ),
        ("c3", reasoning(full(**BASE)), [("a1", reasoning(gold_far))]),
        ("c4", reasoning(no_implication()), [("a1", reasoning(gold_same))]),
        ("c5", None, [("a1", reasoning(gold_same))]),
        ("c6", reasoning(full(**BASE)), [("a1", reasoning(not_toxic())), ("a2", reasoning(no_implication()))]),
    ]
    acc = summary_accuracy(items)
    assert acc.counts == {"identical": 1, "small_difference": 1, "no_match": 1, "no_implication": 1, "invalid": 1}
    assert acc.n == 5 and acc.n_no_reference == 1
    assert acc.small_difference_slots == {"temporality": 0, "subjectGroup": 0, "other": 0, "category": 1}
    c1, c2 = acc.results[0], acc.results[1]
    assert (c1.annotator, c1.outcome) == ("a2", "identical")
    assert (c2.annotator, c2.slot) == ("a2", "category")  # tie: the first of the equally good annotators


def test_fixture_summary_accuracy():
    annotations = load_annotations(FIXTURES / "annotations.jsonl")
    predictions = {p.comment_id: p.reasoning for p in load_predictions(FIXTURES / "predictions.jsonl")}
    by_comment: dict = {}
    for a in annotations:
        by_comment.setdefault(a.comment_id, []).append((a.annotator, a.reasoning))
    acc = summary_accuracy((c, predictions.get(c), golds) for c, golds in sorted(by_comment.items()))
    assert acc.counts == {"identical": 4, "small_difference": 1, "no_match": 0, "no_implication": 2, "invalid": 0}
    assert acc.n_no_reference == 4
    small = next(r for r in acc.results if r.outcome == "small_difference")
    assert (small.comment_id, small.annotator, small.slot) == ("en-01-c2", "a1", "temporality")


def test_summary_docstring_example():
    import doctest

    from verimod.tasks.toxirex import summaries

    assert doctest.testmod(summaries).failed == 0
