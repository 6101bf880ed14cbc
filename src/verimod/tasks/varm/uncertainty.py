"""Uncertainty of VARM metrics: bootstrap intervals and paired comparison of two runs.

- :func:`metric_intervals`: for every scalar metric (the Table-1 metrics, mismatch rates and
  Shapley terms), the estimate and a percentile bootstrap 95% interval: items are resampled
  with replacement (``n_resamples`` times, seeded numpy Generator) and every metric recomputed
  on the resample by the same scorer. Resamples where a metric is undefined (None) are left
  out of its quantiles.
- :func:`paired_comparison`: two runs scored on the same reference items. For each metric,
  the difference B − A, its paired-bootstrap interval (the same resampled items for both runs)
  and a two-sided bootstrap p-value (2 · min(P(Δ* ≤ 0), P(Δ* ≥ 0)), capped at 1); and McNemar's
  exact test on the per-item joint record match J: with b = #{J_A = 1, J_B = 0} and
  c = #{J_A = 0, J_B = 1}, p = min(1, 2 · P(X ≤ min(b, c))) for X ~ Binomial(b + c, 1/2)
  (p = 1 when b + c = 0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from verimod.core.errors import InputError
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import ItemScore, VarmScorer, VarmScores

#: Scalar metrics of :class:`VarmScores` reported with intervals (dotted: nested keys).
SCALAR_METRICS: tuple[str, ...] = (
    "label_macro_f1", "category_macro_f1", "target_char_f1", "target_type_macro_f1", "explicitness_macro_f1",
    "stance_macro_f1", "parse_rate", "format_rate", "jrem", "her_c", "her_l",
    "mismatch.target", "mismatch.target_type", "mismatch.explicitness", "mismatch.stance", "mismatch.label",
    "mismatch.category", "shapley.referent", "shapley.stance", "shapley.decision",
)  # fmt: skip


class Interval(BaseModel):
    """An estimate with its percentile bootstrap interval (None where undefined)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    estimate: float | None
    low: float | None
    high: float | None


class MetricDifference(BaseModel):
    """B − A for one metric, with its paired-bootstrap interval and p-value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str
    a: float | None
    b: float | None
    difference: float | None
    low: float | None
    high: float | None
    p_value: float | None


class McNemar(BaseModel):
    """McNemar's exact test on per-item joint record match."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    both: int
    only_a: int
    only_b: int
    neither: int
    p_value: float


class PairedComparison(BaseModel):
    """Two runs on the same items."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    n_resamples: int
    seed: int
    confidence: float
    differences: list[MetricDifference]
    mcnemar: McNemar


def metric_value(scores: VarmScores, metric: str) -> float | None:
    """A scalar metric by name (``jrem``, ``mismatch.target``, ``shapley.referent`` …)."""
    if "." in metric:
        group, key = metric.split(".", 1)
        return getattr(scores, group).get(key)  # type: ignore[no-any-return]
    return getattr(scores, metric)  # type: ignore[no-any-return]


def scorer_of(references: Sequence[VarmReference], items: Sequence[ItemScore]) -> VarmScorer:
    """A scorer holding a run's items again (re-parsing the stored outputs)."""
    scorer = VarmScorer()
    for reference, item in zip(references, items, strict=True):
        scorer.add(
            reference.id, reference, item.output, item.detail if item.status == "error" else None, item.finish_reason
        )
    return scorer


def _resamples(n: int, n_resamples: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))


