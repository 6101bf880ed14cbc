"""Selection steps of SoftHateBench seeds (stage 1): the detector vote and medoid standpoints.

**Detector vote** (:func:`strict_majority`): keep item i iff v_i > k, v_i = number of
detectors labelling it hate (a missing or invalid label is no vote); k defaults to the
paper's share, k = ⌊7n/11⌋, so that v_i > k ⟺ v_i / n > 7/11 (n = 11: more than 7, i.e. 8
of 11; n = 3: more than 1, i.e. 2 of 3, since 7·3/11 ≈ 1.9); ``more_than`` sets k.

**Medoid standpoint** (:func:`select_medoids`): in each group, members are ranked by their
mean similarity to the other members, m_i = Σ_{j≠i} s_ij / (n − 1) = (x_i · Σ_j x_j − x_i ·
x_i) / (n − 1) (ties by input order). The best-ranked member whose standpoint a and original
sentence b pass ``nli(a, b) ≥ τ`` and ``nli(b, a) ≥ τ`` (τ = 0.6 by default, the paper's
τ_ent) is chosen; a failed check falls back to the next-best; if none passes, the group has
no medoid. Every check is recorded.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from verimod.tasks.softhate.seed_similarity import Embedder, IntArray, embed_or_check, group_members, unit_rows

#: P(a entails b) of an NLI model, a ∈ premise, b ∈ hypothesis.
Entailment = Callable[[str, str], float]
AsyncEntailment = Callable[[str, str], Awaitable[float]]

# ---------------------------------------------------------------------------------------------
# detector vote


@dataclass(frozen=True)
class VoteResult:
    """Per item: hate votes and the keep flag (votes > more_than), with n and k."""

    votes: IntArray
    keep: npt.NDArray[np.bool_]
    n_detectors: int
    more_than: int


def _vote(value: object) -> bool:
    if value is None or (isinstance(value, float) and value != value):
        return False
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        if value not in (0, 1):
            raise ValueError(f"a detector label must be 0 or 1, got {value}")
        return bool(value)
    if isinstance(value, str):
        if value not in ("hate", "non_hate", "invalid"):
            raise ValueError(f"a detector label must be hate, non_hate or invalid, got {value!r}")
        return value == "hate"
    raise ValueError(f"a detector label must be a bool, 0/1, a label string or None, got {value!r}")


def paper_more_than(n: int) -> int:
    """``⌊7n/11⌋``: v > it exactly when v/n > 7/11, the paper's vote (> 7 of 11 detectors)."""
    return (7 * n) // 11


def strict_majority(labels: Sequence[Sequence[object]] | npt.NDArray[Any], more_than: int | None = None) -> VoteResult:
    """Keep items that more than ``more_than`` detectors label hate (module docstring).

    ``labels`` is detectors × items: True/1/``"hate"`` is a hate vote; False/0/``"non_hate"``,
    ``"invalid"`` and None/NaN are not. ``more_than`` defaults to ⌊7n/11⌋ (the paper's > 7/11).

    >>> strict_majority([[1, 1, 0], [1, 0, 0], [1, 1, None]]).keep.tolist()
    [True, True, False]
    >>> strict_majority([[1]] * 8 + [[0]] * 3).keep.tolist(), strict_majority([[1]] * 7 + [[0]] * 4).keep.tolist()
    ([True], [False])
    >>> strict_majority([["hate"] * 2] * 7 + [["non_hate", "hate"]] * 4, more_than=7).votes.tolist()
    [7, 11]
    """
    array = np.asarray(labels, dtype=object) if not isinstance(labels, np.ndarray) else labels
    if array.ndim != 2:
        raise ValueError(f"labels must be 2-D (detectors × items), got {array.ndim}-D")
    n = int(array.shape[0])
    if n == 0:
        raise ValueError("labels need at least one detector")
    k = paper_more_than(n) if more_than is None else more_than
    if not 0 <= k < n:
        raise ValueError(f"more_than must be in [0, {n - 1}] for {n} detectors, got {k}")
    if array.dtype.kind == "b":
        flags = array.astype(bool)
    else:
        flags = np.fromiter((_vote(v) for v in array.ravel().tolist()), dtype=bool, count=array.size)
        flags = flags.reshape(array.shape)
    votes = flags.sum(axis=0).astype(np.int64)
    return VoteResult(votes, votes > k, n, k)


# ---------------------------------------------------------------------------------------------
# medoid standpoints


