"""The exact near-duplicate join against brute-force RapidFuzz: real data (skipped when absent),
adversarial synthetic collections, hypothesis, and hand-made components / keep decisions."""

from __future__ import annotations

import csv
import doctest
import random
import unicodedata
import zlib
from collections import Counter
from itertools import combinations, product

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz, process

from verimod.data import neardup, neardup_index, neardup_tokens
from verimod.data.neardup import (
    DedupReport,
    components,
    cross_pairs,
    deduplicate,
    keep_decisions,
    near_duplicate_pairs,
)
from verimod.data.neardup_bounds import max_indel, min_overlap, prefix_lengths

THRESHOLDS = [80.0, 85.0, 90.0, 95.0, 97.5, 100.0]


# ---------------------------------------------------------------- references


def _accepted(block: np.ndarray, threshold: float) -> np.ndarray:
    """RapidFuzz's decision in a cdist block: a non-zero score (every entry when t = 0)."""
    return block > 0 if threshold > 0 else np.ones(block.shape, dtype=bool)


def brute_pairs(texts, threshold):
    """Upper triangle of ``process.cdist(texts, texts, score_cutoff=threshold)``."""
    if not texts:
        return []
    block = process.cdist(texts, texts, scorer=fuzz.ratio, score_cutoff=threshold, dtype=np.float64, workers=-1)
    i, j = np.nonzero(np.triu(_accepted(block, threshold), k=1))
    return list(zip(i.tolist(), j.tolist(), block[i, j].tolist(), strict=True))


def brute_cross(left, right, threshold):
    if not left or not right:
        return []
    block = process.cdist(left, right, scorer=fuzz.ratio, score_cutoff=threshold, dtype=np.float64, workers=-1)
    i, j = np.nonzero(_accepted(block, threshold))
    return list(zip(i.tolist(), j.tolist(), block[i, j].tolist(), strict=True))


def loop_pairs(texts, threshold):
    """Pair by pair with ``fuzz.ratio(a, b, score_cutoff=threshold)``: RapidFuzz's decision."""
    found = []
    for i, j in combinations(range(len(texts)), 2):
        score = fuzz.ratio(texts[i], texts[j], score_cutoff=threshold)
        if score > 0 or threshold == 0:
            found.append((i, j, score))
    return found


# ---------------------------------------------------------------- data


def _cold_texts(shared_data):
    texts = []
    for split in ("train", "dev", "test"):
        with (shared_data / "cold" / f"{split}.csv").open(encoding="utf-8-sig", newline="") as handle:
            texts.extend(unicodedata.normalize("NFKC", row["TEXT"]) for row in csv.DictReader(handle))
    return texts


def _swsr_texts(shared_data):
    with (shared_data / "swsr" / "SexComment.csv").open(encoding="utf-8-sig", newline="") as handle:
        return [unicodedata.normalize("NFKC", row["comment_text"]) for row in csv.DictReader(handle)]


