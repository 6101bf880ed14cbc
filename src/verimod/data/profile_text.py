"""Per-text features of a data-set profile (:mod:`verimod.data.profile`), each a pure function.

Every feature is computed on the NFKC form of the text (full-width letters and digits become
ASCII, ``，`` becomes ``,``), so the same comment typed in different widths counts the same.

- :func:`char_length`: characters a reader sees. Code points of the NFKC text, except that
  whitespace, combining marks, ZWJ, variation selectors, keycap marks, skin tones and flag tags
  do not count, and each Weibo bracket emoticon (``[酷]``, ``[doge]``: 1–8 Chinese characters or
  Latin letters between ASCII brackets) counts as **one** character — the image it stands for.
  It is :func:`verimod.data.normalize_filters.text_length`, the length ``verimod data normalize
  --min-length`` filters on. An emoji ZWJ sequence counts one per pictograph.
- :func:`emoji_count`: Unicode emoji as ``verimod data normalize --emoji`` removes them (ZWJ
  sequences, flags and keycaps whole; ★ ♀ ❤ written bare are symbols, not emoji).
- :func:`has_emoticon`: at least one Weibo bracket emoticon.
- :func:`has_punctuation`: at least one character of Unicode general category P* (``。，！？…、
  “”《》()[]`` …) outside the emoticon codes; symbols (``~ ～ + ^``, emoji) are not punctuation.
- :func:`has_latin`: at least one Latin letter (A–Z, a–z, Latin-1 and Latin Extended letters)
  outside the emoticon codes (``[doge]`` is not Latin text).
- :class:`TraditionalScript`: a text is *Traditional* when it has a Traditional-only character —
  one that OpenCC's ``t2s`` conversion changes and that GB 2312 (the Simplified character set)
  does not contain. The GB 2312 condition keeps characters both scripts write (乾 in 李承乾,
  於 as a surname, 後, 麽) from counting. Without OpenCC, the same rule computed once with OpenCC
  (``resources/traditional_chars.json``) is used.
- :func:`opens_with_target`: the text starts with its reference target, allowing leading
  whitespace, punctuation, symbols (emoji) and emoticon codes; NFKC and case-insensitive.
- :func:`skeleton`: the text reduced to its sentence frame for :mod:`verimod.data.profile_frames`.
"""

from __future__ import annotations

import importlib
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, Literal

from verimod.core.errors import MissingExtraError, install_hint
from verimod.data.normalize_chars import HAN, emoticon_pattern, remove_emoji
from verimod.data.normalize_filters import text_length
from verimod.resources import resource_path

#: Bundled Traditional-only characters (see :func:`traditional_only_characters`).
TRADITIONAL_RESOURCE = "traditional_chars.json"
#: Code-point ranges the bundled table was computed over: CJK unified ideographs, extension A,
#: compatibility ideographs and extensions B–F with the compatibility supplement.
TRADITIONAL_RANGES: tuple[tuple[int, int], ...] = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2FA1F),
)
#: What the skeleton puts in place of the target, a digit run and a Latin-letter run. NFKC turns
#: these circled letters into plain ones, so they never occur in an NFKC text being masked.
TARGET_MARK, NUMBER_MARK, LATIN_MARK = "Ⓣ", "Ⓝ", "Ⓛ"

_LATIN_RE = re.compile(r"[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]+")
_DIGITS_RE = re.compile(r"[0-9]+")
_SPACE_RE = re.compile(r"\s+")
_HAN_RE = re.compile(f"[{HAN}]")


def nfkc(text: str) -> str:
    """The NFKC form of ``text`` (every feature here is computed on it)."""
    return unicodedata.normalize("NFKC", text)


def char_length(text: str) -> int:
    """Length in characters of the NFKC text, an emoticon code counting one (module docstring)."""
    return text_length(nfkc(text))


def emoji_count(text: str) -> int:
    """How many emoji the NFKC text holds (a ZWJ sequence, flag or keycap counts once)."""
    counts: Counter[str] = Counter()
    remove_emoji(nfkc(text), counts)
    return counts["emoji"]


def has_emoticon(text: str) -> bool:
    """True when the NFKC text holds a Weibo bracket emoticon such as ``[酷]`` or ``[doge]``."""
    return emoticon_pattern().search(nfkc(text)) is not None


def _without_emoticons(text: str) -> str:
    return emoticon_pattern().sub(" ", text) if "[" in text else text


@lru_cache(maxsize=65536)
def _is_punctuation(char: str) -> bool:
    return unicodedata.category(char).startswith("P")


def has_punctuation(text: str) -> bool:
    """True when the NFKC text, emoticon codes removed, has a character of category P*."""
    return any(_is_punctuation(ch) for ch in set(_without_emoticons(nfkc(text))))


def has_latin(text: str) -> bool:
    """True when the NFKC text, emoticon codes removed, has a Latin letter."""
    return _LATIN_RE.search(_without_emoticons(nfkc(text))) is not None


