import random

import pytest

from verimod.tasks.varm.corrupt import CORRUPTIONS, DEFAULT_MIX, corrupt_rationale, demo_outputs
from verimod.tasks.varm.parser import ParseErrorClass, parse_rationale
from verimod.tasks.varm.starter import load_starter

TEST = load_starter("test")
HARMFUL = next(r for r in TEST if r.label == "harmful" and r.target_explicitness == "explicit")
QUOTED = next(r for r in TEST if r.stance == "quote_or_report")
TARGETS = sorted({r.target for r in TEST})


def _parse(reference, kind, seed=0):
    return parse_rationale(corrupt_rationale(reference, kind, random.Random(seed), TARGETS))


def test_registry_and_mix_agree():
    assert set(CORRUPTIONS) == set(DEFAULT_MIX) and DEFAULT_MIX["keep"] > 0


def test_keep_reproduces_the_reference():
    assert _parse(HARMFUL, "keep").record == HARMFUL.record()


@pytest.mark.parametrize("reference", [HARMFUL, QUOTED], ids=["harmful", "quoted"])
def test_field_corruptions_change_exactly_what_they_name(reference):
    ref = reference.record().model_dump()

    def changed(kind):
        record = _parse(reference, kind).record.model_dump()
        return {f for f in ref if record[f] != ref[f]}

    assert changed("wrong_target") == {"target"}
    assert changed("wrong_type") == {"target_type"}
    assert changed("wrong_explicitness") == {"target_explicitness"}
    assert "stance" in changed("wrong_stance")
    assert {"label", "category"} <= changed("flip_label")
    assert "category" in changed("wrong_category")


def test_partial_target_is_a_prefix():
    result = _parse(HARMFUL, "partial_target")
    assert HARMFUL.target.startswith(result.values[0]) and result.values[0] != HARMFUL.target


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("drop_anchor", ParseErrorClass.MISSING_ANCHOR),
        ("duplicate_anchor", ParseErrorClass.DUPLICATE_ANCHOR),
        ("swap_order", ParseErrorClass.ANCHOR_ORDER),
        ("invalid_value", ParseErrorClass.INVALID_VALUE),
        ("empty", ParseErrorClass.EMPTY_OUTPUT),
    ],
)
def test_broken_outputs_fail_with_their_error_class(kind, error):
    assert _parse(HARMFUL, kind).error_class is error


def test_lenient_and_inconsistent_parse_but_fail_format():
    lenient = _parse(HARMFUL, "lenient_format")
    assert lenient.record == HARMFUL.record() and not lenient.format_ok
    assert {"fullwidth_bracket", "fullwidth_colon", "value_alias"} <= set(lenient.flags)
    inconsistent = _parse(HARMFUL, "inconsistent")
    assert inconsistent.ok and inconsistent.violations == ("label_category",)


def test_missing_and_unknown():
    assert corrupt_rationale(HARMFUL, "missing", random.Random(0)) is None
    with pytest.raises(ValueError, match="did you mean 'wrong_target'"):
        corrupt_rationale(HARMFUL, "wrong_targt", random.Random(0))


def test_demo_outputs_are_seeded():
    first = demo_outputs(TEST, seed=5)
    assert first == demo_outputs(TEST, seed=5)
    assert first != demo_outputs(TEST, seed=6)
    outputs, applied = first
    assert set(applied) == {r.id for r in TEST}
    assert {i for i, k in applied.items() if k == "missing"} == set(applied) - set(outputs)