def _likely_neighbours(texts, size, seed):
    """A sample rich in near-duplicates, chosen independently of the code under test: texts
    sharing their first 5 characters with another text, then random fill."""
    heads = Counter(text[:5] for text in texts)
    chosen = [i for i, text in enumerate(texts) if heads[text[:5]] > 1][: size // 2]
    rest = sorted(set(range(len(texts))) - set(chosen))
    chosen += random.Random(seed).sample(rest, size - len(chosen))
    return [texts[i] for i in sorted(chosen)]


def _cjk(rng, count, base=0x4E00, span=5000):
    return "".join(chr(base + rng.randrange(span)) for _ in range(count))


def _distinct_cjk(rng, count):
    return "".join(chr(0x4E00 + k) for k in rng.sample(range(20000), count))


def _near_misses(rng):
    """Pairs at, just below and just above each threshold: substitutions of k of m distinct
    characters (ratio 100·(1 − k/m)), deletions (100·(1 − k/(2m − k))), insertions."""
    texts = []
    for m in (10, 19, 20, 21, 39, 40, 41, 50, 79, 80, 81, 199, 200, 201):
        base = _distinct_cjk(rng, m)
        texts.append(base)
        for k in range(1, min(m, 12) + 1):
            positions = rng.sample(range(m), k)
            substituted = list(base)
            for p in positions:
                substituted[p] = chr(0xAC00 + rng.randrange(500))  # Hangul: never in the base
            texts.append("".join(substituted))
            texts.append("".join(c for p, c in enumerate(base) if p not in positions))
            inserted = list(base)
            for p in sorted(positions, reverse=True):
                inserted.insert(p, chr(0xAC00 + rng.randrange(500)))
            texts.append("".join(inserted))
    return texts


def adversarial_texts(seed=7):
    rng = random.Random(seed)
    texts = ["", "", "a", "b", "ab", "ba", "aa", "哈", "哈哈", "哈哈哈", "哈哈哈哈", "哈哈哈哈哈", "呵呵", "哈呵"]
    texts += ["".join(p) for n in range(4) for p in product("ab哈", repeat=n)]  # every string of length ≤ 3
    texts += (
        ["哈" * n for n in range(1, 60)] + ["哈" * n + "!" for n in range(1, 60)] + ["ab" * n for n in range(1, 40)]
    )
    repeated = "哈" * 40
    texts += [repeated[:p] + "呵" + repeated[p + 1 :] for p in range(0, 40, 3)]
    same_length = _cjk(rng, 30, span=50)  # a small alphabet: many shared characters
    for _ in range(60):
        chars = list(same_length)
        for _ in range(rng.randint(1, 4)):
            chars[rng.randrange(30)] = _cjk(rng, 1, span=50)
        texts.append("".join(chars))
    texts += _near_misses(rng)
    long_base = _cjk(rng, 2500)
    for edits in (0, 1, 10, 50, 100, 130, 200, 400):
        chars = list(long_base)
        for _ in range(edits):
            chars[rng.randrange(len(chars))] = _cjk(rng, 1)
        texts.append("".join(chars))
    texts += [long_base[:2100], long_base[400:], long_base + long_base[:30]]
    texts += ["重复的评论"] * 300 + [""] * 50 + ["重复的评论!"] * 40 + [long_base] * 5
    rng.shuffle(texts)
    return texts


# ---------------------------------------------------------------- exactness


@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_adversarial_collection_matches_brute_force(threshold):
    texts = adversarial_texts()
    assert near_duplicate_pairs(texts, threshold) == brute_pairs(texts, threshold)


def test_adversarial_collection_at_boundary_thresholds_matches_brute_force():
    texts = adversarial_texts(seed=11)[:900]
    for threshold in (0.0, 1e-9, 5e-7, 1e-6, 33.3, 50.0, 57.5, 100 / 3, 200 / 3, 99.99, 100 - 1e-9):
        assert near_duplicate_pairs(texts, threshold) == brute_pairs(texts, threshold), threshold


@pytest.mark.parametrize("source", ["cold", "swsr"])
def test_real_texts_match_brute_force(shared_data, source):
    texts = _cold_texts(shared_data) if source == "cold" else _swsr_texts(shared_data)
    sample = _likely_neighbours(texts, 2500, seed=1)
    found = 0
    for threshold in THRESHOLDS:
        expected = brute_pairs(sample, threshold)
        assert near_duplicate_pairs(sample, threshold) == expected, threshold
        found += len(expected)
    assert found > 10  # the sample does exercise near-duplicates


def test_real_train_versus_test_cross_pairs_match_brute_force(shared_data):
    texts = _cold_texts(shared_data)
    left = _likely_neighbours(texts[:25726], 1500, seed=2)
    right = _likely_neighbours(texts[25726:], 1500, seed=3) + left[:20]  # some certain leaks
    for threshold in (85.0, 95.0, 100.0):
        expected = brute_cross(left, right, threshold)
        assert cross_pairs(left, right, threshold) == expected
        assert len(expected) >= 20


def test_small_chunks_blocks_and_batches_give_the_same_pairs(monkeypatch):
    texts = adversarial_texts(seed=3)
    expected = {t: brute_pairs(texts, t) for t in (85.0, 95.0)}
    monkeypatch.setattr(neardup_index, "CHUNK_CANDIDATES", 64)
    monkeypatch.setattr(neardup_index, "FILTER_BATCH", 7)
    monkeypatch.setattr(neardup_tokens, "BLOCK_CHARS", 100)
    monkeypatch.setattr(neardup_tokens, "BLOCK_STRINGS", 5)
    for threshold, pairs in expected.items():
        assert near_duplicate_pairs(texts, threshold) == pairs


def test_workers_do_not_change_the_result():
    texts = adversarial_texts(seed=5)
    assert near_duplicate_pairs(texts, 90, workers=2) == near_duplicate_pairs(texts, 90, workers=1)


# ---------------------------------------------------------------- hypothesis

_ALPHABET = "ab哈呵c"
_short_texts = st.lists(st.text(alphabet=_ALPHABET, max_size=30), max_size=25)
#: Thresholds on a 0.1 grid: there the cutoff tests of ``fuzz.ratio`` and ``process.cdist`` agree
#: for texts of up to 40 characters (checked exhaustively when this test was written).
_grid_thresholds = st.integers(0, 1000).map(lambda k: k / 10)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=_short_texts, threshold=_grid_thresholds)
def test_random_collections_match_a_double_loop(texts, threshold):
    assert near_duplicate_pairs(texts, threshold) == loop_pairs(texts, threshold)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=_short_texts, threshold=st.floats(0, 100))
