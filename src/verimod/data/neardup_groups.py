"""Exact-duplicate groups of the near-duplicate join (private helper of :mod:`.neardup`).

Identical strings are collapsed first: the join runs over distinct strings only, ranked by
(length, first occurrence), and each pair of distinct strings (u, v) found with score s
stands for every pair of their copies, all with score s; two copies of one string are a pair
with score 100 (RapidFuzz gives ``fuzz.ratio(x, x) == 100``, also for ``x == ""``). Expanding
is vectorised, so thousands of copies cost only the size of the output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Groups:
    """Distinct strings and who holds them.

    ``strings[r]`` is the distinct string of rank r (ranks sorted by (length, first occurrence)),
    ``lengths[r]`` its length, ``rank[i]`` the rank of input text i.
    """

    strings: list[str]
    lengths: IntArray
    rank: IntArray


@dataclass(frozen=True)
class Members:
    """CSR lists of input indices per rank: ``index[start[r]:start[r + 1]]``, ascending."""

    index: IntArray
    start: IntArray

    @property
    def size(self) -> IntArray:
        """The number of members of each rank."""
        return np.diff(self.start)


def group_identical(texts: Sequence[str]) -> Groups:
    """Collapse identical texts; rank the distinct ones by (length, first occurrence)."""
    first: dict[str, int] = {}
    ids = np.fromiter((first.setdefault(text, len(first)) for text in texts), dtype=np.int64, count=len(texts))
    distinct = list(first)
    lengths = np.fromiter(map(len, distinct), dtype=np.int64, count=len(distinct))
    order = np.argsort(lengths, kind="stable")
    rank_of_id = np.empty(len(distinct), dtype=np.int64)
    rank_of_id[order] = np.arange(len(distinct), dtype=np.int64)
    return Groups(strings=[distinct[k] for k in order.tolist()], lengths=lengths[order], rank=rank_of_id[ids])


def members(rank: IntArray, n_ranks: int, offset: int = 0) -> Members:
    """Which inputs (numbered from ``offset``) hold each rank; ``rank`` lists one rank per input."""
    order = np.argsort(rank, kind="stable")
    start = np.concatenate(([0], np.cumsum(np.bincount(rank, minlength=n_ranks)))).astype(np.int64)
    return Members(index=order.astype(np.int64) + offset, start=start)


def expand(
    u: IntArray, v: IntArray, score: FloatArray, left: Members, right: Members
) -> tuple[IntArray, IntArray, FloatArray]:
    """Every (i, j, s): i a member of ``u[k]`` in ``left``, j a member of ``v[k]`` in ``right``,
    s = ``score[k]``. Returns the arrays (i, j, s), grouped by k."""
    size_u, size_v = left.size[u], right.size[v]
    block = size_u * size_v
    pair = np.repeat(np.arange(len(u), dtype=np.int64), block)
    local = np.arange(int(block.sum()), dtype=np.int64) - np.repeat(np.cumsum(block) - block, block)
    width = size_v[pair]
    i = left.index[left.start[u][pair] + local // width]
    j = right.index[right.start[v][pair] + local % width]
    return i, j, score[pair]


def sort_pairs(i: IntArray, j: IntArray, score: FloatArray, width: int) -> list[tuple[int, int, float]]:
    """Pairs as Python tuples sorted by (i, j); ``width`` exceeds every j."""
    order = np.argsort(i * width + j, kind="stable")
    return list(zip(i[order].tolist(), j[order].tolist(), score[order].tolist(), strict=True))
