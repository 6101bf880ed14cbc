"""The global gram order of the near-duplicate join, and prefix entries under it, for any subset of texts.

The single-machine join (:mod:`verimod.data.neardup_index`) orders the gram occurrences of every
string by one global rank per gram value, computed from the whole set of distinct strings:

- characters of the *character part* (strings shorter than L_2): by frequency over those
  strings, rarest first, ties by code point (``neardup_tokens._char_ranks`` on them);
- the *character count signature* of every pair: the same over **all** distinct strings;
- bigrams: the pair of character ranks (over all distinct strings) hashed into 2^bits classes —
  bits from the total number of bigrams — ranked by (bit length of the class frequency, class).

These are sums over strings, so they are computed in a distributed pass (each node counts its
length band's distinct strings; the counts are added) and :class:`GlobalRanking` carries the
result to every task. Under it, :func:`prefix_entries` computes for any subset of strings —
given their lengths, in rank order — exactly the long-prefix entries (gram rank, position in the
string's order, text offset) and count signatures that ``build_prefix_index`` computes for the
same strings inside the whole set, because an entry depends only on its string, the global
ranks and the global overlap table (``prefix_lengths`` with the global longest length). That is
what lets :mod:`verimod.distributed.join` cut the join by gram value without changing it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from verimod.data.neardup_bounds import first_guaranteed_total, overlap_table, prefix_lengths, token_counts
from verimod.data.neardup_tokens import (
    _CODE_SPACE,
    BUCKETS,
    PrefixIndex,
    Signatures,
    _BigramClasses,
    _blocks,
    _bucket_counts,
    _count_dtype,
    _Grams,
    _grams,
    _hash_classes,
    _in_global_order,
    _layout,
    coarsen,
    codepoints,
)

IntArray: TypeAlias = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Sparse:
    """Counts of integer keys: ``keys`` ascending, ``counts`` > 0."""

    keys: IntArray
    counts: IntArray

    @classmethod
    def of(cls, values: npt.NDArray[np.integer], space: int | None = None) -> Sparse:
        """The counts of ``values``; ``space`` (all values are below it) counts them with a
        dense bincount instead of sorting."""
        if space is None:
            keys, counts = np.unique(values, return_counts=True)
            return cls(keys.astype(np.int64), counts.astype(np.int64))
        dense = np.bincount(values, minlength=space)
        keys = np.flatnonzero(dense)
        return cls(keys.astype(np.int64), dense[keys].astype(np.int64))

    @classmethod
    def total(cls, parts: Sequence[Sparse]) -> Sparse:
        """The sum of several count tables."""
        if not parts:
            return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        keys = np.concatenate([p.keys for p in parts])
        counts = np.concatenate([p.counts for p in parts])
        unique, inverse = np.unique(keys, return_inverse=True)
        return cls(unique, np.bincount(inverse, weights=counts, minlength=len(unique)).astype(np.int64))


@dataclass(frozen=True)
class JoinShape:
    """The global facts of a join: its threshold, the longest distinct string, L_2 (pairs of
    total length from L_2 on share a preserved bigram), and the number of distinct strings no
    longer than L_2 − 1 (the character part exists when there are two)."""

    threshold: float
    longest: int
    split: int
    short: int
    distinct: int

    @classmethod
    def of(cls, threshold: float, length_counts: npt.NDArray[np.int64]) -> JoinShape:
        """From the number of distinct strings of each length (index = length)."""
        present = np.flatnonzero(length_counts)
        longest = int(present[-1]) if len(present) else 0
        split = first_guaranteed_total(overlap_table(longest, threshold, 2))
        short = int(length_counts[: max(split, 0)].sum())
        return cls(threshold, longest, split, short, int(length_counts.sum()))

    @property
    def char_part(self) -> bool:
        """Whether the join has a character part (``neardup_index._parts``)."""
        return self.short >= 2

    @property
    def bigram_part(self) -> bool:
        return self.split <= 2 * self.longest

    def table(self, q: int) -> IntArray:
        """need*_q(L) for L = 0 … 2·longest (the global overlap table)."""
        return overlap_table(self.longest, self.threshold, q)


def char_ranks(frequency: Sparse) -> IntArray:
    """rank[code point] from character counts: rarest first, ties by code point
    (``neardup_tokens._char_ranks``)."""
    rank = np.zeros(_CODE_SPACE, dtype=np.int64)
    order = np.argsort(frequency.counts, kind="stable")  # keys ascending: ties by code point
    rank[frequency.keys[order]] = np.arange(len(order), dtype=np.int64)
    return rank


def bigram_bits(total_bigrams: int) -> int:
    """The class bits of the bigram hash (``neardup_tokens._bigram_classes``)."""
    return min(max(total_bigrams.bit_length(), 16), 24)


@dataclass(frozen=True)
class GlobalRanking:
    """Everything a task needs to put gram occurrences in the global order: the join's shape,
    the character ranks of the character part (``short_rank``) and of all strings
    (``all_rank``), and the bigram classes (None when there is no bigram part)."""

    shape: JoinShape
    short_rank: IntArray | None
    all_rank: IntArray
    bigrams: _BigramClasses | None

    def classes(self, strings: Sequence[str], lengths: IntArray) -> npt.NDArray[np.int32]:
        """The bigram class of every bigram of ``strings``, in text order."""
        assert self.bigrams is not None
        return _hash_classes(_grams(strings, lengths, self.all_rank, 2).value, self.bigrams.bits)


def band_statistics(strings: Sequence[str], lengths: IntArray, split: int) -> tuple[Sparse, Sparse, int]:
    """For distinct strings: character counts over those shorter than ``split`` and over all,
    and the number of bigrams (inputs of :class:`GlobalRanking`)."""
    short = int(np.searchsorted(lengths, split - 1, side="right"))
    everything = [Sparse.of(codepoints(strings[a:b]), _CODE_SPACE) for a, b in _blocks(lengths)]
    few = [Sparse.of(codepoints(strings[a : min(b, short)]), _CODE_SPACE) for a, b in _blocks(lengths) if a < short]
    return Sparse.total(few), Sparse.total(everything), int(np.maximum(lengths - 1, 0).sum())


def class_counts(strings: Sequence[str], lengths: IntArray, all_rank: IntArray, bits: int) -> Sparse:
    """How often each bigram class occurs among ``strings`` (the second distributed pass)."""
    parts = [
        Sparse.of(_hash_classes(_grams(strings[a:b], lengths[a:b], all_rank, 2).value, bits))
        for a, b in _blocks(lengths)
    ]
    return Sparse.total(parts)


def bigram_classes(bits: int, counts: Sparse) -> _BigramClasses:
    """The classes and their frequency bits from the summed class counts."""
    dense = np.zeros(1 << bits, dtype=np.int64)
    dense[counts.keys] = counts.counts
    return _BigramClasses(bits, np.frexp(dense.astype(np.float64))[1].astype(np.uint8))


@dataclass(frozen=True)
class Entries:
    """Long-prefix entries of a block of strings, in each string's global order (``owner``
    indexes all the strings given), and the block's count-signature rows for the gram size."""

    owner: IntArray
    rank: IntArray
    position: IntArray
    offset: IntArray
    signature: IntArray


