"""The exact near-duplicate join on a Ray cluster: the pairs and scores of
:func:`verimod.data.neardup.near_duplicate_pairs`, cut into tasks by length band and gram bucket.

Pipeline (texts arrive in shards, each knowing the global index of its first text):

1. **Lengths.** Each shard counts its text lengths; the driver cuts the lengths into contiguous
   bands of at most ``band_texts`` texts (one length is never cut).
2. **Distinct strings.** Each shard sends every text, with its global index, to its band. A band
   task collapses identical texts — identical texts have equal lengths, so all copies meet in one
   band — and ranks its distinct strings by (length, first occurrence); bands are ordered by
   length, so band offset + local rank is the rank of the single-machine join
   (``neardup_groups.group_identical``). It keeps each rank's copies (global indices).
3. **Global ranking** (:mod:`.ranking`). Bands count characters (over strings shorter than L_2
   and over all) and bigrams; one task sums them into the character ranks; a second pass counts
   bigram classes, summed into their frequency bits. The global state of the single-machine
   prefix order is these sums — computed in a distributed pass, never from the whole corpus on
   one node.
4. **Routing.** Each band computes its strings' long-prefix entries under the global ranking and
   sends every string (global rank and text) to each bucket ``rank(g) mod P_q`` of a gram value g
   in its long prefix, for each part q: characters (strings shorter than L_2) when the
   character part exists, bigrams (all strings) when the bigram part exists.
5. **Bucket joins.** The task of bucket (q, p) indexes the prefix entries of its gram values
   only and runs the single-machine part join over its strings
   (:func:`verimod.data.neardup_index.join_part`: scan, count filters, RapidFuzz).
6. **Union.** The accepted pairs of all buckets, each pair once (:mod:`.components`).

**Why the union is exactly the single-machine pair set, each score RapidFuzz's own.**

(a) Soundness. A bucket accepts a pair only when RapidFuzz's cutoff test accepts it
    (``process.cpdist`` with ``score_cutoff``, the two strings in rank order, as on one machine),
    and reports RapidFuzz's score: every pair reported is a single-machine pair, same score.
(b) Completeness. On one machine a candidate pair of part q comes from a probe entry
    e = (string a, gram value g, position i, offset s) and an entry of the same value g in a
    later string b within e's reach, kept when it passes Lemma 5's tests — tests on the two
    entries, the two lengths and the global overlap table only — and every qualifying pair is a
    candidate (:mod:`verimod.data.neardup_bounds`, Lemma 5 and its corollary). Every string with
    an entry of value g in its long prefix was routed to bucket (q, rank(g) mod P_q) (step 4), so
    that bucket holds a and all of e's partners. Inside it, entries are those of the global index
    (:mod:`.ranking`: the same ranks, positions and offsets) restricted to the bucket's values,
    and the scan from e visits the entries of g in later strings up to the last string of length
    ≤ its reach — among the bucket's strings, which include every string holding g. So the
    bucket's candidates from e are exactly the single-machine candidates from e, and the count
    filters, functions of the pair alone (signatures under the global ranks, global tables),
    decide them alike. Every single-machine candidate that survives the filters is verified in
    the bucket of its gram, so every qualifying pair is accepted in at least one bucket.
(c) So the union of the accepted pairs, duplicates removed (a pair whose strings share prefix
    values of several buckets is found in each), is the single-machine set of pairs of distinct
    strings with their scores; copies are expanded as on one machine (:mod:`.components`).

As each probe entry belongs to exactly one bucket, the candidate multiset is the single-machine
one cut into disjoint pieces: the ``candidates`` count equals the single-machine count.
``compared`` does not: a pair is compared once in each bucket that generates it.

Below t = 1e-6 no filter applies and every pair of distinct strings is compared, in tasks of
two bands each (``process.cdist``), as ``neardup_index.all_pairs`` does on one machine.

Costs: a band task holds its texts; a bucket task holds its strings, their prefix entries and
count signatures. Each distinct string travels to as many buckets as its long prefix has
distinct bucket values (the *replication*, reported in :class:`JoinOutput`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
from rapidfuzz import fuzz, process

from verimod.data.neardup_bounds import MIN_FILTER_THRESHOLD, check_threshold, max_indel
from verimod.data.neardup_index import FloatArray, IntArray, Part, join_part
from verimod.distributed.cluster import cluster_cpus, fetch, returns, submit, submit_parts
from verimod.distributed.ranking import (
    GlobalRanking,
    JoinShape,
    Sparse,
    band_statistics,
    bigram_bits,
    bigram_classes,
    bucket_index,
    char_ranks,
    char_signature,
    class_counts,
    string_buckets,
)

#: (a, b, score): pairs of distinct strings by global rank, a < b.
RankPairs: TypeAlias = tuple[IntArray, IntArray, FloatArray]
Ref: TypeAlias = Any

#: The most buckets per part.
MAX_BUCKETS = 4096


@dataclass(frozen=True)
class JoinSettings:
    """How the join is cut: ``band_texts`` texts per length band at most (a length is never
    cut), ``bucket_strings`` string copies per bucket task aimed at, ``buckets`` per part (None:
    from the corpus and the cluster), ``workers`` RapidFuzz threads (and CPUs) per bucket task."""

    threshold: float
    band_texts: int = 1 << 20
    bucket_strings: int = 1 << 20
    buckets: int | None = None
    workers: int = 1


@dataclass(frozen=True)
class BandIndex:
    """The integers of one band: per local rank its ``lengths`` and ``first`` occurrence (global
    text index), and its copies: ``member_index[member_start[r]:member_start[r + 1]]``."""

    lengths: IntArray
    first: IntArray
    member_index: IntArray
    member_start: IntArray


@dataclass(frozen=True)
class BandStats:
    """What a band tells the driver: distinct strings per length, character counts (short
    strings, all strings) and its number of bigrams."""

    length_counts: IntArray
    short_chars: Sparse
    all_chars: Sparse
    bigrams: int


@dataclass
class JoinOutput:
    """The distributed join: ``pairs`` holds ObjectRefs of :data:`RankPairs` (a pair may occur
    in several), the bands' strings and integers by reference, and the counts."""

    shape: JoinShape
    texts: int
    rank_offsets: list[int]
    band_strings: list[Ref]
    band_index: list[Ref]
    pairs: list[Ref] = field(default_factory=list)
    candidates: int = 0
    compared: int = 0
    buckets: tuple[int, int] = (0, 0)
    routed: int = 0

    @property
    def replication(self) -> float:
        """String copies sent to bucket tasks per distinct string."""
        return self.routed / self.shape.distinct if self.shape.distinct else 0.0


