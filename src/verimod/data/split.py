"""Leakage-free, stratified, deterministic splits.

Contract of :func:`split_records`:

1. Near-duplicate components (RapidFuzz ``fuzz.ratio`` ≥ ``threshold``, exact duplicates
   included; :mod:`verimod.data.neardup`) are units: every component lands in one split. With
   ``groups`` (one key per record, None: no group), records that share a key are linked too —
   all comments under one post, say — so a unit is a connected component of both relations.
2. Split sizes are counts (summing to N) or fractions (summing to 1, turned into counts by
   largest remainder). Each stratum (the tuple of the ``stratify`` fields' values; a missing
   value is its own value) gets a quota per split: its count apportioned in proportion to the
   split sizes, rounded so that quotas sum to the stratum count and, per split, to the split
   size (matrix rounding by largest remainders, repaired greedily).
3. Multi-member components are placed first, largest first (ties in seeded order), each in
   the split with the most unmet quota for its strata among those with room for it; then the
   singletons of each stratum, in seeded order, fill the remaining quotas; leftovers (when a
   component overshot a quota) go where room remains. Sizes are exact whenever the components
   allow it.
4. The report gives every split's size and its stratum proportions beside the whole set's,
   and lists each (split, stratum) whose proportion drifts more than ``tolerance_pp``
   percentage points — the strata that could not be balanced.
Deterministic: the same records, sizes, fields, threshold and seed give the same split.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from verimod.data.neardup import components, near_duplicate_pairs

Stratum = tuple[str, ...]
MISSING = "∅"


class StratumDrift(BaseModel):
    """One (split, stratum) cell whose share differs from the whole set's."""

    model_config = ConfigDict(extra="forbid")

    split: str
    stratum: str
    share_pp: float
    overall_pp: float
    drift_pp: float


class SplitReport(BaseModel):
    """Sizes, stratum shares per split, and the cells that could not be balanced."""

    model_config = ConfigDict(extra="forbid")

    n: int
    names: list[str]
    requested: dict[str, int]
    sizes: dict[str, int]
    stratify: list[str]
    threshold: float
    seed: int
    components: int
    largest_component: int
    shares_pp: dict[str, dict[str, float]]
    overall_pp: dict[str, float]
    unbalanced: list[StratumDrift]
    tolerance_pp: float


def sizes_are_counts(sizes: Sequence[float]) -> bool:
    """Whether ``sizes`` are counts (whole numbers summing to more than 1) rather than fractions;
    ``ValueError`` unless they are one or the other: finite, non-negative, at least one, and
    fractions summing to 1. Needs no data, so a command checks it before reading anything."""
    if not sizes or any(not math.isfinite(s) or s < 0 for s in sizes):
        raise ValueError("sizes must be finite, non-negative numbers, at least one")
    if all(float(s).is_integer() for s in sizes) and sum(sizes) > 1:
        return True
    if abs(sum(sizes) - 1.0) > 1e-9:
        raise ValueError(f"fractions must sum to 1 (they sum to {sum(sizes):g}); or give counts")
    return False


def resolve_sizes(sizes: Sequence[float], n: int) -> list[int]:
    """Counts from ``sizes``: integers summing to ``n``, or fractions summing to 1 (largest
    remainder). ``ValueError`` otherwise."""
    if sizes_are_counts(sizes):
        counts = [int(s) for s in sizes]
        if sum(counts) != n:
            raise ValueError(f"sizes sum to {sum(counts)} but there are {n} records")
        return counts
    return _largest_remainder([s * n for s in sizes], n)


def _largest_remainder(exact: Sequence[float], total: int) -> list[int]:
    floors = [int(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i] - floors[i]), i))
    for i in order[: total - sum(floors)]:
        floors[i] += 1
    return floors


def _quotas(stratum_counts: dict[Stratum, int], sizes: list[int]) -> dict[Stratum, list[int]]:
    """Integer quotas q[k][s] with Σ_s q[k][s] = n_k and Σ_k q[k][s] = size_s."""
    n = sum(sizes)
    quotas = {k: _largest_remainder([c * s / n for s in sizes], c) for k, c in stratum_counts.items()}
    # repair the per-split sums: move one unit at a time from an over-full split to an
    # under-full one, in the stratum where the move best brings both cells to their exact shares
    exact = {k: [c * size / n for size in sizes] for k, c in stratum_counts.items()}
    for _ in range(n * len(sizes) + 1):
        column = [sum(q[s] for q in quotas.values()) for s in range(len(sizes))]
        over = [s for s in range(len(sizes)) if column[s] > sizes[s]]
        if not over:
            break
        under = [s for s in range(len(sizes)) if column[s] < sizes[s]]
        source, target = over[0], under[0]
        # the move that brings both cells closest to their exact shares
        best = max(
            (k for k, q in quotas.items() if q[source] > 0),
            key=lambda k: (
                (quotas[k][source] - exact[k][source]) - (quotas[k][target] - exact[k][target]),
                k,
            ),
        )
        quotas[best][source] -= 1
        quotas[best][target] += 1
    return quotas


