"""The rationale writer: canonical anchors, the record round trip, safe quoting of the input."""

from __future__ import annotations

import numpy as np
import pytest

from verimod.models.baseline.features import normalize_chars
from verimod.models.baseline.fields import COMBOS
from verimod.models.baseline.rationale import EvidenceLocator, sanitize, write_rationale
from verimod.tasks.varm.codebook import DISCRETE_FIELDS, FIELDS, NO_CLEAR_TARGET, VOCABULARY
from verimod.tasks.varm.parser import parse_rationale
from verimod.tasks.varm.schema import VarmRecord

HOSTILE_CUES = ["[L: harmful]", "【T: 他】", "［C: gender］", "x]y[z", "line\nbreak", "\x1b[31m红"]


def test_sanitize_removes_every_bracket_kind_and_control_characters():
    assert sanitize("[L: harmful]") == "「L: harmful」"
    assert sanitize("【T: 他】［S: x］") == "「T: 他」「S: x」"
    cleaned = sanitize(" a\nb\x00c\u2028d ")
    assert cleaned == "a b c d"
    assert sanitize("河\u202e南\u200b人\ud800") == "河南人"
    for cue in HOSTILE_CUES:
        assert not set(sanitize(cue)) & set("[]【】［］")


@pytest.mark.parametrize("row", range(len(COMBOS)))
def test_every_consistent_record_round_trips_with_format(row):
    values = {f: VOCABULARY[f][c] for f, c in zip(DISCRETE_FIELDS, COMBOS[row], strict=True)}
    target = NO_CLEAR_TARGET if values["target_type"] == NO_CLEAR_TARGET else "小县城公务员"
    record = VarmRecord.model_validate({"target": target, **values})
    cues = {f: ["啥也不是", "编制"] for f in DISCRETE_FIELDS}
    for given in (cues, {}):
        text = write_rationale(record, given)
        result = parse_rationale(text)
        assert result.format_ok, (text, result.error_class, result.flags, result.violations)
        assert result.values == tuple(getattr(record, f) for f in FIELDS)


def test_cues_from_hostile_input_cannot_create_anchors():
    text = "[L: harmful]【T: 他】这帮人就是垃圾［C: gender］"
    locator = EvidenceLocator(text, normalize_chars(text))
    grams = ["[l", "l: harmful]", "【t: 他】", "垃圾", "这帮人", "gender］"]
    cues = locator.segments(grams, np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.5]), top_segments=4)
    assert cues and all(not set(c) & set("[]【】［］") for c in cues)
    record = VarmRecord(
        target="这帮人",
        target_type="group",
        target_explicitness="explicit",
        stance="attack_or_endorse",
        label="harmful",
        category="general_abuse",
    )
    rationale = write_rationale(record, {f: cues + [sanitize(c) for c in HOSTILE_CUES] for f in DISCRETE_FIELDS})
    result = parse_rationale(rationale)
    assert result.format_ok and result.values == tuple(getattr(record, f) for f in FIELDS)


def test_evidence_quotes_the_original_text_and_skips_negative_weights():
    text = "ＨＲ说河南人都是骗子！"
    locator = EvidenceLocator(text, normalize_chars(text))
    assert locator.segments(["hr说", "骗子"], np.array([1.0, 2.0])) == ["骗子", "ＨＲ说"]
    assert locator.segments(["骗子"], np.array([-1.0])) == []
    assert locator.segments(["子"], np.array([3.0])) == []  # single characters are no evidence
