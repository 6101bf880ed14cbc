"""The distributed join's partition, run in-process (no Ray): its task functions, called by hand
over length bands and gram buckets, give exactly the single-machine pairs, scores and candidate
count; its prefix entries are the single-machine index's; its merge gives the single-machine
components and keep decisions."""

import itertools

import numpy as np
import pytest

from verimod.data.neardup import deduplicate
from verimod.data.neardup_bounds import first_guaranteed_total, overlap_table
from verimod.data.neardup_groups import group_identical
from verimod.data.neardup_index import filtered_pairs
from verimod.data.neardup_tokens import build_prefix_index
from verimod.distributed.components import copies, dropped_texts, text_components, text_pairs, unique_pairs
from verimod.distributed.join import (
    _band_classes,
    _bucket_join,
    _char_ranking,
    _distinct_band,
    _full_ranking,
    _route_buckets,
    _route_lengths,
    length_bands,
    text_lengths,
)
from verimod.distributed.ranking import JoinShape, bigram_bits, bucket_index
from verimod.distributed.synthetic import synthetic_texts


def corpus(n=3000, seed=5):
    """Synthetic texts plus very short ones (so that the character part has strings)."""
    texts = synthetic_texts(n, seed=seed)
    return [*texts, "好", "好的", "好吗", "哈哈", "哈哈哈", "的了", "了的", "好", "。。"]


def run_partition(texts, threshold, shards, band_texts, buckets):
    """The distributed pipeline's steps, each task function called directly."""
    cuts = np.linspace(0, len(texts), shards + 1).astype(int).tolist()
    pieces = [texts[a:b] for a, b in itertools.pairwise(cuts)]
    histogram = sum(np.pad(h, (0, 300 - len(h))) for h in map(text_lengths, pieces))
    band_of_length = length_bands(histogram, band_texts)
    bands = int(band_of_length.max()) + 1
    routed = [_route_lengths(piece, start, band_of_length) for piece, start in zip(pieces, cuts, strict=False)]
    routed = [r if bands > 1 else [r] for r in routed]
    split = JoinShape.of(threshold, (histogram > 0).astype(np.int64)).split
    made = [_distinct_band(split, *(r[b] for r in routed)) for b in range(bands)]
    counts = sum(np.pad(s.length_counts, (0, 300 - len(s.length_counts))) for _, _, s in made)
    shape = JoinShape.of(threshold, counts)
    ranking = _char_ranking(shape, *(s for _, _, s in made))
    if shape.bigram_part:
        bits = bigram_bits(sum(s.bigrams for _, _, s in made))
        ranking = _full_ranking(ranking, bits, *(_band_classes(st, ix, ranking, bits) for st, ix, _ in made))
    p1 = buckets if shape.char_part else 0
    p2 = buckets if shape.bigram_part else 0
    offsets = np.cumsum([0] + [len(st) for st, _, _ in made]).tolist()
    routes = [_route_buckets(st, ix, off, ranking, p1, p2) for (st, ix, _), off in zip(made, offsets, strict=False)]
    routes = [r if p1 + p2 > 1 else [r] for r in routes]
    found, candidates = [], 0
    for k in range(p1 + p2):
        q, p, count = (1, k, p1) if k < p1 else (2, k - p1, p2)
        pairs, work = _bucket_join(ranking, q, p, count, 1, *(route[k] for route in routes))
        found.append(pairs)
        candidates += work[0]
    return shape, ranking, [ix for _, ix, _ in made], found, candidates, (p1, p2)


@pytest.mark.parametrize(
    ("threshold", "shards", "band_texts", "buckets"),
    [(95, 3, 400, 7), (90, 1, 10_000, 1), (80, 4, 250, 5), (60, 2, 700, 3), (70, 2, 500, 16)],
)
def test_union_of_bucket_joins_is_the_single_machine_join(threshold, shards, band_texts, buckets):
    texts = corpus()
    shape, _, bands, found, candidates, parts = run_partition(texts, threshold, shards, band_texts, buckets)
    groups = group_identical(texts)
    single = filtered_pairs(groups.strings, groups.lengths, threshold)
    a, b, score = unique_pairs(found, shape.distinct)
    assert len(bands) > 1 or band_texts > len(texts)
    assert sum(parts) >= 1
    assert a.tolist() == single.a.tolist() and b.tolist() == single.b.tolist()
    assert score.tolist() == single.score.tolist()  # RapidFuzz's own scores, bit for bit
    assert candidates == single.candidates  # the candidate multiset, cut into disjoint pieces
    assert shape.distinct == len(groups.strings)


@pytest.mark.parametrize("rule", ["first", "longest"])
def test_merge_gives_the_single_machine_pairs_components_and_keep(rule):
    texts = corpus(2000, seed=9)
    texts += texts[:40]  # exact copies far apart
    _, _, bands, found, _, _ = run_partition(texts, 90, 3, 300, 4)
    held, lengths = copies(bands)
    pairs = unique_pairs(found, len(lengths))
    comps = text_components(held, pairs, len(texts))
    text_length = np.array([len(t) for t in texts], dtype=np.int64)
    single = deduplicate(texts, 90, rule=rule)
    assert comps.lists() == single.components
    dropped = dropped_texts(comps, text_length, rule)
    assert dropped.tolist() == [i for i, keep in enumerate(single.keep) if not keep]
    i, j, score = text_pairs(held, pairs)
    order = np.lexsort((j, i))
    assert list(zip(i[order].tolist(), j[order].tolist(), score[order].tolist(), strict=True)) == single.pairs


@pytest.mark.parametrize("q", [1, 2])
def test_bucket_indexes_hold_exactly_the_single_machine_entries(q):
    texts = corpus(1500, seed=3)
    threshold = 80
    shape, ranking, _, _, _, _ = run_partition(texts, threshold, 1, 10_000, 1)
    groups = group_identical(texts)
    strings, lengths = groups.strings, groups.lengths
    if q == 1:
        split = first_guaranteed_total(overlap_table(int(lengths[-1]), threshold, 2))
        short = int(np.searchsorted(lengths, split - 1, side="right"))
        strings, lengths = strings[:short], lengths[:short]
    single = build_prefix_index(strings, lengths, threshold, q, shape.table(q))
    buckets = 4
    entries = set()
    for p in range(buckets):
        index = bucket_index(strings, lengths, ranking, q, p, buckets)
        assert np.array_equal(index.signature, single.signature)
        ranks = index.key // len(strings)
        assert (ranks % buckets == p).all()
        entries |= set(zip(index.key.tolist(), index.position.tolist(), index.offset.tolist(), strict=True))
    assert entries == set(zip(single.key.tolist(), single.position.tolist(), single.offset.tolist(), strict=True))
