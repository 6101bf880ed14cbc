"""ToxiREX evaluation of predictions against several annotations per comment.

:func:`evaluate` computes, from annotation and prediction records (no model call, so stored
predictions re-score bit-identically):

- per classification variable (binary, categorical, multi-label: ``toxicity`` …
  ``implStereotype``), per error-propagation setting (``propagated``, ``conditional``,
  ``optimistic``, ``cond-tokens``) and per annotation mode (``all``, ``random``, ``max``):
  weighted precision, recall and F1 beside the analytic Prior baseline (Σ_c p_c²; see
  :mod:`~verimod.tasks.toxirex.evaluation_metrics`), the number of items and of invalid
  predictions among them (item selection: :mod:`~verimod.tasks.toxirex.evaluation_items`);
  for ``random`` each number is the median over the draws that have at least one item for
  the variable (medians taken separately), and ``nonempty_share`` says what share of the draws
  that is; when fewer than half of the draws have an item, the scores are undefined (NaN,
  shown "n/a") — a median of the few non-empty draws would stand for a sample that mostly does
  not exist. In the other modes ``nonempty_share`` is 1 or 0, and a variable without items
  has undefined scores (never 100 % of nothing). ``majority`` rows also count the comments left
  out for want of a majority (``n_no_majority``). The Prior is computed on the same items'
  gold labels, ``<not reached>`` included (propagated);
- per token variable and annotation mode: the mean Jaccard index over the items where both
  sides reached the variable and at least one selected a token (``n_both_empty`` counted apart);
- summary-sentence accuracy (:mod:`~verimod.tasks.toxirex.summaries`), over all annotators;
- per attitude, the ordinal error table (off by 0 / 1 / 2 / 3+ steps, Not applicable apart)
  over the comments whose predicted summary is identical or a small difference to an
  annotator's, against that annotator (``attitudes_matched_only=True``, as in the paper), or
  over every ``all``-mode item where both sides reached the attitude.

Attitudes are ordinal and free-text variables have no fixed classes: neither gets an F1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from verimod.tasks.toxirex.evaluation_items import (
    DEFAULT_MAX_ON,
    MODES,
    SETTINGS,
    CommentItem,
    Mode,
    Pair,
    Setting,
    all_pairs,
    comment_items,
    majority_pairs,
    max_pairs,
    random_draws,
    setting_labels,
    token_agreement,
)
from verimod.tasks.toxirex.evaluation_metrics import (
    OrdinalTable,
    TokenUnit,
    ordinal_error_table,
    prior_score,
    prior_score_multilabel,
    weighted_prf,
    weighted_prf_multilabel,
)
from verimod.tasks.toxirex.schema import AnnotationRecord, Attitude, PredictionRecord
from verimod.tasks.toxirex.stopping import ATTITUDE_VARIABLES, VARIABLE_BY_NAME, VARIABLES
from verimod.tasks.toxirex.summaries import SummaryAccuracy, summary_accuracy

#: Variables scored with weighted P/R/F1.
CLASSIFICATION_VARIABLES: tuple[str, ...] = tuple(
    v.name for v in VARIABLES if v.kind in ("binary", "categorical", "multilabel")
)
TOKEN_VARIABLES: tuple[str, ...] = tuple(v.name for v in VARIABLES if v.kind == "tokens")


@dataclass(frozen=True, slots=True)
class ScoreRow:
    """Weighted P/R/F1 and the Prior baseline of one variable in one setting and mode."""

    variable: str
    setting: str
    mode: str
    n: float
    precision: float
    recall: float
    f1: float
    prior: float
    n_invalid: float
    nonempty_share: float = 1.0
    n_no_majority: float = 0.0


@dataclass(frozen=True, slots=True)
class JaccardRow:
    """Mean Jaccard index of one token variable in one annotation mode."""

    variable: str
    mode: str
    n: float
    mean: float
    n_both_empty: float
    nonempty_share: float = 1.0


def score_variable(
    pairs: Sequence[Pair], variable: str, setting: Setting, token_threshold: float = 0.5, unit: TokenUnit = "token"
) -> tuple[float, float, float, float, int, int]:
    """``(precision, recall, f1, prior, n, n_invalid)`` of one variable on one list of items."""
    kind = VARIABLE_BY_NAME[variable].kind
    if kind not in ("binary", "categorical", "multilabel"):
        raise ValueError(f"{variable} is a {kind} variable; it has no F1")
    gold, pred, invalid = setting_labels(pairs, variable, setting, token_threshold, unit)
    if kind == "multilabel":
        prf, prior = weighted_prf_multilabel(gold, pred), prior_score_multilabel(gold)
    else:
        prf, prior = weighted_prf(gold, pred), prior_score(gold)
    return prf.precision, prf.recall, prf.f1, prior, len(gold), invalid


def _jaccard(pairs: Sequence[Pair], variable: str, unit: TokenUnit) -> tuple[float, float, float]:
    scores = []
    both_empty = 0
    for pair in pairs:
        if variable not in pair.gold.reached or variable not in pair.pred.reached:
            continue
        score = token_agreement(pair, variable, unit)
        if score is None:
            both_empty += 1
        else:
            scores.append(score)
    return float(len(scores)), (float(np.mean(scores)) if scores else math.nan), float(both_empty)


def _median(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return float(np.median(finite)) if finite else math.nan


def aggregate_samples(
    samples: Sequence[Sequence[float]], n_index: int, counts: Sequence[int] = ()
) -> tuple[list[float], float]:
    """The reported numbers over the samples of one mode, and the share of samples with at
    least one item (``sample[n_index]`` > 0). Each number is the median over the non-empty
    samples; when fewer than half of the samples are non-empty, the scores are NaN and the
    counts (``n_index`` and ``counts``) the medians over all samples."""
    if not samples:
        raise ValueError("no samples")
    nonempty = [sample for sample in samples if sample[n_index] > 0]
    share = len(nonempty) / len(samples)
    kept = {n_index, *counts}
    if share < 0.5:
        return [_median([s[k] for s in samples]) if k in kept else math.nan for k in range(len(samples[0]))], share
    return [_median([s[k] for s in nonempty]) for k in range(len(samples[0]))], share


@dataclass(frozen=True)
class EvaluationReport:
    """Everything :func:`evaluate` computes, with the configuration that produced it."""

    scores: tuple[ScoreRow, ...]
    jaccard: tuple[JaccardRow, ...]
    summary: SummaryAccuracy
    attitudes: dict[str, OrdinalTable]
    n_comments: int
    n_annotations: int
    n_missing: int
    n_invalid: int
    config: dict[str, Any] = field(default_factory=dict)

    def score(self, variable: str, setting: str = "propagated", mode: str = "all") -> ScoreRow:
        """The row of one variable, setting and mode (KeyError when not computed)."""
        for row in self.scores:
            if (row.variable, row.setting, row.mode) == (variable, setting, mode):
                return row
        raise KeyError((variable, setting, mode))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready report (NaN written as null)."""

        def clean(value: Any) -> Any:
            if isinstance(value, float) and math.isnan(value):
                return None
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [clean(v) for v in value]
            return value

        return clean(
            {
                "n_comments": self.n_comments,
                "n_annotations": self.n_annotations,
                "n_missing": self.n_missing,
                "n_invalid": self.n_invalid,
                "config": self.config,
                "scores": [asdict(r) for r in self.scores],
                "jaccard": [asdict(r) for r in self.jaccard],
                "summary": self.summary.to_dict(),
                "attitudes": {k: t.to_dict() for k, t in self.attitudes.items()},
            }
        )


