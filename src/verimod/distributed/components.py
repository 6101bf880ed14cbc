"""Merging the distributed join: each pair once, the components of the texts, the texts to drop,
and the pairs of texts — what :func:`verimod.data.neardup.deduplicate` computes on one machine.

Inputs are integers only (global ranks of distinct strings, global text indices), never texts:
the bands' copies (:class:`~verimod.distributed.join.BandIndex`) and the buckets' pairs of
ranks. One task merges them; it holds, per distinct string, its copies (one integer per text)
and, per pair of distinct strings, two ranks and a score — not the corpus.

Exactness, as on one machine (``neardup._self_join`` and ``neardup._components``):

- the pairs of distinct strings are the union of the buckets' pairs with repeats removed
  (:mod:`.join` proves the union is the single-machine set);
- the pairs of texts are, for each pair of distinct strings (u, v) with score s, every copy of u
  with every copy of v (score s), and every two copies of one string (score 100);
- the components of texts (single linkage over those pairs) are the components of the graph of
  distinct strings with each string replaced by its copies: copies of one string are all linked,
  so a component of texts is exactly the union of the copies of one component of strings.
  Components with at least two texts are listed with their members ascending, ordered by
  smallest member — :func:`verimod.data.neardup.components`' order;
- the kept text of a component is its first text (rule ``first``) or its longest, ties to the
  first (``longest``): :func:`verimod.data.neardup.keep_decisions`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from verimod.data.neardup_groups import Members, expand
from verimod.data.neardup_index import FloatArray, IntArray
from verimod.distributed.join import BandIndex, RankPairs


@dataclass(frozen=True)
class TextComponents:
    """Components of texts with at least two members: ``index[start[c]:start[c + 1]]`` is
    component c, ascending, components ordered by smallest member."""

    index: IntArray
    start: IntArray

    def lists(self) -> list[list[int]]:
        """As :func:`verimod.data.neardup.components` returns them."""
        flat = self.index.tolist()
        bounds = self.start.tolist()
        return [flat[a:b] for a, b in itertools.pairwise(bounds)]

    @property
    def count(self) -> int:
        return len(self.start) - 1


@dataclass(frozen=True)
class MergeSummary:
    """Counts of the merged join: pairs of texts, components (≥ 2 texts), texts dropped."""

    pairs: int
    components: int
    dropped: int


def copies(bands: Sequence[BandIndex]) -> tuple[Members, IntArray]:
    """Every distinct string's copies by global rank (CSR over all bands), and each rank's length."""
    index = np.concatenate([np.zeros(0, dtype=np.int64), *(b.member_index for b in bands)])
    starts, base = [np.zeros(1, dtype=np.int64)], 0
    for band in bands:
        starts.append(band.member_start[1:] + base)
        base += int(band.member_start[-1])
    lengths = np.concatenate([np.zeros(0, dtype=np.int64), *(b.lengths for b in bands)])
    return Members(index=index, start=np.concatenate(starts)), lengths


def unique_pairs(found: Sequence[RankPairs], distinct: int) -> RankPairs:
    """The pairs of distinct strings, each once, sorted by (a, b)."""
    a = np.concatenate([np.zeros(0, dtype=np.int64), *(f[0] for f in found)])
    b = np.concatenate([np.zeros(0, dtype=np.int64), *(f[1] for f in found)])
    score = np.concatenate([np.zeros(0, dtype=np.float64), *(f[2] for f in found)])
    _, once = np.unique(a * max(distinct, 1) + b, return_index=True)
    return a[once], b[once], score[once]


def text_components(held: Members, pairs: RankPairs, texts: int) -> TextComponents:
    """The components of texts (module docstring)."""
    distinct = len(held.start) - 1
    a, b, _ = pairs
    graph = coo_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(distinct, distinct)).tocsr()
    _, label = connected_components(graph, directed=False)
    text_label = np.empty(texts, dtype=np.int64)
    text_label[held.index] = np.repeat(label.astype(np.int64), held.size)
    size = np.bincount(text_label, minlength=distinct)
    chosen = np.flatnonzero(size[text_label] >= 2)  # texts of multi-member components, ascending
    order = np.argsort(text_label[chosen], kind="stable")
    grouped = chosen[order]
    labels = text_label[grouped]
    starts = np.flatnonzero(np.append(True, labels[1:] != labels[:-1])) if len(labels) else np.zeros(0, np.int64)
    bounds = np.append(starts, len(grouped)).astype(np.int64)
    by_smallest = np.argsort(grouped[starts], kind="stable")  # components by their smallest member
    sizes = np.diff(bounds)[by_smallest]
    pieces = [grouped[bounds[c] : bounds[c + 1]] for c in by_smallest.tolist()]
    index = np.concatenate([np.zeros(0, dtype=np.int64), *pieces])
    return TextComponents(index, np.concatenate(([0], np.cumsum(sizes))).astype(np.int64))


def dropped_texts(found: TextComponents, text_lengths: IntArray, rule: str) -> IntArray:
    """The texts a dedup drops, ascending: every member of a component but its kept one."""
    keep = []
    for a, b in zip(found.start[:-1].tolist(), found.start[1:].tolist(), strict=True):
        members = found.index[a:b]
        if rule == "longest":
            lengths = text_lengths[members]
            keep.append(int(members[np.flatnonzero(lengths == lengths.max())[0]]))
        else:
            keep.append(int(members[0]))
    dropped = np.setdiff1d(found.index, np.array(keep, dtype=np.int64), assume_unique=True)
    return np.sort(dropped)


def text_pairs(held: Members, pairs: RankPairs) -> tuple[IntArray, IntArray, FloatArray]:
    """Every pair of texts (i < j, score), unsorted (``neardup._self_join``)."""
    ranks = np.flatnonzero(held.size > 1)
    i1, j1, s1 = expand(ranks, ranks, np.full(len(ranks), 100.0), held, held)
    i2, j2, s2 = expand(pairs[0], pairs[1], pairs[2], held, held)
    i = np.concatenate((i1, np.minimum(i2, j2)))
    j = np.concatenate((j1, np.maximum(i2, j2)))
    score = np.concatenate((s1, s2))
    keep = i < j
    return i[keep], j[keep], score[keep]


def pair_count(held: Members, pairs: RankPairs) -> int:
    """The number of pairs of texts, without listing them."""
    size = held.size.astype(np.int64)
    return int((size * (size - 1) // 2).sum() + (size[pairs[0]] * size[pairs[1]]).sum())


def by_shard(values: IntArray, offsets: Sequence[int]) -> IntArray:
    """The shard of each text index (shard k holds indices from offsets[k] on)."""
    return np.searchsorted(np.asarray(offsets, dtype=np.int64), values, side="right") - 1


def split_by_shard(columns: Sequence[Any], key: IntArray, offsets: Sequence[int]) -> list[tuple[Any, ...]]:
    """``columns`` (arrays aligned with ``key``) cut into one tuple per shard of ``key``, each in
    its original order."""
    shard = by_shard(key, offsets)
    order = np.argsort(shard, kind="stable")
    bounds = np.searchsorted(shard[order], np.arange(len(offsets) + 1))
    return [tuple(column[order[bounds[k] : bounds[k + 1]]] for column in columns) for k in range(len(offsets))]