def test_random_collections_at_any_threshold_match_cdist(texts, threshold):
    assert near_duplicate_pairs(texts, threshold) == brute_pairs(texts, threshold)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(left=_short_texts, right=_short_texts, threshold=_grid_thresholds)
def test_random_cross_pairs_match_a_double_loop(left, right, threshold):
    expected = [
        (i, j, score)
        for i, a in enumerate(left)
        for j, b in enumerate(right)
        if (score := fuzz.ratio(a, b, score_cutoff=threshold)) > 0 or threshold == 0
    ]
    assert cross_pairs(left, right, threshold) == expected


@settings(max_examples=300, deadline=None)
@given(a=st.text(alphabet=_ALPHABET, max_size=40), b=st.text(alphabet=_ALPHABET, max_size=40), t=st.floats(1e-6, 100))
def test_the_filter_bounds_hold_for_every_accepted_pair(a, b, t):
    """Lemmas 1–3 of neardup_bounds on pairs RapidFuzz accepts."""
    if not fuzz.ratio(a, b, score_cutoff=t):
        return
    m, n = sorted((len(a), len(b)))
    total = np.array([m + n])
    assert n - m <= max_indel(total, t)[0]
    overlap = sum((Counter(a) & Counter(b)).values())
    assert overlap >= min_overlap(total, t)[0] or m + n == 0
    short, long = prefix_lengths(np.array([m, n]), t)
    assert 1 <= short[0] <= long[0] <= m or m == 0


# ---------------------------------------------------------------- edge cases


def test_module_examples_run():
    assert doctest.testmod(neardup).failed == 0


def test_rapidfuzz_cutoff_decision_is_followed_at_exact_boundaries():
    """At t = 68 RapidFuzz rejects a pair scoring exactly 68.0 (floating point); so does the join."""
    a, b = "x" * 17 + "a" * 8, "x" * 17 + "b" * 8  # d = 16, L = 50
    assert fuzz.ratio(a, b) == 68.0 and fuzz.ratio(a, b, score_cutoff=68) == 0
    assert near_duplicate_pairs([a, b], 68) == brute_pairs([a, b], 68) == []
    assert near_duplicate_pairs([a, b], 67.9) == [(0, 1, 68.0)]


def test_documented_edge_cases():
    assert near_duplicate_pairs([]) == []
    assert near_duplicate_pairs(["只有一条"]) == []
    assert near_duplicate_pairs(["", "", "a"]) == [(0, 1, 100.0)]  # fuzz.ratio("", "") == 100
    assert near_duplicate_pairs(["", "a"], 0) == [(0, 1, 0.0)]  # t = 0: every pair
    assert near_duplicate_pairs(["ab", "ba", "ab"], 100) == [(0, 2, 100.0)]
    assert near_duplicate_pairs(["ab", "ba"], 50) == [(0, 1, 50.0)]
    assert near_duplicate_pairs(["\ud800abc", "\ud800abd", "x"], 70) == [(0, 1, 75.0)]  # lone surrogate
    copies = ["同一句话"] * 1000
    pairs = near_duplicate_pairs(copies)
    assert len(pairs) == 1000 * 999 // 2 and pairs[0] == (0, 1, 100.0) and pairs[-1] == (998, 999, 100.0)


