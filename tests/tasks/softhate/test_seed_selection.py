"""Seed selection of SoftHateBench: the detector vote and medoid standpoints."""

from __future__ import annotations

import asyncio
import doctest

import numpy as np
import pytest
import scipy.sparse as sp

from verimod.tasks.softhate import seed_selection
from verimod.tasks.softhate.seed_selection import (
    medoid_ranking,
    paper_more_than,
    select_medoids,
    select_medoids_async,
    strict_majority,
)
from verimod.tasks.softhate.seed_similarity import unit_rows


def _angles(*degrees: float) -> np.ndarray:
    radians = np.radians(degrees)
    return np.column_stack([np.cos(radians), np.sin(radians)])


# --- detector vote -----------------------------------------------------------------------------


def test_strict_majority_more_than_k_of_n():
    eleven = [
        [1, 1, 1],
        [1, 1, 1],
        [1, 1, 1],
        [1, 1, 1],
        [1, 1, 1],
        [1, 1, 1],
        [1, 1, 0],
        [1, 0, 0],
        [0, 0, 0],
        [0, 0, 0],
        [0, 0, 0],
    ]  # votes 8, 7, 6
    result = strict_majority(eleven, more_than=7)
    assert result.votes.tolist() == [8, 7, 6]
    assert result.keep.tolist() == [True, False, False]
    assert result.n_detectors == 11 and result.more_than == 7
    default = strict_majority(eleven)  # the paper's default: more than 7 of 11
    assert default.more_than == 7 and default.keep.tolist() == [True, False, False]
    assert strict_majority(eleven, more_than=5).keep.tolist() == [True, True, True]


def test_default_vote_is_the_papers_share_for_any_number_of_detectors():
    from fractions import Fraction

    for n in range(1, 40):
        k = paper_more_than(n)
        assert all((v > k) == (Fraction(v, n) > Fraction(7, 11)) for v in range(n + 1)), n


def test_strict_majority_label_values():
    labels = [["hate", "hate", "invalid"], ["hate", "non_hate", None], [True, False, float("nan")], [1, 0, 0]]
    result = strict_majority(labels)  # more than 2 of 4
    assert result.votes.tolist() == [4, 1, 0]
    assert result.keep.tolist() == [True, False, False]
    assert strict_majority(np.array([[True, False], [True, True]])).keep.tolist() == [True, False]
    assert strict_majority(np.zeros((3, 0), dtype=bool)).votes.tolist() == []


@pytest.mark.parametrize(
    ("labels", "kwargs", "match"),
    [
        ([["hateful"]], {}, "hate, non_hate or invalid"),
        ([[2]], {}, "0 or 1"),
        ([[1.5]], {}, "a bool"),
        ([[1], [1]], {"more_than": 2}, "more_than"),
        ([1, 0], {}, "2-D"),
        (np.zeros((0, 3)), {}, "at least one detector"),
    ],
)
def test_strict_majority_rejects_bad_input(labels, kwargs, match):
    with pytest.raises(ValueError, match=match):
        strict_majority(labels, **kwargs)


# --- medoid standpoints ------------------------------------------------------------------------


def test_medoid_ranking_matches_brute_force():
    rng = np.random.default_rng(4)
    for vectors in (rng.random((12, 6)), sp.csr_matrix(rng.random((9, 30)) * (rng.random((9, 30)) < 0.3))):
        unit = unit_rows(vectors)
        dense = unit.toarray() if sp.issparse(unit) else unit
        sims = dense @ dense.T
        n = len(dense)
        brute = [(sims[i].sum() - sims[i, i]) / (n - 1) for i in range(n)]
        ranking = medoid_ranking(vectors)
        assert [i for i, _ in ranking] == sorted(range(n), key=lambda i: (-brute[i], i))
        assert [m for _, m in ranking] == pytest.approx(sorted(brute, reverse=True))
    assert medoid_ranking(np.ones((1, 3)))[0][0] == 0
    assert medoid_ranking(np.ones((0, 3))) == []


def test_medoid_ties_go_to_the_first():
    assert [i for i, _ in medoid_ranking(_angles(0, 0, 0))] == [0, 1, 2]