# ---------------------------------------------------------------------------------------------
# Tasks (module-level functions: Ray ships them by reference)


def text_lengths(texts: Sequence[str]) -> IntArray:
    """The histogram of the texts' lengths (index = length in code points)."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return np.bincount(lengths, minlength=1)


def _route_lengths(texts: Sequence[str], start: int, band_of_length: IntArray) -> Any:
    """Step 2, send: (global indices, texts) for each band, indices ascending."""
    bands = int(band_of_length.max()) + 1
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    band = band_of_length[lengths]
    order = np.argsort(band, kind="stable")
    bounds = np.searchsorted(band[order], np.arange(bands + 1))
    parts = []
    for b in range(bands):
        chosen = order[bounds[b] : bounds[b + 1]]
        parts.append((chosen + start, [texts[i] for i in chosen.tolist()]))
    return returns(parts)


def _distinct_band(split: int, *pieces: tuple[IntArray, list[str]]) -> tuple[list[str], BandIndex, BandStats]:
    """Step 2, receive: the band's distinct strings in rank order, its integers, its statistics."""
    indices = np.concatenate([np.zeros(0, dtype=np.int64), *(piece[0] for piece in pieces)])
    texts = list(itertools.chain.from_iterable(piece[1] for piece in pieces))
    seen: dict[str, int] = {}
    ids = np.fromiter((seen.setdefault(text, len(seen)) for text in texts), dtype=np.int64, count=len(texts))
    distinct = list(seen)
    del seen, texts
    lengths = np.fromiter(map(len, distinct), dtype=np.int64, count=len(distinct))
    order = np.argsort(lengths, kind="stable")  # by (length, first occurrence)
    rank_of_id = np.empty(len(distinct), dtype=np.int64)
    rank_of_id[order] = np.arange(len(distinct), dtype=np.int64)
    strings = [distinct[k] for k in order.tolist()]
    lengths = lengths[order]
    rank = rank_of_id[ids]
    by_rank = np.argsort(rank, kind="stable")  # copies of a rank in index order
    start = np.concatenate(([0], np.cumsum(np.bincount(rank, minlength=len(strings))))).astype(np.int64)
    member_index = indices[by_rank]
    index = BandIndex(lengths, member_index[start[:-1]], member_index, start)
    short_chars, all_chars, bigrams = band_statistics(strings, lengths, split)
    return strings, index, BandStats(np.bincount(lengths, minlength=1), short_chars, all_chars, bigrams)


