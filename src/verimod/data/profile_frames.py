"""Repeated sentence frames: the character n-grams of text skeletons that many texts share.

Method (the definition every number of ``verimod data profile`` under "frames" follows):

1. Each text becomes its *skeleton* (:func:`verimod.data.profile_text.skeleton`): NFKC,
   case-folded, emoji and emoticon codes removed, its own reference target → ``Ⓣ``, digit runs →
   ``Ⓝ``, Latin-letter runs → ``Ⓛ``, whitespace removed. Content words are not masked (Chinese
   has no spaces to find them by): frames are literal characters around the masked slots, so a
   template such as "[target]就是…" shows up as ``Ⓣ就是``.
2. The *document frequency* df(g) of a character n-gram g (``min_n`` ≤ |g| ≤ ``max_n``, default
   3–6) is the number of skeletons containing g at least once.
3. A *frame* is an n-gram with df ≥ ``min_texts`` (default 2: repeated across texts) that holds
   at least one Han character and is *closed*: no n-gram one character longer that contains it
   has the same df (so "Ⓣ就是" and "Ⓣ就是个" are both listed only when the longer one does not
   cover every text of the shorter). Counting is exact; longer n-grams are counted only where both
   their (n−1)-gram prefix and suffix are repeated (a-priori pruning loses nothing: an n-gram's
   df is at most that of its parts). The counting is vectorised (numpy): n-grams get integer ids
   level by level, an (n+1)-gram being the pair (id of its n-gram prefix, its last character).
4. Frames are ranked by df (descending), then length (longer first), then code points.

:func:`frame_share` gives the share of another collection's skeletons containing a frame, so
frames can be compared side by side across files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from verimod.data.profile_text import has_han

IntArray = npt.NDArray[np.int64]
_CHAR_BITS = 21  # every code point is below 2**21


@dataclass(frozen=True)
class Frame:
    """One repeated frame: the n-gram and the number of texts (skeletons) containing it."""

    frame: str
    texts: int


def _check(min_n: int, max_n: int, min_texts: int) -> None:
    if not 1 <= min_n <= max_n:
        raise ValueError(f"need 1 ≤ min_n ≤ max_n, got {min_n}, {max_n}")
    if min_texts < 1:
        raise ValueError(f"min_texts must be at least 1, got {min_texts}")


def _distinct(values: IntArray) -> IntArray:
    """The distinct values, ascending (a sort: ``np.unique`` is several times slower on numpy 2.4)."""
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered


def _dense_ids(keys: IntArray) -> IntArray:
    """0, 1, … numbering the distinct ``keys`` in ascending order, one per key (``np.unique``'s inverse)."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    new = np.empty(len(keys), dtype=bool)
    new[:1] = True
    new[1:] = ordered[1:] != ordered[:-1]
    ids = np.empty(len(keys), dtype=np.int64)
    ids[order] = np.cumsum(new) - 1
    return ids


@dataclass(frozen=True)
class _Level:
    """The n-grams of one length at the positions considered: ``ids[k]`` is the id of the n-gram
    starting at ``positions[k]`` (a position of the joined skeletons), ``df[id]`` its df."""

    n: int
    positions: IntArray
    ids: IntArray
    df: IntArray


class _Corpus:
    """The skeletons joined into one array of code points, with each position's skeleton."""

    def __init__(self, skeletons: Sequence[str]) -> None:
        self.joined = "".join(skeletons)
        data = self.joined.encode("utf-32-le", "surrogatepass")
        self.codes: IntArray = np.frombuffer(data, dtype=np.uint32).astype(np.int64)
        lengths = np.fromiter((len(s) for s in skeletons), dtype=np.int64, count=len(skeletons))
        self.text: IntArray = np.repeat(np.arange(len(skeletons), dtype=np.int64), lengths)
        ends = np.cumsum(lengths)
        self.room: IntArray = ends[self.text] - np.arange(len(self.codes), dtype=np.int64)  # chars left in its text

    def _level(self, n: int, positions: IntArray, keys: IntArray) -> _Level:
        """Dense ids of ``keys`` and the df of each id (distinct skeletons holding it)."""
        if not len(positions):
            empty = np.zeros(0, dtype=np.int64)
            return _Level(n, empty, empty, empty)
        ids = _dense_ids(keys)
        count = int(ids.max()) + 1
        pairs = _distinct(self.text[positions] * count + ids)
        return _Level(n, positions, ids, np.bincount(pairs % count, minlength=count).astype(np.int64))

    def first_level(self, n: int) -> _Level:
        """Every ``n``-gram that fits in its skeleton. Up to three code points make one 63-bit
        key directly; longer n-grams pair the dense id of their prefix with their last character."""
        direct = min(n, 3)
        positions = np.flatnonzero(self.room >= direct)
        keys = np.zeros(len(positions), dtype=np.int64)
        for j in range(direct):
            keys = (keys << _CHAR_BITS) | self.codes[positions + j]
        for k in range(direct, n):
            ids = np.full(len(self.codes), -1, dtype=np.int64)
            ids[positions] = _dense_ids(keys)
            positions = np.flatnonzero(self.room > k)
            keys = (ids[positions] << _CHAR_BITS) | self.codes[positions + k]
        return self._level(n, positions, keys)

    def extend(self, level: _Level, min_texts: int) -> _Level:
        """The (n+1)-grams at the positions where the n-grams at p and p + 1 reach ``min_texts``."""
        keep = level.df[level.ids] >= min_texts
        alive = np.zeros(len(self.codes) + 1, dtype=bool)
        alive[level.positions[keep]] = True
        ids = np.full(len(self.codes), -1, dtype=np.int64)
        ids[level.positions] = level.ids
        positions = np.flatnonzero(alive[:-1] & alive[1:])
        positions = positions[self.room[positions] > level.n]
        keys = (ids[positions] << _CHAR_BITS) | self.codes[positions + level.n]
        return self._level(level.n + 1, positions, keys)

    def strings(self, level: _Level, min_texts: int) -> dict[str, int]:
        """The n-grams of ``level`` in at least ``min_texts`` skeletons, with their df."""
        first = np.full(len(level.df), -1, dtype=np.int64)
        first[level.ids[::-1]] = level.positions[::-1]  # the first occurrence of each id
        wanted = np.flatnonzero(level.df >= min_texts)
        n = level.n
        return {
            self.joined[p : p + n]: int(d)
            for p, d in zip(first[wanted].tolist(), level.df[wanted].tolist(), strict=True)
        }


def _mine(corpus: _Corpus, first: _Level, max_n: int, min_texts: int) -> dict[str, int]:
    """df of every n-gram (first.n ≤ n ≤ ``max_n``) in at least ``min_texts`` skeletons."""
    frequent = corpus.strings(first, min_texts)
    level = first
    for _ in range(first.n, max_n):
        level = corpus.extend(level, min_texts)
        found = corpus.strings(level, min_texts)
        if not found:
            break
        frequent.update(found)
    return frequent


def document_frequencies(
    skeletons: Sequence[str], min_n: int = 3, max_n: int = 6, min_texts: int = 2
) -> dict[str, int]:
    """df of every n-gram (``min_n`` ≤ n ≤ ``max_n``) found in at least ``min_texts`` skeletons
    (the a-priori counting of the module docstring)."""
    _check(min_n, max_n, min_texts)
    corpus = _Corpus(skeletons)
    return _mine(corpus, corpus.first_level(min_n), max_n, min_texts)


def _closed(frequent: dict[str, int], min_n: int, containing: str | None) -> list[str]:
    """The closed n-grams of ``frequent`` holding a Han character (and ``containing``), ranked."""
    closed = set(frequent)
    for gram, count in frequent.items():
        if len(gram) > min_n:
            for part in (gram[:-1], gram[1:]):
                if frequent.get(part) == count:
                    closed.discard(part)
    wanted = (g for g in closed if has_han(g) and (containing is None or containing in g))
    return sorted(wanted, key=lambda g: (-frequent[g], -len(g), g))


def repeated_frames(
    skeletons: Sequence[str],
    top: int = 10,
    min_n: int = 3,
    max_n: int = 6,
    min_texts: int = 2,
    containing: str | None = None,
) -> list[Frame]:
    """The ``top`` closed frames holding a Han character (and ``containing``, when given, e.g.
    the target slot ``Ⓣ``), ranked as in the module docstring.

    Exact, and fast on large inputs: the n-grams in at least τ texts are mined first, τ starting
    at the df of the ``top``-th most frequent shortest n-gram; whether such an n-gram is closed
    depends only on longer ones with the same df (≥ τ), so when at least ``top`` closed frames
    reach τ they are the answer (frames below τ rank lower); otherwise τ is halved, down to
    ``min_texts``.
    """
    _check(min_n, max_n, min_texts)
    if top <= 0:
        return []
    corpus = _Corpus(skeletons)
    first = corpus.first_level(min_n)
    dfs = np.sort(first.df)[::-1]
    floor = max(min_texts, int(dfs[top - 1]) if len(dfs) >= top else min_texts)
    while True:
        frequent = _mine(corpus, first, max_n, floor)
        ranked = _closed(frequent, min_n, containing)
        if len(ranked) >= top or floor == min_texts:
            return [Frame(g, frequent[g]) for g in ranked[:top]]
        floor = max(min_texts, floor // 2)


def frame_share(frame: str, skeletons: Sequence[str]) -> tuple[int, int]:
    """``(texts containing frame, texts)`` over ``skeletons``."""
    return sum(1 for s in skeletons if frame in s), len(skeletons)