def medoid_ranking(vectors: Any) -> list[tuple[int, float]]:
    """``[(index, mean similarity), …]`` best first: m_i = (x_i · Σ_j x_j − x_i · x_i) / (n − 1)
    over L2-normalised rows (module docstring); ties by index; one row gives ``[(0, nan)]``."""
    x = unit_rows(vectors)
    n = x.shape[0]
    if n == 0:
        return []
    if n == 1:
        return [(0, float("nan"))]
    total = np.asarray(x.sum(axis=0)).ravel()
    if isinstance(x, np.ndarray):
        self_sim = np.einsum("ij,ij->i", x, x)
    else:
        self_sim = np.asarray(x.multiply(x).sum(axis=1)).ravel()
    mean = (np.asarray(x @ total).ravel() - self_sim) / (n - 1)
    order = np.lexsort((np.arange(n), -mean))
    return [(int(i), float(mean[i])) for i in order]


@dataclass(frozen=True)
class EntailmentCheck:
    """One candidate's check: P(standpoint ⊨ source), P(source ⊨ standpoint), passed."""

    index: int
    forward: float
    backward: float
    passed: bool


@dataclass(frozen=True)
class MedoidChoice:
    """A group's medoid: its members, the chosen index (None when no candidate passed), the
    chosen member's mean similarity (None when nothing was chosen or the group has one
    member), and every check in the order tried."""

    group: Hashable
    members: tuple[int, ...]
    chosen: int | None
    mean_similarity: float | None
    checks: tuple[EntailmentCheck, ...]


def _medoid_plan(
    standpoints: Sequence[str],
    sources: Sequence[str],
    groups: Sequence[Hashable],
    tau: float,
    embedder: Embedder | None,
    vectors: Any,
) -> list[tuple[Hashable, IntArray, list[tuple[int, float]]]]:
    n = len(standpoints)
    if len(sources) != n or len(groups) != n:
        raise ValueError(f"{n} standpoints, {len(sources)} sources and {len(groups)} groups: need one of each per item")
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau must be in [0, 1], got {tau}")
    x = embed_or_check(standpoints, embedder, vectors)
    plan = []
    for members in group_members(n, groups):
        ranking = [(int(members[i]), m) for i, m in medoid_ranking(x[members])]
        plan.append((groups[int(members[0])], members, ranking))
    return plan


def _choice(
    group: Hashable, members: IntArray, ranking: list[tuple[int, float]], checks: list[EntailmentCheck]
) -> MedoidChoice:
    mean = dict(ranking)
    chosen = checks[-1].index if checks and checks[-1].passed else None
    value = None if chosen is None or math.isnan(mean[chosen]) else mean[chosen]
    return MedoidChoice(group, tuple(members.tolist()), chosen, value, tuple(checks))


def select_medoids(
    standpoints: Sequence[str],
    sources: Sequence[str],
    groups: Sequence[Hashable],
    nli: Entailment,
    *,
    tau: float = 0.6,
    embedder: Embedder | None = None,
    vectors: Any = None,
    max_tries: int | None = None,
) -> list[MedoidChoice]:
    """The medoid standpoint of each group, checked by bidirectional entailment with its source
    sentence (module docstring); groups in order of first appearance. ``max_tries`` caps the
    candidates checked per group (None: all)."""
    choices = []
    for group, members, ranking in _medoid_plan(standpoints, sources, groups, tau, embedder, vectors):
        checks: list[EntailmentCheck] = []
        for index, _ in ranking[:max_tries]:
            a, b = standpoints[index], sources[index]
            forward, backward = float(nli(a, b)), float(nli(b, a))
            checks.append(EntailmentCheck(index, forward, backward, forward >= tau and backward >= tau))
            if checks[-1].passed:
                break
        choices.append(_choice(group, members, ranking, checks))
    return choices


async def select_medoids_async(
    standpoints: Sequence[str],
    sources: Sequence[str],
    groups: Sequence[Hashable],
    nli: AsyncEntailment,
    *,
    tau: float = 0.6,
    embedder: Embedder | None = None,
    vectors: Any = None,
    max_tries: int | None = None,
) -> list[MedoidChoice]:
    """:func:`select_medoids` with an async NLI callable (an NLI model behind a backend)."""
    choices = []
    for group, members, ranking in _medoid_plan(standpoints, sources, groups, tau, embedder, vectors):
        checks: list[EntailmentCheck] = []
        for index, _ in ranking[:max_tries]:
            a, b = standpoints[index], sources[index]
            forward, backward = float(await nli(a, b)), float(await nli(b, a))
            checks.append(EntailmentCheck(index, forward, backward, forward >= tau and backward >= tau))
            if checks[-1].passed:
                break
        choices.append(_choice(group, members, ranking, checks))
    return choices
