"""The optional packages of the transformations — pypinyin (pinyin, homophones) and OpenCC
(Traditional script) — imported on first use, with a one-line error naming the extra to install
(``pip install ".[safeqa]"``) when they are absent."""

from __future__ import annotations

import importlib
import importlib.metadata
from functools import lru_cache
from typing import Any, Literal

from verimod.core.errors import install_hint
from verimod.data.normalize_rules import MissingExtraError
from verimod.tasks.safeqa.transforms.keys import is_han

PinyinStyle = Literal["tone3", "tone", "plain", "initial"]


@lru_cache(maxsize=1)
def _pypinyin() -> Any:
    try:
        return importlib.import_module("pypinyin")
    except ImportError:
        raise MissingExtraError(
            "pinyin-based transformations need pypinyin, which is not installed: " + install_hint("safeqa")
        ) from None


@lru_cache(maxsize=4)
def library_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (recorded in meta: outputs depend on it), or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=8)
def opencc_converter(config: str) -> Any:
    """An OpenCC converter for ``config`` (``s2t``, ``s2tw``, ``s2hk``)."""
    try:
        opencc = importlib.import_module("opencc")
    except ImportError:
        raise MissingExtraError(
            "the Traditional-script transformation needs OpenCC, which is not installed: " + install_hint("safeqa")
        ) from None
    return opencc.OpenCC(f"{config}.json")


@lru_cache(maxsize=4096)
def pinyin_per_char(text: str, style: PinyinStyle = "tone3") -> tuple[str | None, ...]:
    """One pinyin syllable per character of ``text`` (``None`` for non-Han characters).

    Each maximal run of Han characters is converted as a whole, so pypinyin's phrase table picks
    the reading a polyphone has in context (银行 → yin2 hang2). Memoised (the pinyin-based methods
    of a batch read the same seeds). Styles: ``tone3`` (``zha4``;
    neutral tone without a digit), ``tone`` (``zhà``), ``plain`` (``zha``; ü written as ``ü``),
    ``initial`` (``z``).
    """
    pp = _pypinyin()
    styles = {
        "tone3": pp.Style.TONE3,
        "tone": pp.Style.TONE,
        "plain": pp.Style.NORMAL,
        "initial": pp.Style.FIRST_LETTER,
    }
    out: list[str | None] = [None] * len(text)
    i = 0
    while i < len(text):
        if not is_han(text[i]):
            i += 1
            continue
        j = i
        while j < len(text) and is_han(text[j]):
            j += 1
        syllables = pp.lazy_pinyin(text[i:j], style=styles[style], v_to_u=style == "plain")
        if len(syllables) != j - i:  # unknown characters are passed through together: go one by one
            syllables = [
                (pp.lazy_pinyin(ch, style=styles[style], v_to_u=style == "plain") or [ch])[0] for ch in text[i:j]
            ]
        for k, syllable in zip(range(i, j), syllables, strict=True):
            out[k] = None if syllable == text[k] else syllable
        i = j
    return tuple(out)
