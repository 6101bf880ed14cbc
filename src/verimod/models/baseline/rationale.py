"""The rationale writer: Chinese prose in the canonical anchored format, citing the input.

Contract of :func:`write_rationale`: for any record that satisfies the codebook and whose
target is admissible (:func:`verimod.models.baseline.target.admissible_target`), the text it
returns parses with :func:`verimod.tasks.varm.parser.parse_rationale`, passes Format, and its
parsed record equals the record. The six anchors appear once each, in order, written
``[TAG: value]``; every piece of the input quoted in the prose goes through :func:`sanitize`,
so the input can never contribute a bracket (and hence never a spurious anchor).

Evidence (:class:`EvidenceLocator`): the features of the input with the largest positive
contribution to the decided value of a field (``x_k · (W[value, k] − mean W[:, k])``) are
located in the input and widened to whole words (jieba's segmentation of the canonical text,
mapped back to the original characters), so a cue never starts or ends inside a word;
overlapping or adjacent occurrences merge into segments of at most ``max_chars`` characters of
the *original* text, ranked by their summed contribution. The writer quotes the top segments
as the cues of that decision.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Sequence
from typing import Final

import numpy as np

from verimod.models.baseline.features import BOS, EOS
from verimod.models.baseline.target import is_word_char
from verimod.tasks.varm.codebook import NO_CLEAR_TARGET
from verimod.tasks.varm.schema import VarmRecord

_BRACKETS: Final = str.maketrans({"[": "「", "【": "「", "［": "「", "]": "」", "】": "」", "］": "」"})
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
# Invisible format characters (zero-width, bidirectional controls, BOM) and lone surrogates.
_INVISIBLE: Final = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ud800-\udfff]")
_SPACES: Final = re.compile(r"\s+")
_CLAUSE: Final = re.compile(r"[\s，。！？；：、,.!?;:…“”\"'「」（）()]+")

TYPE_TEXT: Final = {"single": "一个具体的个人", "group": "一类人群"}
STANCE_TEXT: Final = {
    "attack_or_endorse": "作者本人在贬低、攻击对象或认同这种攻击",
    "oppose_attack": "作者是在反对针对对象的攻击",
    "quote_or_report": "作者是在引述或转述别人的说法，并非自己的表态",
    "neutral_mention": "作者只是中性地提及对象",
}
CATEGORY_TEXT: Final = {
    "general_abuse": "一般性的辱骂贬低，不涉及受保护的身份特征",
    "region_ethnicity": "对方的地域、国籍或民族",
    "gender": "对方的性别",
    "sogi": "对方的性取向或性别认同",
    "status_occupation": "对方的社会地位或职业",
    "body_health": "对方的身体外貌或健康状况",
}


def sanitize(text: str) -> str:
    """Input text made safe to quote: brackets ``[ ] 【 】 ［ ］`` become ``「 」``, control
    characters and line breaks become spaces, invisible format characters (zero-width,
    bidirectional controls) and lone surrogates are dropped, runs of whitespace become one
    space, ends are trimmed."""
    cleaned = _INVISIBLE.sub("", _CONTROL.sub(" ", text.translate(_BRACKETS)))
    return _SPACES.sub(" ", cleaned).strip()


def _trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and not is_word_char(text[start]):
        start += 1
    while end > start and not is_word_char(text[end - 1]):
        end -= 1
    return text[start:end]


class EvidenceLocator:
    """Finds where features of the canonical text occur in the original text, and turns the
    best-weighted ones into quotable cues made of whole words (see the module docstring)."""

    __slots__ = ("_bounds", "_tokens", "normalized", "starts", "text")

    def __init__(
        self, text: str, norm_chars: Sequence[str], tokens: Sequence[str] | Callable[[str], Sequence[str]] = ()
    ) -> None:
        """``tokens``: the segmentation of the canonical text, or a function that segments it
        (called once, when a feature is first located)."""
        self.text = text
        self.normalized = "".join(norm_chars)
        self.starts: list[int] = []
        offset = 0
        for part in norm_chars:
            self.starts.append(offset)
            offset += len(part)
        self._tokens = tokens
        self._bounds: list[int] | None = None

    @property
    def bounds(self) -> list[int]:
        """Word boundaries in the original text (every character boundary without a segmentation)."""
        if self._bounds is None:
            tokens = self._tokens(self.normalized) if callable(self._tokens) else self._tokens
            if tokens and sum(map(len, tokens)) == len(self.normalized):
                cuts = itertools.accumulate(len(t) for t in tokens)
                self._bounds = sorted({0, len(self.text), *(bisect.bisect_left(self.starts, p) for p in cuts)})
            else:  # no segmentation: every character boundary is a word boundary
                self._bounds = list(range(len(self.text) + 1))
        return self._bounds

    def _words(self, i: int, j: int) -> tuple[int, int]:
        """The smallest run of whole words of the original text covering ``[i, j)``."""
        bounds = self.bounds
        first = bounds[bisect.bisect_right(bounds, i) - 1]
        last = bounds[min(bisect.bisect_left(bounds, j), len(bounds) - 1)]
        return first, max(last, first + 1)

    def segments(
        self,
        grams: Sequence[str],
        weights: np.ndarray,
        top_features: int = 8,
        top_segments: int = 2,
        max_chars: int = 8,
    ) -> list[str]:
        """Quoted cues for features ``grams`` (character n-grams or words of the canonical text)
        weighted by their contributions ``weights``: each located feature is widened to the
        whole words it touches, neighbours merge while the result stays within ``max_chars``
        characters, and a cue is a sanitised run of whole words with at least two letters or
        digits (a single word longer than ``max_chars`` is left out, never cut). Features of
        fewer than two characters, or not found in the text, are skipped."""
        positive = int(np.count_nonzero(weights > 0))
        if positive == 0:
            return []
        take = min(positive, top_features * 3)
        best = np.argpartition(-weights, take - 1)[:take] if take < weights.size else np.arange(weights.size)
        best = best[np.lexsort((best, -weights[best]))]
        marks: list[tuple[int, int, float]] = []
        for k in best.tolist():
            weight = float(weights[k])
            if weight <= 0 or len(marks) >= top_features:
                break
            core = grams[k].replace(BOS, "").replace(EOS, "")
            if len(core) < 2:
                continue
            p = self.normalized.find(core)
            if p < 0:
                continue
            i = bisect.bisect_right(self.starts, p) - 1
            j = bisect.bisect_left(self.starts, p + len(core))
            first, stop = self._words(max(i, 0), max(j, i + 1))
            if stop - first <= max_chars:
                marks.append((first, stop, weight))
        marks.sort()
        merged: list[list[float]] = []
        for start, stop, w in marks:  # [start, stop, weight] of each merged segment
            if merged and start <= merged[-1][1] and max(stop, merged[-1][1]) - merged[-1][0] <= max_chars:
                merged[-1][1] = max(merged[-1][1], stop)
                merged[-1][2] += w
            else:
                merged.append([start, stop, w])
        merged.sort(key=lambda m: (-m[2], m[0]))
        cues: list[str] = []
        for segment in merged:
            pieces = _CLAUSE.split(sanitize(self.text[int(segment[0]) : int(segment[1])]))
            cue = _trim(max(pieces, key=lambda piece: sum(map(is_word_char, piece))))
            if sum(map(is_word_char, cue)) >= 2 and cue not in cues:
                cues.append(cue)
            if len(cues) == top_segments:
                break
        return cues


def _quoted(cues: Sequence[str], limit: int = 2) -> str:
    return "".join(f"“{c}”" for c in cues[:limit])


def write_rationale(record: VarmRecord, cues: dict[str, list[str]]) -> str:
    """The anchored rationale of ``record``, quoting ``cues[field]`` (may be empty lists) as the
    evidence of each decision; see the module docstring for the guarantee."""
    target = record.target
    parts: list[str] = []
    type_cue = _quoted(cues.get("target_type", []), 1)
    if record.target_type == NO_CLEAR_TARGET:
        seen = _quoted(cues.get("target_explicitness", []), 1)
        lead = f"评论虽然提到{seen}，但" if seen else "评论"
        parts.append(
            f"{lead}没有可以确定的讨论或攻击对象[T: {NO_CLEAR_TARGET}]，对象类型记为[TY: {NO_CLEAR_TARGET}]，"
            f"指代方式也记为[T: {NO_CLEAR_TARGET}]。"
        )
    elif record.target_explicitness == "explicit":
        why = f"从{type_cue}看，" if type_cue else ""
        parts.append(
            f"评论指向[T: {target}]，原文直接写出了“{target}”。{why}这是{TYPE_TEXT[record.target_type]}"
            f"[TY: {record.target_type}]，在文中被直接点名[T: explicit]。"
        )
    else:
        hint = _quoted(cues.get("target_explicitness", []), 2)
        lead = f"评论没有直接点名，但从{hint}可以推断它指向" if hint else "评论没有直接点名，但可以推断它指向"
        why = f"结合{type_cue}，" if type_cue else ""
        parts.append(
            f"{lead}[T: {target}]。{why}这是{TYPE_TEXT[record.target_type]}[TY: {record.target_type}]，"
            f"属于隐含的指代[T: implicit]。"
        )
    stance_cue = _quoted(cues.get("stance", []))
    lead = f"从{stance_cue}等说法看，" if stance_cue else "从全文的语气看，"
    parts.append(f"{lead}{STANCE_TEXT[record.stance]}，属于[S: {record.stance}]。")
    label_cue = _quoted(cues.get("label", []))
    if record.label == "harmful":
        category_cue = _quoted(cues.get("category", []), 1)
        basis = f"（{category_cue}）" if category_cue else ""
        lead = f"{label_cue}这样的表达" if label_cue else "这样的表达"
        parts.append(
            f"{lead}贬损了对象，判为[L: harmful]；攻击依据是{CATEGORY_TEXT[record.category]}{basis}，"
            f"归入[C: {record.category}]。"
        )
    else:
        lead = f"结合{label_cue}，" if label_cue else ""
        parts.append(f"{lead}内容并不构成对人的攻击，判为[L: non_harmful]，不属于任何攻击类别，归入[C: non_attack]。")
    return "".join(parts)