def _in_gb2312(char: str) -> bool:
    try:
        char.encode("gb2312")
        return True
    except UnicodeEncodeError:
        return False


def _opencc_t2s() -> Any | None:
    try:
        opencc = importlib.import_module("opencc")
    except ImportError:
        return None
    return opencc.OpenCC("t2s.json")


def traditional_only_characters(converter: Any, ranges: Sequence[tuple[int, int]] = TRADITIONAL_RANGES) -> str:
    """Every character of ``ranges`` that ``converter.convert`` (OpenCC ``t2s``) changes and that
    GB 2312 does not contain, in code-point order: how ``resources/traditional_chars.json`` was made."""
    chars = (chr(code) for first, last in ranges for code in range(first, last + 1))
    return "".join(ch for ch in chars if converter.convert(ch) != ch and not _in_gb2312(ch))


@lru_cache(maxsize=1)
def bundled_traditional_table() -> tuple[frozenset[str], str]:
    """The bundled Traditional-only characters and a description of how they were made."""
    data = json.loads(resource_path(TRADITIONAL_RESOURCE).read_text(encoding="utf-8"))
    return frozenset(data["characters"]), str(data["source"])


class TraditionalScript:
    """Decides whether a text has a Traditional-only character (module docstring).

    ``method``: ``"opencc"`` asks OpenCC ``t2s`` about each distinct character (cached),
    ``"table"`` reads the bundled table, ``"auto"`` (default) uses OpenCC when it is installed.
    :attr:`method` then says which was used and :attr:`description` how.
    """

    def __init__(self, method: Literal["auto", "opencc", "table"] = "auto") -> None:
        converter = _opencc_t2s() if method in ("auto", "opencc") else None
        if method == "opencc" and converter is None:
            raise MissingExtraError(
                "the OpenCC script test needs OpenCC, which is not installed: " + install_hint("data")
            )
        self._converter = converter
        self._known: dict[str, bool] = {}
        if converter is None:
            table, source = bundled_traditional_table()
            self._table: frozenset[str] | None = table
            self.method = "table"
            self.description = f"bundled table of {len(table)} Traditional-only characters ({source})"
        else:
            self._table = None
            self.method = "opencc"
            version = getattr(importlib.import_module("opencc"), "__version__", "")
            self.description = f"OpenCC {version} t2s, characters outside GB 2312".replace("  ", " ")

    def is_traditional(self, char: str) -> bool:
        """True for a Traditional-only character."""
        if self._table is not None:
            return char in self._table
        known = self._known.get(char)
        if known is None:
            assert self._converter is not None
            known = self._converter.convert(char) != char and not _in_gb2312(char)
            self._known[char] = known
        return known

    def has_traditional(self, text: str) -> bool:
        """True when the NFKC text has a Traditional-only Han character."""
        return any(self.is_traditional(ch) for ch in set(_HAN_RE.findall(nfkc(text))))


def _strip_lead(text: str) -> str:
    """``text`` without its leading whitespace, punctuation, symbols and emoticon codes."""
    pattern = emoticon_pattern()
    position = 0
    while position < len(text):
        match = pattern.match(text, position)
        if match:
            position = match.end()
        elif text[position].isspace() or unicodedata.category(text[position])[0] in "PSCZ":
            position += 1
        else:
            break
    return text[position:]


def opens_with_target(text: str, target: str) -> bool:
    """True when ``text`` begins with ``target`` once leading whitespace, punctuation (P*),
    symbols (S*, emoji included), format characters and emoticon codes are skipped; both NFKC
    and case-folded. A blank target never opens a text."""
    wanted = nfkc(target).strip().casefold()
    return bool(wanted) and _strip_lead(nfkc(text).casefold()).startswith(wanted)


def skeleton(text: str, targets: Iterable[str] = ()) -> str:
    """The sentence frame of ``text``: NFKC, case-folded; emoji and emoticon codes removed; every
    occurrence of a target → ``Ⓣ`` (longest target first); digit runs → ``Ⓝ``; Latin-letter
    runs → ``Ⓛ``; whitespace removed. Han characters and punctuation stay as written.

    >>> skeleton("上海人就是排外, 2024年说了100遍 OK[酷]", ["上海人"])
    'Ⓣ就是排外,Ⓝ年说了Ⓝ遍Ⓛ'
    """
    frame = nfkc(text).casefold()
    counts: Counter[str] = Counter()
    frame = remove_emoji(_without_emoticons(frame), counts)
    for target in sorted({nfkc(t).strip().casefold() for t in targets} - {""}, key=len, reverse=True):
        frame = frame.replace(target, TARGET_MARK)
    frame = _DIGITS_RE.sub(NUMBER_MARK, frame)
    frame = _LATIN_RE.sub(LATIN_MARK, frame)
    return _SPACE_RE.sub("", frame)


def has_han(text: str) -> bool:
    """True when ``text`` holds at least one Han character."""
    return _HAN_RE.search(text) is not None
