"""Integer-keyed n-gram views of canonical texts, computed for a whole batch in numpy.

A *view* reads a canonical text (:func:`~verimod.models.baseline.charmap.canonical_chars`) as a
sequence of tokens — positive integers below ``2**bits``, ``0`` standing for a break — and its
features are the token n-grams (``n`` in ``[n_min, n_max]``) that contain no break, keyed

    ``key = Σ_i t_i · 2**(bits · (n − 1 − i))``

so n-grams of different lengths fall in disjoint key ranges ``[2**(bits·(n−1)), 2**(bits·n))``
(every token is at least 1) and every key fits an ``int64``. The views (:data:`VIEWS`):

- ``chars`` (block ``surface``): the code points of ``\\x02`` + text + ``\\x03`` (the text
  boundaries); the lone boundary characters are not unigrams. Name: the characters.
- ``pinyin`` (block ``robust``): each Han character by the id of its toneless syllable, Latin
  runs that split into pinyin syllables by those syllables' ids, anything else a break
  (:func:`~verimod.models.baseline.charmap.syllables`). Name ``p:sha bi``. ``傻逼`` = ``沙比`` =
  ``sha bi``.
- ``initials`` (block ``robust``): the same, each syllable by its first letter and a Latin run
  that is no pinyin (``nmsl``) by its letters. Name ``i:sb``.
- ``glyph`` (block ``robust``): each Han character in a similar-shape group by that group,
  other Han characters as themselves, anything else a break; bigrams with at least one group.
  A character in several groups is read as each of its first :data:`GLYPH_LAYERS` (by id), so
  a bigram counts once for every combination. Name ``g:#17心``.

Han characters are translated to tokens by :meth:`str.translate` with one table per view;
Latin groups (:data:`~verimod.models.baseline.charmap.LATIN_GROUP`) through
:func:`~verimod.models.baseline.charmap.latin_tokens` — the reading of
:func:`~verimod.models.baseline.charmap.syllables`. :func:`view_names` gives the same features as
strings, one text at a time (the reference the tests hold the batch computation to).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

import numpy as np

from verimod.models.baseline.charmap import LATIN_GROUP, default_charmap, latin_tokens

BOS: Final = "\x02"
EOS: Final = "\x03"
#: Private-use offset the translation tables write tokens at (Supplementary Private Use Area-A).
_PUA: Final = 0xF0000
_GROUP_BASE: Final = 0x10000  # glyph tokens: Han characters are below, groups from here
#: A character in several similar-shape groups is read as each of its first three groups.
GLYPH_LAYERS: Final = 3


@dataclass(frozen=True)
class View:
    """One n-gram view: its name, block, n-gram range, token width and name prefix."""

    name: str
    block: str
    n_min: int
    n_max: int
    bits: int
    prefix: str


def make_views(ngram: tuple[int, int], pinyin: tuple[int, int], initials: tuple[int, int]) -> tuple[View, ...]:
    """The four views with the given n-gram ranges (glyph: bigrams)."""
    return (
        View("chars", "surface", ngram[0], ngram[1], 21, ""),
        View("pinyin", "robust", pinyin[0], pinyin[1], 9, "p:"),
        View("initials", "robust", initials[0], initials[1], 5, "i:"),
        View("glyph", "robust", 2, 2, 17, "g:"),
    )


@dataclass(frozen=True)
class _Tables:
    syllable_ids: dict[str, int]  # syllable -> id (1-based, sorted order)
    syllables: tuple[str, ...]  # id - 1 -> syllable
    pinyin: dict[int, str]  # translate tables
    initials: dict[int, str]
    glyph: tuple[dict[int, str], ...]  # one table per layer (module docstring)


@lru_cache(maxsize=1)
def _tables() -> _Tables:
    charmap = default_charmap()
    names = tuple(sorted(charmap.syllable_set))
    if len(names) >= 2**9:
        raise ValueError("too many pinyin syllables for the pinyin view")
    ids = {s: k + 1 for k, s in enumerate(names)}
    pinyin = {ord(ch): chr(_PUA + ids[s]) for ch, s in charmap.pinyin.items() if len(ch) == 1}
    initials = {ord(ch): chr(_PUA + _letter(s[0])) for ch, s in charmap.pinyin.items() if len(ch) == 1}
    glyph = tuple(
        {ord(ch): chr(_PUA + _GROUP_BASE + sorted(g)[min(k, len(g) - 1)] + 1) for ch, g in charmap.glyph.items()}
        for k in range(GLYPH_LAYERS)
    )
    return _Tables(ids, names, pinyin, initials, glyph)


def _letter(ch: str) -> int:
    return ord(ch) - 96 if "a" <= ch <= "z" else 0


@lru_cache(maxsize=1 << 16)
def _group_string(group: str, view: str) -> str:
    """The token string of one Latin group (:data:`~verimod.models.baseline.charmap.LATIN_GROUP`)."""
    ids = _tables().syllable_ids
    out: list[str] = []
    for token in latin_tokens(group):
        if view == "pinyin":
            out.append(chr(_PUA + ids[token]) if token in ids else "\x00")
        else:
            letters = token[1:] if token.startswith("~") else token[0]
            out.extend(chr(_PUA + _letter(c)) if _letter(c) else "\x00" for c in letters)
    return "".join(out)


def _latin_string(canonical: str, table: dict[int, str], view: str) -> str:
    """The token string of the pinyin or initials view of a text with Latin letters."""
    out: list[str] = []
    position = 0
    for match in LATIN_GROUP.finditer(canonical):
        out.append(canonical[position : match.start()].translate(table))
        out.append(_group_string(match.group(), view))
        position = match.end()
    out.append(canonical[position:].translate(table))
    return "".join(out)


def view_string(view: View, canonical: str, layer: int = 0) -> str:
    """One canonical text in ``view``, one character per token: the character itself (``chars``;
    a Han character of ``glyph``) or a private-use character holding the token; any other
    character is a break. ``layer``: which of a character's similar-shape groups (``glyph``)."""
    if view.name == "chars":
        return f"{BOS}{canonical}{EOS}"
    tables = _tables()
    if view.name == "glyph":
        return canonical.translate(tables.glyph[layer])
    table = tables.pinyin if view.name == "pinyin" else tables.initials
    if LATIN_GROUP.search(canonical):
        return _latin_string(canonical, table, view.name)
    return canonical.translate(table)