def _attitude_pairs(items: Sequence[CommentItem], summary: SummaryAccuracy, matched_only: bool) -> list[Pair]:
    if not matched_only:
        return all_pairs(items)
    best = {r.comment_id: r.annotator for r in summary.results if r.outcome in ("identical", "small_difference")}
    out = []
    for item in items:
        annotator = best.get(item.comment_id)
        for name, gold in item.annotations:
            if name == annotator:
                out.append(Pair(item.comment_id, name, gold, item.pred))
    return out


def attitude_tables(pairs: Sequence[Pair]) -> dict[str, OrdinalTable]:
    """Ordinal error table per attitude over the pairs where both sides reached it."""
    tables = {}
    for variable in ATTITUDE_VARIABLES:
        values = [
            (Attitude(p.gold.values[variable]), Attitude(p.pred.values[variable]))
            for p in pairs
            if variable in p.gold.reached and variable in p.pred.reached
        ]
        tables[variable] = ordinal_error_table(values)
    return tables


def evaluate(
    annotations: Sequence[AnnotationRecord],
    predictions: Sequence[PredictionRecord],
    *,
    variables: Sequence[str] | None = None,
    settings: Sequence[Setting] = SETTINGS,
    modes: Sequence[Mode] = MODES,
    n_draws: int = 100,
    seed: int = 0,
    max_on: Sequence[str] = DEFAULT_MAX_ON,
    token_threshold: float = 0.5,
    token_unit: TokenUnit = "token",
    attitudes_matched_only: bool = True,
) -> EvaluationReport:
    """Score ``predictions`` against ``annotations`` (see the module docstring).

    ``variables``: classification variables to score (default :data:`CLASSIFICATION_VARIABLES`).
    ``token_unit="char"`` compares token selections by characters (Chinese spans).
    """
    chosen = tuple(variables) if variables is not None else CLASSIFICATION_VARIABLES
    bad = [v for v in chosen if v not in CLASSIFICATION_VARIABLES]
    if bad:
        raise ValueError(f"not classification variables: {', '.join(bad)}")
    for name, options, given in (("setting", SETTINGS, settings), ("mode", MODES, modes)):
        wrong = [g for g in given if g not in options]
        if wrong:
            raise ValueError(f"unknown {name}(s) {', '.join(wrong)}; choose from {', '.join(options)}")
    items, missing = comment_items(annotations, predictions)
    samples: dict[str, list[list[Pair]]] = {}
    for mode in modes:
        if mode == "all":
            samples[mode] = [all_pairs(items)]
        elif mode == "max":
            samples[mode] = [max_pairs(items, max_on)]
        elif mode == "majority":
            samples[mode] = [majority_pairs(items)]
        else:
            samples[mode] = random_draws(items, n_draws, seed)
    rows = []
    for variable in chosen:
        for setting in settings:
            for mode in modes:
                draws = [score_variable(p, variable, setting, token_threshold, token_unit) for p in samples[mode]]
                (p, r, f, prior, n, inv), share = aggregate_samples(draws, n_index=4, counts=(5,))
                undecided = sum(variable in pair.gold.undecided for pair in samples[mode][0])  # majority only
                rows.append(ScoreRow(variable, setting, mode, n, p, r, f, prior, inv, share, float(undecided)))
    jaccard_rows = []
    for variable in TOKEN_VARIABLES:
        for mode in modes:
            stats = [_jaccard(p, variable, token_unit) for p in samples[mode]]
            (n, mean, empty), share = aggregate_samples(stats, n_index=0, counts=(2,))
            jaccard_rows.append(JaccardRow(variable, mode, n, mean, empty, share))
    summary = summary_accuracy((i.comment_id, i.pred_reasoning, i.gold_reasonings) for i in items)
    attitudes = attitude_tables(_attitude_pairs(items, summary, attitudes_matched_only))
    config = {
        "settings": list(settings),
        "modes": list(modes),
        "n_draws": n_draws,
        "seed": seed,
        "max_on": list(max_on),
        "token_threshold": token_threshold,
        "token_unit": token_unit,
        "attitudes_matched_only": attitudes_matched_only,
    }
    return EvaluationReport(
        tuple(rows),
        tuple(jaccard_rows),
        summary,
        attitudes,
        n_comments=len(items),
        n_annotations=sum(len(i.annotations) for i in items),
        n_missing=missing,
        n_invalid=sum(i.pred.invalid for i in items),
        config=config,
    )