def _char_ranking(shape: JoinShape, *stats: BandStats) -> GlobalRanking:
    """Step 3: the character ranks (bigram classes still to come)."""
    short = char_ranks(Sparse.total([s.short_chars for s in stats])) if shape.char_part else None
    return GlobalRanking(shape, short, char_ranks(Sparse.total([s.all_chars for s in stats])), None)


def _band_classes(strings: list[str], index: BandIndex, partial: GlobalRanking, bits: int) -> Sparse:
    return class_counts(strings, index.lengths, partial.all_rank, bits)


def _full_ranking(partial: GlobalRanking, bits: int, *counts: Sparse) -> GlobalRanking:
    return GlobalRanking(
        partial.shape, partial.short_rank, partial.all_rank, bigram_classes(bits, Sparse.total(counts))
    )


def _route_buckets(
    strings: list[str], index: BandIndex, rank_offset: int, ranking: GlobalRanking, p1: int, p2: int
) -> Any:
    """Step 4: (global ranks, strings) for each bucket of each part, ranks ascending; the
    character part's buckets first."""
    shape, parts = ranking.shape, []
    for q, buckets in ((1, p1), (2, p2)):
        if not buckets:
            continue
        count = int(np.searchsorted(index.lengths, shape.split - 1, side="right")) if q == 1 else len(strings)
        string, bucket = string_buckets(strings[:count], index.lengths[:count], ranking, q, buckets)
        order = np.argsort(bucket, kind="stable")
        bounds = np.searchsorted(bucket[order], np.arange(buckets + 1))
        for p in range(buckets):
            chosen = string[order[bounds[p] : bounds[p + 1]]]
            parts.append((chosen + rank_offset, [strings[i] for i in chosen.tolist()]))
    return returns(parts)


def _bucket_join(
    ranking: GlobalRanking, q: int, bucket: int, buckets: int, workers: int, *pieces: tuple[IntArray, list[str]]
) -> tuple[RankPairs, tuple[int, int, int]]:
    """Step 5: the pairs the bucket's strings form through its gram values (global ranks), and
    (candidates, compared, strings)."""
    ranks = np.concatenate([np.zeros(0, dtype=np.int64), *(piece[0] for piece in pieces)])
    strings = list(itertools.chain.from_iterable(piece[1] for piece in pieces))
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
    if len(strings) < 2:
        return empty, (0, 0, len(strings))
    shape = ranking.shape
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    char_table = shape.table(1)
    table = char_table if q == 1 else shape.table(2)
    low, high = (0, shape.split - 1) if q == 1 else (shape.split, 2 * shape.longest)
    part = Part.of(bucket_index(strings, lengths, ranking, q, bucket, buckets), lengths, q, table, low, high)
    signature = char_signature(strings, lengths, ranking.all_rank)
    indel = max_indel(np.arange(2 * shape.longest + 1, dtype=np.int64), shape.threshold)
    chunks, candidates, compared = join_part(
        part, strings, lengths, shape.threshold, char_table, signature, indel, workers
    )
    if not chunks:
        return empty, (candidates, compared, len(strings))
    a, b, score = (np.concatenate(column) for column in zip(*chunks, strict=True))
    _, once = np.unique(a * len(strings) + b, return_index=True)
    return (ranks[a[once]], ranks[b[once]], score[once]), (candidates, compared, len(strings))


def _block_pairs(threshold: float, x: list[str], x_offset: int, y: list[str], y_offset: int, same: bool) -> RankPairs:
    """Below the filter threshold: every pair of a band (``same``) or of two bands, by cdist."""
    block = process.cdist(x, y, scorer=fuzz.ratio, score_cutoff=threshold, dtype=np.float64, workers=1)
    accept = block > 0 if threshold > 0 else np.ones(block.shape, dtype=np.bool_)
    r, c = np.nonzero(accept)
    if same:
        keep = r < c
        r, c = r[keep], c[keep]
    return r.astype(np.int64) + x_offset, c.astype(np.int64) + y_offset, block[r, c]


# ---------------------------------------------------------------------------------------------
# The driver


def length_bands(histogram: IntArray, band_texts: int) -> IntArray:
    """band_of_length: contiguous length ranges of at most ``band_texts`` texts each (a length
    with more texts is a band of its own), numbered from 0."""
    band_of_length = np.zeros(len(histogram), dtype=np.int64)
    band, filled = 0, 0
    for length, count in enumerate(histogram.tolist()):
        if count and filled and filled + count > band_texts:
            band, filled = band + 1, 0
        band_of_length[length] = band
        filled += count
    return band_of_length


