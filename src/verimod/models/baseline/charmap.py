"""Canonical characters, pinyin and glyph groups: what makes the baseline's features robust to
obfuscated spelling (谐音, 形近字, 繁体, pinyin, emoji, separators).

The tables are bundled in ``resources/baseline/charmap.json`` (built by
``datasets/baseline/build_charmap.py`` from OpenCC, pypinyin, pycorrector's similar-shape groups
and the emoji package's CLDR Chinese names; none of those packages is needed at run time).

Contract of :func:`canonical_chars` — one entry per character of the input, so that positions
in the canonical text map back to the original (the canonical text is their concatenation):

1. NFKC, then lower case (``Ａ`` → ``a``, ``①`` → ``1``);
2. Traditional → Simplified, character by character (``蓋`` → ``盖``, ``噁`` → ``恶``);
3. emoji → their CLDR Chinese name (``🐷`` → ``猪头``); variation selectors, skin-tone
   modifiers, zero-width and other invisible format characters, private-use characters → ``""``;
4. separators (``* / - · | _ . \\ ~ +`` and their full-width forms) standing between two Han
   characters, possibly several in a row, → ``""`` (``傻*逼`` reads ``傻逼``);
5. split characters recombined (拆字): two adjacent entries that ``resources/baseline/compose.json``
   joins (``马扁`` → ``骗``, ``女表`` → ``婊``; built by ``datasets/baseline/build_compose.py``
   from cjk-decomp's decomposition data, pairs that are words of their own left out) become the
   character and ``""``, unless a jieba word of 2–4 characters other than the pair overlaps it
   (``男尊女卑`` stays).

:func:`syllables` reads a canonical text as pinyin: each Han character by its first reading
(toneless), each run of Latin letters (tone marks removed; words separated by single spaces
stay in one run) split into pinyin syllables by the longest match from the left when it splits
completely, else kept whole and marked ``~`` (``sb``, ``nmsl``: read as initials). Anything
else — a Han character without a reading, a space next to a Han character, punctuation —
ends a run. :func:`initial` is a syllable's first letter (``zh``/``ch``/``sh`` → ``z``/``c``/``s``,
as abbreviations write them).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from verimod.resources import resource_path

CHARMAP_RESOURCE: Final = "baseline/charmap.json"
COMPOSE_RESOURCE: Final = "baseline/compose.json"
#: A recomposition is skipped when the pair overlaps a jieba word at least this frequent.
WORD_FREQ: Final = 20
SEPARATORS: Final = frozenset("*/-·|_.\\~+＊／－｜＿．＼～＋・•")
_INVISIBLE_CATEGORIES: Final = frozenset({"Cf", "Co", "Mn", "Me"})
_LATIN_RUN: Final = re.compile(r"[a-z]+")
_LATIN_LETTER: Final = "a-z\u00e0-\u00f6\u00f8-\u024f\u1e00-\u1eff"
#: Latin words (tone marks allowed) separated by single spaces: one run of pinyin tokens.
LATIN_GROUP: Final = re.compile(f"[{_LATIN_LETTER}]+(?: [{_LATIN_LETTER}]+)*")
#: One pinyin syllable at most this long.
_MAX_SYLLABLE: Final = 6


@dataclass(frozen=True)
class CharMap:
    """The bundled tables (see the module docstring); ``sha256`` is that of the JSON file."""

    version: str
    sha256: str
    t2s: dict[str, str]
    pinyin: dict[str, str]  # character -> toneless syllable
    syllable_set: frozenset[str]
    glyph: dict[str, tuple[int, ...]]  # character -> ids of the similar-shape groups it is in
    emoji: dict[str, str]
    compose: dict[str, str]  # two components -> the character they make
    compose_pattern: re.Pattern[str]


@lru_cache(maxsize=1)
def default_charmap() -> CharMap:
    """The bundled character tables (read once)."""
    raw = resource_path(CHARMAP_RESOURCE).read_bytes()
    compose_raw = resource_path(COMPOSE_RESOURCE).read_bytes()
    data = json.loads(raw.decode("utf-8"))
    compose = json.loads(compose_raw.decode("utf-8"))
    pairs: dict[str, str] = compose["pairs"]
    pinyin = {ch: syllable for syllable, chars in data["pinyin"].items() for ch in chars}
    glyph: dict[str, list[int]] = {}
    for gid, group in enumerate(data["glyph_groups"]):
        for ch in group:
            glyph.setdefault(ch, []).append(gid)
    return CharMap(
        version=f"{data['version']}+{compose['version']}",
        sha256=hashlib.sha256(raw + b"\n" + compose_raw).hexdigest(),
        t2s=data["t2s"],
        pinyin=pinyin,
        syllable_set=frozenset(data["pinyin"]),
        glyph={ch: tuple(ids) for ch, ids in glyph.items()},
        emoji=data["emoji"],
        compose=pairs,
        compose_pattern=re.compile("|".join(map(re.escape, sorted(pairs)))) if pairs else re.compile(r"(?!)"),
    )


def gb2312_hanzi(levels: int = 1) -> list[str]:
    """The Han characters of GB 2312 in code order: level 1 (rows 0xB0–0xD7, the 3,755 most
    common) with ``levels=1``, levels 1 and 2 (rows 0xB0–0xF7, 6,763) with ``levels=2``."""
    last = 0xD8 if levels == 1 else 0xF8
    chars = []
    for high in range(0xB0, last):
        for low in range(0xA1, 0xFF):
            try:
                chars.append(bytes((high, low)).decode("gb2312"))
            except UnicodeDecodeError:
                continue
    return chars


def is_han(ch: str) -> bool:
    """A Han ideograph of the BMP unified / compatibility blocks or extension A (or 〇)."""
    o = ord(ch) if len(ch) == 1 else -1
    return 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF or o == 0x3007


@lru_cache(maxsize=1 << 16)
def _canonical_char(ch: str) -> str:
    table = default_charmap()
    if ch in table.emoji:
        return table.emoji[ch]
    if unicodedata.category(ch) in _INVISIBLE_CATEGORIES or 0x1F3FB <= ord(ch) <= 0x1F3FF:
        return ""
    out = unicodedata.normalize("NFKC", ch).lower()
    if len(out) == 1:
        return table.t2s.get(out, out)
    return "".join(table.t2s.get(c, c) for c in out)


def canonical_chars(text: str) -> list[str]:
    """The canonical form of each character of ``text`` (same length; module docstring)."""
    out = [_canonical_char(ch) for ch in text]
    size = len(out)
    i = 0
    while i < size:
        if text[i] in SEPARATORS:
            j = i
            while j < size and text[j] in SEPARATORS:
                j += 1
            left = next((out[k] for k in range(i - 1, -1, -1) if out[k]), "")
            right = next((out[k] for k in range(j, size) if out[k]), "")
            if left and right and is_han(left[-1]) and is_han(right[0]):
                for k in range(i, j):
                    out[k] = ""
            i = j
        else:
            i += 1
    if table_pattern().search("".join(out)):
        _recompose(out)
    return out


def table_pattern() -> re.Pattern[str]:
    """The pattern of every pair of :attr:`CharMap.compose`."""
    return default_charmap().compose_pattern


@lru_cache(maxsize=1)
def _word_freq() -> dict[str, int]:
    from verimod.models.baseline.views import tokenizer

    freq: dict[str, int] = tokenizer().FREQ
    return freq


def _in_other_word(chars: list[str], i: int) -> bool:
    """True when a jieba word (count ≥ :data:`WORD_FREQ`) of 2–4 characters other than the
    pair ``chars[i:i + 2]`` overlaps it (``男尊女卑`` keeps its ``女卑``)."""
    freq = _word_freq()
    size = len(chars)
    for x in range(max(0, i - 3), i + 2):
        for y in range(max(x + 2, i + 1), min(size, x + 4) + 1):
            if (x, y) != (i, i + 2) and freq.get("".join(chars[x:y]), 0) >= WORD_FREQ:
                return True
    return False


def _recompose(out: list[str]) -> None:
    """Rewrite, in place, each pair of adjacent single-character entries that the compose table
    joins (and that is no part of another word) as the character, the second entry emptied."""
    compose = default_charmap().compose
    where = [k for k, part in enumerate(out) if part]
    chars = [out[k] for k in where]
    j = 0
    while j + 1 < len(chars):
        made = compose.get(chars[j] + chars[j + 1])
        if made is not None and not _in_other_word(chars, j):
            out[where[j]], out[where[j + 1]] = made, ""
            chars[j], chars[j + 1] = made, ""
            j += 2
        else:
            j += 1


def canonical_text(text: str) -> str:
    """The canonical text: the concatenation of :func:`canonical_chars`."""
    return "".join(canonical_chars(text))


@lru_cache(maxsize=1 << 15)
def _split_latin(run: str) -> tuple[str, ...] | None:
    """``run`` as pinyin syllables (longest match from the left), or None when it does not split."""
    syllables = default_charmap().syllable_set
    out: list[str] = []
    i = 0
    while i < len(run):
        for n in range(min(_MAX_SYLLABLE, len(run) - i), 0, -1):
            if run[i : i + n] in syllables:
                out.append(run[i : i + n])
                i += n
                break
        else:
            return None
    return tuple(out)


def _strip_marks(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if unicodedata.category(c) != "Mn")


@lru_cache(maxsize=1 << 15)
def latin_tokens(group: str) -> tuple[str, ...]:
    """The pinyin tokens of a Latin group (:data:`LATIN_GROUP`): each run of ``a``–``z`` of its
    words (tone marks removed) as its syllables when it splits completely, else ``~run``."""
    out: list[str] = []
    for run in _LATIN_RUN.findall(_strip_marks(group)):
        split = _split_latin(run)
        out.extend(split if split is not None else (f"~{run}",))
    return tuple(out)


def syllables(canonical: str) -> list[list[str]]:
    """Runs of pinyin tokens of a canonical text (module docstring); initials-only Latin runs
    are single tokens starting with ``~``."""
    pinyin = default_charmap().pinyin
    runs: list[list[str]] = []
    current: list[str] = []
    position = 0
    for match in [*LATIN_GROUP.finditer(canonical), None]:
        stop = match.start() if match is not None else len(canonical)
        for ch in canonical[position:stop]:
            if ch in pinyin:
                current.append(pinyin[ch])
            elif current:
                runs.append(current)
                current = []
        if match is not None:
            current.extend(latin_tokens(match.group()))
            position = match.end()
    if current:
        runs.append(current)
    return runs


def initial(syllable: str) -> str:
    """The abbreviation letter of a syllable (``shi`` → ``s``); ``~run`` tokens give their letters."""
    if syllable.startswith("~"):
        return syllable[1:]
    return syllable[0]


def glyph_groups(ch: str) -> tuple[int, ...]:
    """Ids of the similar-shape groups ``ch`` belongs to (empty when none)."""
    return default_charmap().glyph.get(ch, ())
