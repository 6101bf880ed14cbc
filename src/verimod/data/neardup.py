"""Exact near-duplicate join: every pair of texts whose RapidFuzz ``fuzz.ratio`` reaches a threshold.

Similarity. ``fuzz.ratio(a, b) = 100·(1 − d/(|a| + |b|))`` with d the indel distance
(insertions and deletions only; d = |a| + |b| − 2·LCS), lengths in code points, and
``fuzz.ratio("", "") = 100``. Texts i < j are a pair when ``fuzz.ratio(texts[i], texts[j]) ≥ t``.

Exactness. The result is *the same set of pairs, with the same scores*, as comparing every pair
with ``rapidfuzz.process.cdist(texts, texts, scorer=fuzz.ratio, score_cutoff=t)`` and reading
the upper triangle (its non-zero entries; every entry when t = 0), scores as float64. Only the
work is sub-quadratic:

1. identical texts are collapsed (their copies are pairs with score 100 — also empty strings);
2. distinct texts are ranked by length; a length filter bounds partner lengths,
   ||a| − |b|| ≤ d ≤ D(L) ≈ (1 − t/100)·L with L = |a| + |b|;
3. a prefix filter over gram occurrences ordered rarest first — bigrams for pair totals from L_2
   on (about 6 characters at t = 80, 2 at t = 95), characters below (and everywhere below
   t = 66.7): a qualifying pair's *first preserved gram* (a gram the optimal alignment keeps
   whole) lies in the prefixes of both texts, at positions bounded by how many grams the edits
   can ruin, and at text offsets at most (D(L) ± ||a| − |b||)/2 apart — three tests that every
   candidate passes; a bucketed count filter (the multiset overlap of the grams) follows;
4. RapidFuzz (``process.cpdist`` with ``score_cutoff``, the cutoff test of ``cdist``) verifies
   the surviving candidates, so every decision and every score is RapidFuzz's own.

The bounds and their proofs are in :mod:`verimod.data.neardup_bounds`, the index and count
signatures in :mod:`verimod.data.neardup_tokens`, candidates in :mod:`verimod.data.neardup_index`.
Below t = 1e-6 no filter applies (a pair with nothing in common may qualify) and every pair of
distinct texts is compared; t = 0 returns all pairs. Bigram tokens are what keeps the candidates
sub-quadratic: the posting lists of rare bigrams stay short as a corpus grows, those of rare
characters of a fixed alphabet do not (``benchmarks/README.md``).

Floating point. RapidFuzz decides the cutoff on the normalised distance d/L, in floating point.
When t equals an attainable score exactly, that decision can differ from ``fuzz.ratio(a, b) ≥ t``:
at t = 68 a pair with d = 16, L = 50 (score exactly 68.0) is rejected, as 1 − 0.68 =
0.31999999999999995 < 16/50; at t = 57.5 a pair with d = 34, L = 80 is accepted and scored
57.49999999999999. The join follows RapidFuzz's cutoff decision, as ``cdist`` does (and as
``fuzz.ratio(a, b, score_cutoff=t)`` does at every threshold on a 0.1 grid for texts of up to
40 characters, checked exhaustively); its filters keep a margin of 1e-9·L edits for it.

>>> near_duplicate_pairs(["今天天气很好", "今天天气很好!", "完全不同的一句话", "今天天气很好"], threshold=90)
[(0, 1, 92.3076923076923), (0, 3, 100.0), (1, 3, 92.3076923076923)]
>>> components(4, [(0, 1, 92.3), (1, 3, 92.3)])
[[0, 1, 3]]
>>> keep_decisions(["a", "bb", "c", "bb"], [(1, 3, 100.0)])
[True, True, True, False]
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from verimod.data.neardup_bounds import MIN_FILTER_THRESHOLD, check_threshold, max_indel
from verimod.data.neardup_groups import Groups, Members, expand, group_identical, members, sort_pairs
from verimod.data.neardup_index import PairMask, UniquePairs, all_pairs, filtered_pairs

__all__ = [
    "DedupReport",
    "DedupResult",
    "KeepRule",
    "components",
    "cross_pairs",
    "deduplicate",
    "keep_decisions",
    "near_duplicate_pairs",
]

#: ``(i, j, score)`` with i < j (within one collection) or (left index, right index, score).
Pair: TypeAlias = tuple[int, int, float]
#: Which text of a component :func:`keep_decisions` keeps.
KeepRule: TypeAlias = Literal["first", "longest"]
IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]


@dataclass(frozen=True)
class DedupReport:
    """Counts of one :func:`deduplicate` run.

    ``candidates`` counts the candidate pairs of distinct texts that the prefix index produced
    after the length and position tests (a pair sharing several prefix tokens counts once per
    token); ``compared`` the distinct pairs left by the count filter, which RapidFuzz compared
    (brute force compares ``distinct·(distinct − 1)/2``); ``seconds`` is the wall time of the call.
    """

    texts: int
    distinct: int
    pairs: int
    components: int
    dropped: int
    candidates: int
    compared: int
    threshold: float
    rule: str
    seconds: float


@dataclass(frozen=True)
class DedupResult:
    """Pairs, components (single linkage), one keep flag per text, and the counts."""

    pairs: list[Pair]
    components: list[list[int]]
    keep: list[bool]
    report: DedupReport


def _unique_join(groups: Groups, threshold: float, workers: int, mask: PairMask | None = None) -> UniquePairs:
    """Near-duplicate pairs among the distinct strings of ``groups``, by rank."""
    count = len(groups.strings)
    longest = int(groups.lengths[-1]) if count else 0
    if count < 2 or max_indel(np.array([2 * longest]), threshold)[0] == 0:
        empty = np.zeros(0, dtype=np.int64)  # distinct strings are ≥ 1 edit apart: none qualifies
        return UniquePairs(a=empty, b=empty, score=np.zeros(0, dtype=np.float64), candidates=0, compared=0)
    if threshold < MIN_FILTER_THRESHOLD:
        return all_pairs(groups.strings, threshold, workers, mask)
    return filtered_pairs(groups.strings, groups.lengths, threshold, workers, mask)


def _copies(holders: Members, others: Members) -> tuple[IntArray, IntArray, FloatArray]:
    """Pairs between copies of one distinct string (score 100): holders × others per rank."""
    ranks = np.flatnonzero((holders.size > 0) & (others.size > 0))
    return expand(ranks, ranks, np.full(len(ranks), 100.0), holders, others)


def _self_join(
    texts: Sequence[str], threshold: float, workers: int
) -> tuple[IntArray, IntArray, FloatArray, UniquePairs]:
    """Arrays (i, j, score) of all pairs i < j (unsorted), and the join of the distinct texts."""
    groups = group_identical(texts)
    found = _unique_join(groups, threshold, workers)
    held = members(groups.rank, len(groups.strings))
    i1, j1, s1 = _copies(held, held)
    i2, j2, s2 = expand(found.a, found.b, found.score, held, held)
    i, j = np.concatenate((i1, np.minimum(i2, j2))), np.concatenate((j1, np.maximum(i2, j2)))
    score = np.concatenate((s1, s2))
    keep = i < j
    return i[keep], j[keep], score[keep], found


def near_duplicate_pairs(texts: Sequence[str], threshold: float = 95.0, workers: int = 1) -> list[Pair]:
    """Every pair ``(i, j, score)``, i < j, with ``score = fuzz.ratio(texts[i], texts[j]) ≥ threshold``.

    Sorted by (i, j). Exactly the pairs and scores of the brute-force ``process.cdist`` comparison
    (see the module docstring); ``threshold`` is any number in [0, 100] (ValueError otherwise);
    ``workers`` is passed to RapidFuzz (threads; -1 = all cores). Identical texts are pairs with
    score 100.0, however many copies there are; so are two empty strings.
    """
    t = check_threshold(threshold)
    i, j, score, _ = _self_join(texts, t, workers)
    return sort_pairs(i, j, score, max(len(texts), 1))


def cross_pairs(left: Sequence[str], right: Sequence[str], threshold: float = 95.0, workers: int = 1) -> list[Pair]:
    """Every pair ``(i, j, score)`` with ``score = fuzz.ratio(left[i], right[j]) ≥ threshold``.

    Sorted by (i, j); exact like :func:`near_duplicate_pairs` (the same filters over the distinct
    strings of both sides, keeping only candidates with a copy on each side). Use it for
    train-versus-test leakage: every right index that occurs is a test text with a near-twin in
    training.
    """
    t = check_threshold(threshold)
    groups = group_identical([*left, *right])
    n_left, n_ranks = len(left), len(groups.strings)
    on_left = members(groups.rank[:n_left], n_ranks)
    on_right = members(groups.rank[n_left:], n_ranks)
    has_left, has_right = on_left.size > 0, on_right.size > 0

    def across(a: IntArray, b: IntArray) -> npt.NDArray[np.bool_]:
        return (has_left[a] & has_right[b]) | (has_right[a] & has_left[b])

    found = _unique_join(groups, t, workers, across)
    parts = [
        _copies(on_left, on_right),
        expand(found.a, found.b, found.score, on_left, on_right),
        expand(found.b, found.a, found.score, on_left, on_right),
    ]
    i, j, score = (np.concatenate(column) for column in zip(*parts, strict=True))
    return sort_pairs(i, j, score, max(len(right), 1))


def components(n: int, pairs: Iterable[Sequence[float]]) -> list[list[int]]:
    """Connected components (single linkage) of the graph on ``range(n)`` with ``pairs`` as edges.

    Only the first two entries of each pair are read, so ``(i, j)`` and ``(i, j, score)`` both
    work. Returns the components with at least two members, each sorted, ordered by their
    smallest member. Single linkage is transitive: a ~ b and b ~ c put a and c together even when
    a and c are not near-duplicates.
    """
    edges = np.array([(int(p[0]), int(p[1])) for p in pairs], dtype=np.int64).reshape(-1, 2)
    return _components(n, edges[:, 0], edges[:, 1])


def _components(n: int, i: IntArray, j: IntArray) -> list[list[int]]:
    """:func:`components` of the edges (i[k], j[k]) (scipy's connected components)."""
    outside = (i < 0) | (i >= n) | (j < 0) | (j >= n)
    if outside.any():
        k = int(np.flatnonzero(outside)[0])
        raise ValueError(f"pair ({int(i[k])}, {int(j[k])}) is outside range({n})")
    if not len(i):
        return []
    graph = coo_matrix((np.ones(len(i), dtype=np.int8), (i, j)), shape=(n, n)).tocsr()
    _, labels = connected_components(graph, directed=False)
    order = np.argsort(labels, kind="stable")  # members ascending within a component
    starts = np.flatnonzero(np.append(True, labels[order][1:] != labels[order][:-1]))
    groups = [group for group in np.split(order, starts[1:]) if len(group) >= 2]
    groups.sort(key=lambda group: int(group[0]))
    return [group.tolist() for group in groups]


def _keeper(texts: Sequence[str], group: list[int], rule: KeepRule) -> int:
    """The member of ``group`` (sorted) that ``rule`` keeps."""
    if rule == "longest":
        return min(group, key=lambda i: (-len(texts[i]), i))
    return group[0]


def _check_rule(rule: str) -> None:
    if rule not in ("first", "longest"):
        raise ValueError(f"rule must be 'first' or 'longest', got {rule!r}")


def _decide(texts: Sequence[str], groups: list[list[int]], rule: KeepRule) -> list[bool]:
    keep = [True] * len(texts)
    for group in groups:
        chosen = _keeper(texts, group, rule)
        for member in group:
            keep[member] = member == chosen
    return keep


def keep_decisions(texts: Sequence[str], pairs: Iterable[Sequence[float]], rule: KeepRule = "first") -> list[bool]:
    """One flag per text, True for the texts to keep: exactly one text per component of ``pairs``.

    Rules: ``"first"`` keeps the component's first text in input order (smallest index);
    ``"longest"`` keeps its longest text (length in code points), ties going to the first.
    Texts in no pair are always kept. Components are single-linkage (see :func:`components`).
    """
    _check_rule(rule)
    return _decide(texts, components(len(texts), pairs), rule)


def deduplicate(
    texts: Sequence[str], threshold: float = 95.0, *, rule: KeepRule = "first", workers: int = 1
) -> DedupResult:
    """:func:`near_duplicate_pairs`, their :func:`components`, :func:`keep_decisions` and a report."""
    started = time.perf_counter()
    t = check_threshold(threshold)
    _check_rule(rule)
    i, j, score, found = _self_join(texts, t, workers)
    pairs = sort_pairs(i, j, score, max(len(texts), 1))
    groups = _components(len(texts), i, j)
    keep = _decide(texts, groups, rule)
    report = DedupReport(
        texts=len(texts),
        distinct=len(set(texts)),
        pairs=len(pairs),
        components=len(groups),
        dropped=keep.count(False),
        candidates=found.candidates,
        compared=found.compared,
        threshold=t,
        rule=rule,
        seconds=time.perf_counter() - started,
    )
    return DedupResult(pairs=pairs, components=groups, keep=keep, report=report)