def _tokens(view: View, codes: np.ndarray) -> np.ndarray:
    if view.name == "chars":
        return codes
    tokens = np.where(codes >= _PUA, codes - _PUA, 0)
    if view.name == "glyph":
        han = ((codes >= 0x4E00) & (codes <= 0x9FFF)) | ((codes >= 0x3400) & (codes <= 0x4DBF))
        han |= ((codes >= 0xF900) & (codes <= 0xFAFF)) | (codes == 0x3007)
        tokens = np.where(han, codes, tokens)
    return np.where(tokens < (1 << view.bits), tokens, 0)


def _codes(strings: Sequence[str], pad: int) -> np.ndarray:
    joined = "\x00".join(strings) + "\x00" * pad
    return np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)


def batch_keys(view: View, canonicals: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, keys)``: every feature occurrence of ``view`` in each text (repeats kept; a
    ``glyph`` bigram counts once per position whatever the groups' layers)."""
    strings = [view_string(view, text) for text in canonicals]
    lengths = np.fromiter((len(s) + 1 for s in strings), dtype=np.int64, count=len(strings))
    size = int(lengths.sum())
    row_of = np.repeat(np.arange(len(strings), dtype=np.int64), lengths)
    if view.name == "glyph":
        layers = [_tokens(view, _codes(strings, 2))]
        layers += [
            _tokens(view, _codes([view_string(view, t, k) for t in canonicals], 2)) for k in range(1, GLYPH_LAYERS)
        ]
        positions, keys = [], []
        for first in layers:
            for second in layers:
                a, b = first[:size], second[1 : size + 1]
                ok = (a > 0) & (b > 0) & ((a >= _GROUP_BASE) | (b >= _GROUP_BASE))
                positions.append(np.flatnonzero(ok))
                keys.append((a[ok] << view.bits) | b[ok])
        pos, key = np.concatenate(positions), np.concatenate(keys)
        order = np.lexsort((key, pos))
        pos, key = pos[order], key[order]
        first_seen = np.ones(pos.size, dtype=bool)
        first_seen[1:] = (pos[1:] != pos[:-1]) | (key[1:] != key[:-1])
        return row_of[pos[first_seen]], key[first_seen]
    tokens = _tokens(view, _codes(strings, view.n_max))
    rows_out, keys_out = [], []
    for n in range(view.n_min, view.n_max + 1):
        key = np.zeros(size, dtype=np.int64)
        ok = np.ones(size, dtype=bool)
        for i in range(n):
            t = tokens[i : i + size]
            ok &= t > 0
            key = (key << view.bits) | t
        if view.name == "chars" and n == 1:
            ok &= (key != ord(BOS)) & (key != ord(EOS))
        rows_out.append(row_of[ok])
        keys_out.append(key[ok])
    return np.concatenate(rows_out), np.concatenate(keys_out)


def key_name(view: View, key: int) -> str:
    """The feature string of a key (module docstring)."""
    mask = (1 << view.bits) - 1
    tokens: list[int] = []
    while key:
        tokens.append(key & mask)
        key >>= view.bits
    tokens.reverse()
    if view.name == "chars":
        return "".join(map(chr, tokens))
    if view.name == "pinyin":
        return "p:" + " ".join(_tables().syllables[t - 1] for t in tokens)
    if view.name == "initials":
        return "i:" + "".join(chr(96 + t) for t in tokens)
    return "g:" + "".join(f"#{t - _GROUP_BASE - 1}" if t >= _GROUP_BASE else chr(t) for t in tokens)


def view_names(view: View, canonical: str) -> list[str]:
    """The features of one text in ``view`` as strings (the reference of :func:`batch_keys`)."""
    _, keys = batch_keys(view, [canonical])
    return [key_name(view, int(k)) for k in keys.tolist()]


__all__ = ["View", "batch_keys", "key_name", "make_views", "view_names", "view_string"]
