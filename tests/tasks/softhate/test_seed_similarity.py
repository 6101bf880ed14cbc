"""Seed near-duplicates of SoftHateBench: the exact similarity join and dedupe rules."""

from __future__ import annotations

import random

import numpy as np
import pytest
import scipy.sparse as sp

from verimod.tasks.softhate.seed_similarity import SimilarPairs, dedupe, similar_pairs, tfidf_embedder, unit_rows

# --- exact similarity join ---------------------------------------------------------------------

BASES = [
    "people like them should not be allowed to teach our children",
    "they bring crime wherever they settle and nobody dares to say it",
    "traditional families are under attack by this ideology",
    "our neighbourhoods were safe before they arrived here",
    "these benefits are paid for by hard working taxpayers like us",
    "you cannot trust anyone who follows that religion",
    "women are simply not suited for leadership positions",
    "the elite laugh at ordinary people while taking their money",
    "这些人来了以后我们小区就再也不安全了",
    "某些地方的人天生就爱占便宜，大家都知道",
]


def _mutate(text: str, rng: random.Random, edits: int) -> str:
    chars = list(text)
    for _ in range(edits):
        op = rng.random()
        pos = rng.randrange(len(chars))
        if op < 0.4:
            chars[pos] = rng.choice("abcdefghijklmnopqrstuvwxyz 的了人")
        elif op < 0.7 and len(chars) > 5:
            del chars[pos]
        else:
            chars.insert(pos, rng.choice("abcdefghijklmnopqrstuvwxyz "))
    return "".join(chars)


def synthetic_texts(n: int = 300, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        base = rng.choice(BASES)
        texts.append(_mutate(base, rng, rng.choice([0, 1, 2, 4, 8, 16, 30])))
    return texts


def brute_force_pairs(unit: np.ndarray, threshold: float, groups=None) -> dict[tuple[int, int], float]:
    scores = unit @ unit.T
    n = len(unit)
    out = {}
    for i in range(n):
        for j in range(i + 1, n):
            if (groups is None or groups[i] == groups[j]) and scores[i, j] >= threshold:
                out[(i, j)] = float(scores[i, j])
    return out


def _assert_exact(pairs: SimilarPairs, unit: np.ndarray, threshold: float, groups=None) -> None:
    expected = brute_force_pairs(unit, threshold, groups)
    got = {(i, j): s for i, j, s in pairs.as_list()}
    scores = unit @ unit.T
    differing = set(expected) ^ set(got)
    # a pair may differ only when its score is within rounding of the threshold
    assert all(abs(scores[i, j] - threshold) < 1e-12 for i, j in differing), differing
    for key, score in got.items():
        assert score == pytest.approx(scores[key], abs=1e-12)
    assert list(zip(pairs.left.tolist(), pairs.right.tolist(), strict=True)) == sorted(got)


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.8, 0.95, 1.0])
def test_sparse_join_equals_brute_force(threshold):
    texts = synthetic_texts(300)
    vectors = tfidf_embedder()(texts)
    unit = unit_rows(vectors).toarray()
    pairs = similar_pairs(texts, threshold, vectors=vectors, block_rows=64)
    _assert_exact(pairs, unit, threshold)
    if threshold == 0.8:
        assert len(pairs) > 50  # the fixture has near-duplicates to find


def test_sparse_join_within_groups_equals_brute_force():
    texts = synthetic_texts(300, seed=1)
    groups = [("a", "b", None)[i % 3] for i in range(len(texts))]
    vectors = tfidf_embedder()(texts)
    pairs = similar_pairs(texts, 0.8, groups=groups, vectors=vectors, block_rows=37)
    _assert_exact(pairs, unit_rows(vectors).toarray(), 0.8, groups)
    assert all(groups[i] == groups[j] for i, j, _ in pairs.as_list())


def test_threshold_equal_to_an_attained_score_includes_the_pair():
    texts = synthetic_texts(200, seed=2)
    vectors = tfidf_embedder()(texts)
    first = similar_pairs(texts, 0.6, vectors=vectors)
    i, j, score = first.as_list()[len(first) // 2]
    again = similar_pairs(texts, score, vectors=vectors)
    assert (i, j) in {(a, b) for a, b, _ in again.as_list()}
    assert all(s >= score for _, _, s in again.as_list())


def test_dense_embeddings_with_negative_values_use_the_all_pairs_path():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(20, 16))
    vectors = np.vstack([base + rng.normal(scale=s, size=base.shape) for s in (0.0, 0.2, 0.5, 1.0)])
    texts = [str(i) for i in range(len(vectors))]
    pairs = similar_pairs(texts, 0.9, vectors=vectors)
    _assert_exact(pairs, unit_rows(vectors), 0.9)
    sparse_signed = similar_pairs(texts, 0.9, vectors=sp.csr_matrix(vectors))
    assert sparse_signed.left.tolist() == pairs.left.tolist() and sparse_signed.right.tolist() == pairs.right.tolist()
    assert sparse_signed.score == pytest.approx(pairs.score)


def test_identical_and_empty_texts():
    texts = ["same text here", "same text here", "", "", "something else entirely"]
    pairs = similar_pairs(texts, 0.8)
    assert [(i, j) for i, j, _ in pairs.as_list()] == [(0, 1)]  # empty texts have no similarity
    assert similar_pairs(["", ""], 0.8).as_list() == []


def test_embedder_row_count_is_checked():
    with pytest.raises(ValueError, match="rows"):
        similar_pairs(["a", "b"], 0.8, embedder=lambda texts: np.ones((3, 2)))
    with pytest.raises(ValueError, match="threshold"):
        similar_pairs(["a"], 0.0)
    with pytest.raises(ValueError, match="groups"):
        similar_pairs(["a", "b"], 0.8, groups=["x"])


def _angles(*degrees: float) -> np.ndarray:
    radians = np.radians(degrees)
    return np.column_stack([np.cos(radians), np.sin(radians)])


def test_dedupe_component_and_greedy_rules():
    # a~b (cos 30° = 0.87), b~c, but a≁c (cos 60° = 0.5); d alone
    vectors = _angles(0, 30, 60, 180)
    texts = ["a", "b", "c", "d"]
    component = dedupe(texts, 0.8, vectors=vectors)
    assert component.keep == [True, False, False, True]
    assert component.representative == [0, 0, 0, 3]
    greedy = dedupe(texts, 0.8, vectors=vectors, rule="greedy")
    assert greedy.keep == [True, False, True, True]
    assert greedy.representative == [0, 0, 2, 3]
    by_group = dedupe(texts, 0.8, vectors=vectors, groups=["g", "h", "g", "g"])
    assert by_group.keep == [True, True, True, True]
    with pytest.raises(ValueError, match="rule"):
        dedupe(texts, 0.8, vectors=vectors, rule="best")  # type: ignore[arg-type]


def test_dedupe_keeps_no_qualifying_pair():
    texts = synthetic_texts(300, seed=3)
    for rule in ("component", "greedy"):
        result = dedupe(texts, 0.8, rule=rule)  # type: ignore[arg-type]
        kept = [i for i, k in enumerate(result.keep) if k]
        again = similar_pairs([texts[i] for i in kept], 0.8, vectors=tfidf_embedder()(texts)[kept])
        assert len(again) == 0
        assert all(result.keep[result.representative[i]] for i in range(len(texts)))
    assert dedupe(texts, 0.8, rule="greedy").n_kept >= dedupe(texts, 0.8).n_kept