@pytest.mark.parametrize("bad", [-0.1, 100.5, float("nan"), float("inf")])
def test_threshold_outside_0_100_is_refused(bad):
    with pytest.raises(ValueError, match="threshold"):
        near_duplicate_pairs(["a", "b"], bad)
    with pytest.raises(ValueError, match="threshold"):
        cross_pairs(["a"], ["b"], bad)


def test_cross_pairs_edge_cases():
    assert cross_pairs([], ["a"]) == []
    assert cross_pairs(["a", "a"], ["a", "b", "a"], 100) == [(0, 0, 100.0), (0, 2, 100.0), (1, 0, 100.0), (1, 2, 100.0)]
    assert cross_pairs(["ab"], ["ba"], 0) == [(0, 0, 50.0)]
    # a near pair on one side only is not a cross pair
    assert cross_pairs(["今天天气很好", "今天天气很好!"], ["完全不同"], 90) == []


# ---------------------------------------------------------------- components and decisions


def test_components_are_single_linkage_sorted_and_ordered_by_smallest_member():
    assert components(6, [(4, 5, 99.0), (1, 3), (3, 0, 97.0)]) == [[0, 1, 3], [4, 5]]
    assert components(3, []) == []
    assert components(4, [(2, 2, 100.0)]) == []
    assert components(5, [(0, 4), (4, 2), (3, 1), (1, 2)]) == [[0, 1, 2, 3, 4]]
    with pytest.raises(ValueError, match="outside"):
        components(2, [(0, 2)])


def test_keep_decisions_keep_one_text_per_component():
    texts = ["短", "长一点的文本", "中等长度", "孤立", "长一点的文本"]
    pairs = [(0, 1, 90.0), (1, 2, 90.0), (1, 4, 100.0)]
    assert keep_decisions(texts, pairs) == [True, False, False, True, False]
    assert keep_decisions(texts, pairs, rule="longest") == [False, True, False, True, False]  # tie → first
    assert keep_decisions(["bb", "aa", "c"], [(0, 1, 50.0)], rule="longest") == [True, False, True]
    assert keep_decisions(["x"], []) == [True]
    with pytest.raises(ValueError, match="rule"):
        keep_decisions(texts, pairs, rule="shortest")  # type: ignore[arg-type]


def test_deduplicate_reports_counts():
    texts = ["今天天气很好", "今天天气很好!", "完全不同的一句话", "今天天气很好", "", ""]
    result = deduplicate(texts, 90, rule="longest")
    assert result.pairs == near_duplicate_pairs(texts, 90)
    assert result.components == [[0, 1, 3], [4, 5]]
    assert result.keep == [False, True, True, False, True, False]
    report = result.report
    assert isinstance(report, DedupReport)
    assert (report.texts, report.distinct, report.pairs, report.components, report.dropped) == (6, 4, 4, 2, 3)
    assert report.compared <= report.candidates and report.seconds >= 0 and report.rule == "longest"


# ---------------------------------------------------------------- issue 18: bigrams, offsets, growth