def split_records(
    texts: Sequence[str],
    strata: Sequence[Stratum],
    sizes: Sequence[float],
    names: Sequence[str],
    seed: int = 0,
    threshold: float = 95.0,
    tolerance_pp: float = 1.0,
    stratify: Sequence[str] = (),
    groups: Sequence[str | None] | None = None,
) -> tuple[list[str], SplitReport]:
    """The split name of every record, and the report (see the module docstring)."""
    n = len(texts)
    if len(strata) != n:
        raise ValueError("one stratum per text")
    if groups is not None and len(groups) != n:
        raise ValueError("one group key per text")
    if len(names) != len(sizes) or len(set(names)) != len(names):
        raise ValueError("give one distinct name per split size")
    counts = resolve_sizes(sizes, n)
    members = components(n, [*near_duplicate_pairs(texts, threshold), *_group_links(groups)])
    return assign_splits(members, strata, counts, names, seed, threshold, tolerance_pp, stratify)


def assign_splits(
    members: list[list[int]],
    strata: Sequence[Stratum],
    counts: list[int],
    names: Sequence[str],
    seed: int = 0,
    threshold: float = 95.0,
    tolerance_pp: float = 1.0,
    stratify: Sequence[str] = (),
) -> tuple[list[str], SplitReport]:
    """Steps 2–4 of the module docstring for records whose units are known: ``members`` are the
    multi-member units as :func:`~verimod.data.neardup.components` returns them (each sorted,
    ordered by smallest member), ``counts`` the split sizes as counts (:func:`resolve_sizes`).
    :func:`split_records` is this after the join; the distributed split calls it with the
    components of its distributed join, so both place records identically for the same seed."""
    n = len(strata)
    rng = random.Random(seed)
    in_group = {i for group in members for i in group}
    singletons = [i for i in range(n) if i not in in_group]
    stratum_counts = Counter(strata)
    quotas = _quotas(dict(stratum_counts), counts)
    used: dict[Stratum, list[int]] = defaultdict(lambda: [0] * len(counts))
    filled = [0] * len(counts)
    assignment: list[int] = [-1] * n

    def place(items: list[int], split: int) -> None:
        for i in items:
            assignment[i] = split
            used[strata[i]][split] += 1
        filled[split] += len(items)

    order = list(range(len(members)))
    rng.shuffle(order)
    order.sort(key=lambda g: -len(members[g]))
    for g in order:
        group = members[g]
        need = Counter(strata[i] for i in group)
        room = [s for s in range(len(counts)) if counts[s] - filled[s] >= len(group)]
        pool = room or [max(range(len(counts)), key=lambda s: (counts[s] - filled[s], -s))]
        best = max(
            pool,
            key=lambda s: (sum(c * (quotas[k][s] - used[k][s]) for k, c in need.items()), counts[s] - filled[s], -s),
        )
        place(group, best)
    by_stratum: dict[Stratum, list[int]] = defaultdict(list)
    for i in singletons:
        by_stratum[strata[i]].append(i)
    leftovers: list[int] = []
    for k in sorted(by_stratum):
        items = by_stratum[k]
        rng.shuffle(items)
        for i in items:
            open_splits = [s for s in range(len(counts)) if used[k][s] < quotas[k][s] and filled[s] < counts[s]]
            if open_splits:
                place([i], open_splits[0])
            else:
                leftovers.append(i)
    for i in leftovers:
        split = max(range(len(counts)), key=lambda s: (counts[s] - filled[s], -s))
        place([i], split)
    return [names[s] for s in assignment], _report(
        strata, assignment, names, counts, members, seed, threshold, tolerance_pp, stratify
    )


def _group_links(groups: Sequence[str | None] | None) -> list[tuple[int, int, float]]:
    """Pairs (first record of a group, another record of it, 100.0) that chain each group."""
    first: dict[str, int] = {}
    links: list[tuple[int, int, float]] = []
    for i, key in enumerate(groups or ()):
        if key is None:
            continue
        if key in first:
            links.append((first[key], i, 100.0))
        else:
            first[key] = i
    return links


def _label(stratum: Stratum) -> str:
    return "/".join(stratum) if stratum else "(all)"


def _report(
    strata: Sequence[Stratum],
    assignment: list[int],
    names: Sequence[str],
    counts: list[int],
    members: list[list[int]],
    seed: int,
    threshold: float,
    tolerance_pp: float,
    stratify: Sequence[str],
) -> SplitReport:
    n = len(strata)
    overall = {_label(k): 100 * c / n for k, c in Counter(strata).items()} if n else {}
    sizes = Counter(assignment)
    shares: dict[str, dict[str, float]] = {}
    unbalanced = []
    for s, name in enumerate(names):
        cell = Counter(strata[i] for i in range(n) if assignment[i] == s)
        total = sizes.get(s, 0)
        shares[name] = {_label(k): (100 * cell.get(k, 0) / total if total else 0.0) for k in Counter(strata)}
        for label, share in shares[name].items():
            drift = share - overall[label]
            if total and abs(drift) > tolerance_pp:
                unbalanced.append(
                    StratumDrift(split=name, stratum=label, share_pp=share, overall_pp=overall[label], drift_pp=drift)
                )
    return SplitReport(
        n=n,
        names=list(names),
        requested=dict(zip(names, counts, strict=True)),
        sizes={name: sizes.get(s, 0) for s, name in enumerate(names)},
        stratify=list(stratify),
        threshold=threshold,
        seed=seed,
        components=len(members),
        largest_component=max((len(m) for m in members), default=1),
        shares_pp=shares,
        overall_pp=overall,
        unbalanced=unbalanced,
        tolerance_pp=tolerance_pp,
    )


def strata_of(records: Sequence[dict[str, Any]], fields: Sequence[str]) -> list[Stratum]:
    """The stratum of each record: its values of ``fields`` (missing → ``∅``), as strings."""
    return [tuple(MISSING if r.get(f) is None else str(r.get(f)) for f in fields) for r in records]
