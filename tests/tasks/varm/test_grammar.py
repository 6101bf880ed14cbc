"""The VARM anchor grammar (``--constrain anchors``): it accepts every reference rationale of the
bundled sets, rejects malformed ones — in Python ``re``, in llguidance (the hf backend's mask)
and in llama.cpp's grammar sampler (the gguf backend's) — and every text it allows parses."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.grammar import llama_cpp_accepts, llguidance_accepts, vocab_model
from tests.models.local_model import gguf_or_skip
from verimod.tasks.varm.bundled import load_bundled
from verimod.tasks.varm.grammar import (
    GRAMMAR_NAME,
    SEGMENT_CHARS,
    TARGET_CHARS,
    anchor_grammar,
    constrain_mode,
    structured_output,
)
from verimod.tasks.varm.parser import parse_rationale

REFERENCES = [r.cot for name in ("starter", "varm-open") for r in load_bundled(name) if r.cot]
BASE = (
    "评论骂[T: 外地人]是一个群体[TY: group]，直接点名[T: explicit]，"
    "作者本人攻击[S: attack_or_endorse]，判[L: harmful]，归[C: region_ethnicity]。"
)


def _swap(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


MALFORMED = {
    "empty": "",
    "no anchors": "这条评论没有锚点。",
    "missing stance": _swap(BASE, "[S: attack_or_endorse]", ""),
    "label before stance": _swap(
        _swap(BASE, "[S: attack_or_endorse]", "[L: harmful]"), "判[L: harmful]", "判[S: attack_or_endorse]"
    ),
    "duplicate label": _swap(BASE, "。", "[L: harmful]。"),
    "value outside the vocabulary": _swap(BASE, "[L: harmful]", "[L: harm]"),
    "alias value (parses, not canonical)": _swap(BASE, "[L: harmful]", "[L: 有害]"),
    "upper-case value": _swap(BASE, "[L: harmful]", "[L: Harmful]"),
    "full-width brackets": _swap(BASE, "[L: harmful]", "【L: harmful】"),
    "full-width colon": _swap(BASE, "[L: harmful]", "[L：harmful]"),
    "lower-case tag": _swap(BASE, "[L: harmful]", "[l: harmful]"),
    "no space": _swap(BASE, "[L: harmful]", "[L:harmful]"),
    "explicitness alias tag": _swap(BASE, "[T: explicit]", "[TE: explicit]"),
    "empty target": _swap(BASE, "[T: 外地人]", "[T: ]"),
    "target with a leading space": _swap(BASE, "[T: 外地人]", "[T:  外地人]"),
    "target with a trailing space": _swap(BASE, "[T: 外地人]", "[T: 外地人 ]"),
    "target with a bracket": _swap(BASE, "[T: 外地人]", "[T: 外【地】人]"),
    "target too long": _swap(BASE, "[T: 外地人]", f"[T: {'外' * (TARGET_CHARS + 1)}]"),
    "free text too long": _swap(BASE, "评论骂", "评" * (SEGMENT_CHARS + 1)),
    "line break": _swap(BASE, "，直接", "\n直接"),
    "bracketed emoticon": _swap(BASE, "。", "[doge]。"),
    "aside with a colon (an anchor in disguise)": _swap(BASE, "。", "【S：oppose_attack】。"),
    "unclosed aside": _swap(BASE, "。", "【。"),
}


def test_the_base_example_is_accepted_and_parses() -> None:
    assert anchor_grammar().matches(BASE) and parse_rationale(BASE).format_ok


def test_every_bundled_reference_rationale_is_in_the_grammar() -> None:
    assert len(REFERENCES) > 3000
    grammar = anchor_grammar()
    rejected = [text for text in REFERENCES if not grammar.matches(text)]
    assert not rejected, rejected[:3]


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_rationales_are_rejected(case: str) -> None:
    assert not anchor_grammar().matches(MALFORMED[case])


def test_llguidance_takes_every_reference_and_no_malformed_rationale() -> None:
    llguidance = pytest.importorskip("llguidance", reason="llguidance is not installed; pip install -e '.[hf]'")
    compiled = llguidance.LLMatcher.grammar_from_regex(anchor_grammar().regex())
    rejected = [text for text in REFERENCES if not llguidance_accepts(compiled, text)]
    assert not rejected, rejected[:3]
    accepted = [case for case, text in MALFORMED.items() if llguidance_accepts(compiled, text)]
    assert not accepted


def test_llama_cpp_takes_every_reference_and_no_malformed_rationale() -> None:
    llm = vocab_model(str(gguf_or_skip()))
    gbnf = anchor_grammar().gbnf()
    rejected = [text for text in REFERENCES if not llama_cpp_accepts(llm, gbnf, text)]
    assert not rejected, rejected[:3]
    accepted = [case for case, text in MALFORMED.items() if llama_cpp_accepts(llm, gbnf, text)]
    assert not accepted


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.from_regex(re.compile(anchor_grammar().regex()), fullmatch=True))
def test_every_text_the_grammar_allows_parses(text: str) -> None:
    result = parse_rationale(text)
    assert result.ok, (text, result.error_class, result.detail)
    discrete = result.anchors[1:]
    assert all(anchor.canonical for anchor in discrete), text
    target = result.anchors[0]
    # the target is written as generated: canonical unless it is an alias of no_clear_target ("无")
    assert target.canonical or (target.value == "no_clear_target" and target.raw_value.strip() != target.value)


@pytest.mark.parametrize("target", ["\x85人", "人\u3000", "\u2003人", "人\xa0"])
def test_targets_never_start_or_end_with_what_the_parser_strips(target: str) -> None:
    assert not anchor_grammar().matches(_swap(BASE, "[T: 外地人]", f"[T: {target}]"))


def test_constrain_modes() -> None:
    assert structured_output("none") is None
    structured = structured_output("anchors")
    assert structured is not None and structured.grammar is not None and structured.grammar.name == GRAMMAR_NAME
    assert constrain_mode(structured) == "anchors" and constrain_mode(None) == "none"
    with pytest.raises(ValueError, match="anchors"):
        structured_output("json")