def _lcs_alignment(a, b):
    """One optimal alignment of a and b: matched position pairs, increasing (a plain DP)."""
    m, n = len(a), len(b)
    table = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(m - 1, -1, -1):
        for j in range(n - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < m and j < n:
        if a[i] == b[j] and table[i][j] == table[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _first_preserved(a, b, q, rank):
    """Lemma 5 checked by hand: the first preserved q-gram occurrence of a (in (rank, offset)
    order), its image in b, and the positions of both in their strings' orders."""
    image = dict(_lcs_alignment(a, b))
    preserved = {
        s: image[s]
        for s in range(len(a) - q + 1)
        if all(s + k in image for k in range(q)) and all(image[s + k] == image[s] + k for k in range(q))
    }
    if not preserved:
        return None
    order_a = sorted(range(len(a) - q + 1), key=lambda s: (rank(a[s : s + q]), s))
    order_b = sorted(range(len(b) - q + 1), key=lambda s: (rank(b[s : s + q]), s))
    first = next(s for s in order_a if s in preserved)
    return order_a.index(first), order_b.index(preserved[first]), first, preserved[first]


@settings(max_examples=400, deadline=None)
@given(
    a=st.text(alphabet=_ALPHABET, max_size=30),
    b=st.text(alphabet=_ALPHABET, max_size=30),
    t=st.floats(50, 100),
    q=st.sampled_from([1, 2]),
    salt=st.integers(0, 10),
)
def test_the_first_preserved_gram_passes_every_candidate_test(a, b, t, q, salt):
    """Lemmas 3 and 5 of neardup_bounds on pairs RapidFuzz accepts: the q-gram overlap bound,
    and the positions and offsets of the first preserved gram, whatever the ranking of grams."""
    from verimod.data.neardup_bounds import overlap_table, token_counts

    if len(a) > len(b):
        a, b = b, a
    if a == b or not fuzz.ratio(a, b, score_cutoff=t):
        return
    m, n = len(a), len(b)
    total = m + n
    table = overlap_table(n, t, q)
    grams = lambda s: Counter(s[k : k + q] for k in range(len(s) - q + 1))  # noqa: E731
    assert sum((grams(a) & grams(b)).values()) >= min_overlap(np.array([total]), t, q)[0]
    if table[total] < 1:
        return  # no preserved gram is guaranteed: the pair belongs to the character part
    found = _first_preserved(a, b, q, lambda g: (zlib.crc32(f"{g}{salt}".encode()) % 7, g))
    assert found is not None
    i, j, s, s_b = found
    slack = max_indel(np.array([total]), t)[0]
    tokens = token_counts(np.array([m, n]), q)
    assert table[total] <= tokens[0] - i and table[total] <= tokens[1] - j
    assert (n - m) - slack <= 2 * (s_b - s) <= (n - m) + slack
    short, long = prefix_lengths(np.array([m, n]), t, q, table)
    assert i < short[0] and j < long[1]


def _zipf_corpus(n, seed=0):
    """Sources of 20–60 characters drawn from a Zipf-weighted alphabet of 3,000 (a few characters
    are in every text), each with 0–2 copies one substitution away: the number of near-duplicates
    per text does not grow with n, as in a real corpus."""
    rng = random.Random(seed)
    alphabet = [chr(0x4E00 + k) for k in range(3000)]
    weights = [1 / (k + 1) for k in range(3000)]
    texts = []
    while len(texts) < n:
        source = rng.choices(alphabet, weights, k=rng.randint(20, 60))
        texts.append("".join(source))
        for _ in range(rng.choice((0, 0, 1, 2))):
            copy = list(source)
            copy[rng.randrange(len(copy))] = rng.choices(alphabet, weights)[0]
            texts.append("".join(copy))
    return texts[:n]


@pytest.mark.parametrize("threshold", [95.0, 90.0])
def test_candidates_grow_sub_quadratically(threshold):
    """4× the texts: the pairs grow 4×, the candidates at most 4^1.3 ≈ 6.1× (character posting
    lists over a fixed alphabet gave 10.6× at 95 and 13× at 90 here)."""
    small, large = (deduplicate(_zipf_corpus(n), threshold).report for n in (4000, 16000))
    assert 3.5 < large.pairs / small.pairs < 4.5
    assert large.candidates / small.candidates <= 4**1.3, (small.candidates, large.candidates)


@pytest.mark.parametrize("threshold", [95.0, 90.0, 80.0])
def test_random_corpus_with_variants_matches_brute_force(threshold):
    texts = _zipf_corpus(3000, seed=5)
    rng = random.Random(threshold)
    for _ in range(300):  # heavier edits too: near misses at every threshold
        chars = list(rng.choice(texts))
        for _ in range(rng.randint(1, 8)):
            position = rng.randrange(len(chars))
            if rng.random() < 0.5:
                chars.insert(position, chr(0x4E00 + rng.randrange(3000)))
            else:
                del chars[position]
        texts.append("".join(chars))
    expected = brute_pairs(texts, threshold)
    assert near_duplicate_pairs(texts, threshold) == expected and len(expected) > 500


@pytest.mark.parametrize("threshold", [95.0, 90.0, 80.0])
def test_real_cold_texts_match_brute_force(shared_data, threshold):
    texts = _cold_texts(shared_data)
    sample = _likely_neighbours(texts, 6000, seed=threshold)
    expected = brute_pairs(sample, threshold)
    assert near_duplicate_pairs(sample, threshold) == expected and len(expected) > 50