def _quantiles(values: list[float | None], confidence: float) -> tuple[float | None, float | None]:
    finite = np.array([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if finite.size == 0:
        return None, None
    tail = (1 - confidence) / 2
    return float(np.quantile(finite, tail)), float(np.quantile(finite, 1 - tail))


def metric_intervals(
    scorer: VarmScorer, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> dict[str, Interval]:
    """Every scalar metric with its percentile bootstrap interval (see the module docstring)."""
    n = len(scorer)
    full = scorer.scores()
    draws: dict[str, list[float | None]] = {m: [] for m in SCALAR_METRICS}
    for index in _resamples(n, n_resamples, seed):
        resampled = scorer.scores(index)
        for metric in SCALAR_METRICS:
            draws[metric].append(metric_value(resampled, metric))
    out = {}
    for metric in SCALAR_METRICS:
        low, high = _quantiles(draws[metric], confidence) if n_resamples else (None, None)
        out[metric] = Interval(estimate=metric_value(full, metric), low=low, high=high)
    return out


def mcnemar_exact(j_a: Sequence[int], j_b: Sequence[int]) -> McNemar:
    """McNemar's exact (binomial) test on paired binary outcomes (see the module docstring)."""
    a = np.asarray(j_a, dtype=bool)
    b = np.asarray(j_b, dtype=bool)
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    discordant = only_a + only_b
    if discordant == 0:
        p = 1.0
    else:
        k = min(only_a, only_b)
        tail = sum(math.comb(discordant, i) for i in range(k + 1)) / 2**discordant
        p = min(1.0, 2 * tail)
    return McNemar(both=int((a & b).sum()), only_a=only_a, only_b=only_b, neither=int((~a & ~b).sum()), p_value=p)


def paired_comparison(
    references: Sequence[VarmReference],
    items_a: Sequence[ItemScore],
    items_b: Sequence[ItemScore],
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedComparison:
    """Compare run B with run A on the same items (see the module docstring)."""
    ids_a, ids_b = [i.id for i in items_a], [i.id for i in items_b]
    if ids_a != ids_b or ids_a != [r.id for r in references]:
        if set(ids_a) != set(ids_b):
            raise InputError.at("runs", None, None, "a paired comparison needs the same reference items in both runs")
        order = {item_id: k for k, item_id in enumerate(ids_a)}
        items_b = sorted(items_b, key=lambda item: order[item.id])
    scorer_a, scorer_b = scorer_of(references, items_a), scorer_of(references, items_b)
    full_a, full_b = scorer_a.scores(), scorer_b.scores()
    deltas: dict[str, list[float | None]] = {m: [] for m in SCALAR_METRICS}
    for index in _resamples(len(references), n_resamples, seed):
        sa, sb = scorer_a.scores(index), scorer_b.scores(index)
        for metric in SCALAR_METRICS:
            va, vb = metric_value(sa, metric), metric_value(sb, metric)
            deltas[metric].append(None if va is None or vb is None else vb - va)
    differences = []
    for metric in SCALAR_METRICS:
        va, vb = metric_value(full_a, metric), metric_value(full_b, metric)
        low, high = _quantiles(deltas[metric], confidence)
        finite = [d for d in deltas[metric] if d is not None]
        p = None
        if finite:
            share_le = sum(d <= 0 for d in finite) / len(finite)
            share_ge = sum(d >= 0 for d in finite) / len(finite)
            p = min(1.0, 2 * min(share_le, share_ge))
        differences.append(
            MetricDifference(
                metric=metric,
                a=va,
                b=vb,
                difference=None if va is None or vb is None else vb - va,
                low=low,
                high=high,
                p_value=p,
            )
        )
    return PairedComparison(
        n=len(references),
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        differences=differences,
        mcnemar=mcnemar_exact([i.j for i in items_a], [i.j for i in items_b]),
    )


def per_class_intervals(
    scorer: VarmScorer, field: str = "category", n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> dict[str, Interval]:
    """F1 of every class of ``field`` present in the references, with its percentile bootstrap
    interval (the same resampling as :func:`metric_intervals`; a class absent from a resample's
    references is left out of that resample)."""
    full = scorer.scores().per_class_f1.get(field, {})
    draws: dict[str, list[float | None]] = {label: [] for label in full}
    for index in _resamples(len(scorer), n_resamples, seed):
        resampled = scorer.scores(index).per_class_f1.get(field, {})
        for label in full:
            draws[label].append(resampled.get(label))
    out = {}
    for label, estimate in full.items():
        low, high = _quantiles(draws[label], confidence) if n_resamples else (None, None)
        out[label] = Interval(estimate=estimate, low=low, high=high)
    return out