def _bucket_count(strings: int, settings: JoinSettings) -> int:
    """Buckets for a part of ``strings`` distinct strings (each sent to several: about 8)."""
    if settings.buckets is not None:
        return settings.buckets
    wanted = math.ceil(8 * strings / settings.bucket_strings)
    return max(1, min(MAX_BUCKETS, max(wanted, 2 * cluster_cpus())))


def distributed_join(
    shards: Sequence[Ref], offsets: Sequence[int], histograms: Sequence[IntArray], settings: JoinSettings
) -> JoinOutput:
    """Join the texts of ``shards`` (ObjectRefs of ``list[str]``; shard k's first text has global
    index ``offsets[k]``; ``histograms[k]`` its :func:`text_lengths`)."""
    threshold = check_threshold(settings.threshold)
    histogram = np.zeros(max(len(h) for h in histograms), dtype=np.int64)
    for h in histograms:
        histogram[: len(h)] += h
    band_of_length = length_bands(histogram, settings.band_texts)
    bands = int(band_of_length.max()) + 1
    shape_guess = JoinShape.of(threshold, (histogram > 0).astype(np.int64))  # the split depends on the longest only
    routed = [
        submit_parts(_route_lengths, shard, offset, band_of_length, parts=bands)
        for shard, offset in zip(shards, offsets, strict=True)
    ]
    band_strings, band_index, band_stats = [], [], []
    for b in range(bands):
        strings, index, made = submit(_distinct_band, shape_guess.split, *(r[b] for r in routed), num_returns=3)
        band_strings.append(strings)
        band_index.append(index)
        band_stats.append(made)
    stats: list[BandStats] = fetch(band_stats)
    counts = np.zeros(len(histogram), dtype=np.int64)
    for s in stats:
        counts[: len(s.length_counts)] += s.length_counts
    shape = JoinShape.of(threshold, counts)
    offsets_of_bands = np.concatenate(([0], np.cumsum([int(s.length_counts.sum()) for s in stats]))).tolist()
    output = JoinOutput(shape, int(histogram.sum()), offsets_of_bands[:-1], band_strings, band_index)
    if shape.distinct < 2 or max_indel(np.array([2 * shape.longest]), threshold)[0] == 0:
        return output
    if threshold < MIN_FILTER_THRESHOLD:
        return _all_pairs(output, threshold)
    partial = submit(_char_ranking, shape, *band_stats)
    ranking = partial
    if shape.bigram_part:
        bits = bigram_bits(sum(s.bigrams for s in stats))
        class_refs = [
            submit(_band_classes, strings, index, partial, bits)
            for strings, index in zip(band_strings, band_index, strict=True)
        ]
        ranking = submit(_full_ranking, partial, bits, *class_refs)
    p1 = _bucket_count(shape.short, settings) if shape.char_part else 0
    p2 = _bucket_count(shape.distinct, settings) if shape.bigram_part else 0
    total = p1 + p2
    routes = [
        submit_parts(_route_buckets, strings, index, offset, ranking, p1, p2, parts=total)
        for strings, index, offset in zip(band_strings, band_index, output.rank_offsets, strict=True)
    ]
    joins = [
        submit(
            _bucket_join,
            ranking,
            1 if k < p1 else 2,
            k if k < p1 else k - p1,
            p1 if k < p1 else p2,
            settings.workers,
            *(route[k] for route in routes),
            num_returns=2,
            num_cpus=settings.workers,
        )
        for k in range(total)
    ]
    output.pairs = [pairs for pairs, _ in joins]
    work = fetch([counts for _, counts in joins])
    output.candidates = sum(w[0] for w in work)
    output.compared = sum(w[1] for w in work)
    output.routed = sum(w[2] for w in work)
    output.buckets = (p1, p2)
    return output


def _all_pairs(output: JoinOutput, threshold: float) -> JoinOutput:
    """Below the filter threshold: every pair of distinct strings, two bands per task."""
    bands = len(output.band_strings)
    for x in range(bands):
        for y in range(x, bands):
            output.pairs.append(
                submit(
                    _block_pairs,
                    threshold,
                    output.band_strings[x],
                    output.rank_offsets[x],
                    output.band_strings[y],
                    output.rank_offsets[y],
                    x == y,
                )
            )
    distinct = output.shape.distinct
    output.candidates = output.compared = distinct * (distinct - 1) // 2
    return output
