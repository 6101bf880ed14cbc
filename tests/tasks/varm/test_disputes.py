import pytest

from verimod.core.errors import InputError
from verimod.tasks.varm.codebook import codebook_violations
from verimod.tasks.varm.disputes import apply_disputes
from verimod.tasks.varm.schema import VarmReference

GOLD = {
    "target": "河南人",
    "target_type": "group",
    "target_explicitness": "explicit",
    "stance": "attack_or_endorse",
    "label": "harmful",
    "category": "region_ethnicity",
}
READING = {"stance": "oppose_attack", "label": "non_harmful", "category": "non_attack"}


def refs():
    disputed = VarmReference(
        id="d",
        text="有人说河南人都是骗子，这种地域黑真恶心",
        cot="…",
        meta={"disputed": {"reading": READING, "reason": "反对"}},
        **GOLD,
    )
    plain = VarmReference(id="p", text="河南人都是骗子", **GOLD)
    return [disputed, plain]


def test_keep_drop_and_reading():
    assert [r.id for r in apply_disputes(refs(), "keep", "x")] == ["d", "p"]
    assert [r.id for r in apply_disputes(refs(), "drop", "x")] == ["p"]
    reading = apply_disputes(refs(), "reading", "x")
    assert reading[0].label == "non_harmful" and reading[0].stance == "oppose_attack" and reading[0].cot is None
    assert reading[0].target == "河南人" and reading[1] == refs()[1]
    assert not codebook_violations(reading[0])


def test_bad_reading_and_mode_are_input_errors():
    bad = refs()[0].model_copy(update={"meta": {"disputed": {"reading": {"label": "benign"}, "reason": "?"}}})
    with pytest.raises(InputError, match="item d: reading"):
        apply_disputes([bad], "reading", "ref.jsonl")
    with pytest.raises(InputError, match="--disputed"):
        apply_disputes(refs(), "ignore", "x")  # type: ignore[arg-type]