class FakeNli:
    """P(a ⊨ b) = 0.9 for pairs listed, else 0.1; records the calls."""

    def __init__(self, entailing: set[tuple[str, str]]) -> None:
        self.entailing = entailing
        self.calls: list[tuple[str, str]] = []

    def __call__(self, a: str, b: str) -> float:
        self.calls.append((a, b))
        return 0.9 if (a, b) in self.entailing else 0.1


def medoid_fixture():
    # group g: angles 0, 10, 20, 190 → medoid 10°; group h: one member
    vectors = _angles(0, 10, 20, 190, 45)
    standpoints = ["s0", "s1", "s2", "s3", "s4"]
    sources = ["o0", "o1", "o2", "o3", "o4"]
    groups = ["g", "g", "g", "g", "h"]
    return vectors, standpoints, sources, groups


def test_medoid_passes_bidirectional_entailment():
    vectors, standpoints, sources, groups = medoid_fixture()
    nli = FakeNli({("s1", "o1"), ("o1", "s1"), ("s4", "o4"), ("o4", "s4")})
    choices = select_medoids(standpoints, sources, groups, nli, vectors=vectors)
    assert [(c.group, c.chosen) for c in choices] == [("g", 1), ("h", 4)]
    assert choices[0].members == (0, 1, 2, 3)
    assert choices[0].mean_similarity == pytest.approx((2 * np.cos(np.radians(10)) - 1) / 3)
    assert choices[1].mean_similarity is None  # one member: no mean similarity
    assert [(c.index, c.forward, c.backward, c.passed) for c in choices[0].checks] == [(1, 0.9, 0.9, True)]
    assert nli.calls[:2] == [("s1", "o1"), ("o1", "s1")]


def test_medoid_falls_back_when_one_direction_fails():
    vectors, standpoints, sources, groups = medoid_fixture()
    ranking = [i for i, _ in medoid_ranking(vectors[:4])]
    second = ranking[1]
    nli = FakeNli({("s1", "o1"), (f"s{second}", f"o{second}"), (f"o{second}", f"s{second}")})  # s1: one way only
    choice = select_medoids(standpoints, sources, groups, nli, vectors=vectors)[0]
    assert choice.chosen == second
    assert [(c.index, c.passed) for c in choice.checks] == [(1, False), (second, True)]


def test_medoid_none_when_no_candidate_passes():
    vectors, standpoints, sources, groups = medoid_fixture()
    choice = select_medoids(standpoints, sources, groups, FakeNli(set()), vectors=vectors)[0]
    assert choice.chosen is None and choice.mean_similarity is None
    assert len(choice.checks) == 4 and not any(c.passed for c in choice.checks)
    capped = select_medoids(standpoints, sources, groups, FakeNli(set()), vectors=vectors, max_tries=2)[0]
    assert len(capped.checks) == 2


def test_medoid_tau_is_inclusive_and_checked():
    vectors, standpoints, sources, groups = medoid_fixture()
    always = select_medoids(standpoints, sources, groups, lambda a, b: 0.6, vectors=vectors, tau=0.6)
    assert [c.chosen for c in always] == [1, 4]
    with pytest.raises(ValueError, match="tau"):
        select_medoids(standpoints, sources, groups, lambda a, b: 0.6, vectors=vectors, tau=1.5)
    with pytest.raises(ValueError, match="one of each"):
        select_medoids(standpoints, sources[:2], groups, lambda a, b: 0.6, vectors=vectors)


def test_medoid_async_equals_sync():
    vectors, standpoints, sources, groups = medoid_fixture()
    entailing = {("s2", "o2"), ("o2", "s2"), ("s4", "o4"), ("o4", "s4")}

    async def anli(a: str, b: str) -> float:
        return FakeNli(entailing)(a, b)

    sync = select_medoids(standpoints, sources, groups, FakeNli(entailing), vectors=vectors)
    asynchronous = asyncio.run(select_medoids_async(standpoints, sources, groups, anli, vectors=vectors))
    assert sync == asynchronous


def test_medoid_with_the_default_embedder():
    standpoints = [
        "immigrants should be kept out of our towns",
        "immigrants must be kept out of our towns",
        "immigrants should be kept away from our towns",
        "women should not lead companies",
    ]
    groups = ["imm", "imm", "imm", "women"]
    choices = select_medoids(standpoints, standpoints, groups, lambda a, b: 1.0)
    assert choices[0].chosen == 0 and choices[1].chosen == 3


def test_module_doctests_pass():
    assert doctest.testmod(seed_selection).failed == 0