def prefix_entries(
    strings: Sequence[str], lengths: IntArray, ranking: GlobalRanking, q: int
) -> Iterator[tuple[int, Entries]]:
    """(first string of the block, its entries) for every block of strings: the long-prefix
    entries of ``build_prefix_index`` under the global ranking. ``lengths`` ascending; q = 1 is
    the character part (strings shorter than L_2 only), q = 2 the bigram part."""
    shape = ranking.shape
    tokens = token_counts(lengths, q)
    p_long = prefix_lengths(lengths, shape.threshold, q, shape.table(q))[1]
    for start, stop in _blocks(lengths):
        block, block_lengths = strings[start:stop], lengths[start:stop]
        if q == 1:
            assert ranking.short_rank is not None
            grams = _grams(block, block_lengths, ranking.short_rank, 1)
            rank = grams.value
        else:
            owner, offset, _ = _layout(block_lengths, 2)
            classes = ranking.classes(block, block_lengths)
            assert ranking.bigrams is not None
            grams, rank = _Grams(owner, classes, offset), ranking.bigrams.rank(classes)
        owner, rank, offset, position = _in_global_order(grams, rank, tokens[start:stop])
        signature = _bucket_counts(owner, rank, stop - start)
        owner += start
        keep = position < p_long[owner]
        yield start, Entries(owner[keep], rank[keep], position[keep], offset[keep], signature)


def bucket_of(rank: IntArray, buckets: int) -> IntArray:
    """The bucket of a gram rank: ``rank mod buckets`` (ranks are dense, so the values of every
    frequency spread over the buckets)."""
    return rank % buckets


def string_buckets(
    strings: Sequence[str], lengths: IntArray, ranking: GlobalRanking, q: int, buckets: int
) -> tuple[IntArray, IntArray]:
    """(string, bucket) for every bucket holding a long-prefix gram of the string, sorted."""
    found = [
        np.unique(entries.owner * buckets + bucket_of(entries.rank, buckets))
        for _, entries in prefix_entries(strings, lengths, ranking, q)
    ]
    pairs = np.concatenate([np.zeros(0, dtype=np.int64), *found])
    return pairs // buckets, pairs % buckets


def bucket_index(
    strings: Sequence[str], lengths: IntArray, ranking: GlobalRanking, q: int, bucket: int, buckets: int
) -> PrefixIndex:
    """The prefix index of ``strings`` (in rank order) restricted to the gram values of one
    bucket, with the part's count signature of every string: ``build_prefix_index`` under the
    global ranking, the entries of other buckets left out."""
    count = len(strings)
    signature = np.zeros((count, BUCKETS), dtype=_count_dtype(lengths))
    owners, ranks, positions, offsets = [], [], [], []
    for start, entries in prefix_entries(strings, lengths, ranking, q):
        signature[start : start + len(entries.signature)] = entries.signature
        mine = bucket_of(entries.rank, buckets) == bucket
        owners.append(entries.owner[mine])
        ranks.append(entries.rank[mine])
        positions.append(entries.position[mine])
        offsets.append(entries.offset[mine])
    empty = np.zeros(0, dtype=np.int64)
    string = np.concatenate([empty, *owners])
    key = np.concatenate([empty, *ranks]) * count + string
    order = np.argsort(key)
    return PrefixIndex(
        n_strings=count,
        key=key[order],
        string=string[order].astype(np.int32),
        position=np.concatenate([empty, *positions])[order].astype(np.int32),
        offset=np.concatenate([empty, *offsets])[order].astype(np.int32),
        signature=signature,
        coarse=coarsen(signature),
    )


def char_signature(strings: Sequence[str], lengths: IntArray, all_rank: IntArray) -> Signatures:
    """The character count signature of every string under the all-strings character ranks
    (``neardup_tokens.char_signatures`` with the global ranks)."""
    signature = np.zeros((len(strings), BUCKETS), dtype=_count_dtype(lengths))
    for start, stop in _blocks(lengths):
        grams = _grams(strings[start:stop], lengths[start:stop], all_rank, 1)
        signature[start:stop] = _bucket_counts(grams.owner, grams.value, stop - start)
    return signature
