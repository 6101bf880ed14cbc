"""Training the span scorer (:mod:`~verimod.models.baseline.target`), and cross-fitted spans.

Training texts are those whose reference target occurs in the text as a candidate span
(explicit targets, and implicit ones that are written out, e.g. ``某些人``); every occurrence
is a positive. Each text contributes its positives, every candidate overlapping one (the hard
negatives: ``小县城公务`` for ``小县城公务员``) and at most ``negatives`` other candidates drawn
with a seeded RNG.

The model is a conditional logit: it maximises ``Σ_texts log Σ_gold softmax(scores)`` minus
``‖w‖² / (2c)`` with L-BFGS (deterministic). Lexicon features are computed leave-one-out: a
text's own target does not count, so the model learns what a *previously seen* target string
is worth.

:func:`out_of_fold_spans` gives every training text the best span found by a scorer that did
not see it (``folds``-fold cross-fitting); the field classifiers learn from those spans, as
imperfect as the ones they get at prediction time. The candidate rows are built once, with
the leave-one-out lexicon of all training texts, and each fold refits on its share of them.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Final

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from verimod.models.baseline.target import (
    SpanFeatures,
    SpanScorer,
    candidate_spans,
    length_feature,
    substrings,
)

NO_TARGET: Final = "no_clear_target"


class _Lexicon:
    """Training targets with counts, for leave-one-out lexicon features."""

    def __init__(self, targets: Sequence[str]) -> None:
        self.counts = Counter(t for t in targets if t and t != NO_TARGET)
        self.part_counts: Counter[str] = Counter()
        for target, count in self.counts.items():
            for part in substrings(target):
                self.part_counts[part] += count

    def flags(self, span: str, own: str) -> tuple[bool, bool]:
        """(``span`` is another record's target, ``span`` is a proper part of one)."""
        whole = self.counts.get(span, 0) - (1 if span == own else 0)
        part = self.part_counts.get(span, 0) - self.counts.get(span, 0) - (1 if span != own and span in own else 0)
        return whole > 0, part > 0


def _occurrences(text: str, target: str) -> list[tuple[int, int]]:
    found, start = [], text.find(target)
    while start >= 0:
        found.append((start, start + len(target)))
        start = text.find(target, start + 1)
    return found


class SpanTrainingSet:
    """The candidate rows of the training texts, built once (see the module docstring)."""

    def __init__(self, texts: Sequence[str], targets: Sequence[str], max_len: int, negatives: int, seed: int) -> None:
        self.max_len = max_len
        rng = random.Random(seed)
        lexicon = _Lexicon(targets)
        chosen = [k for k, (text, target) in enumerate(zip(texts, targets, strict=True)) if _has_gold(text, target)]
        index: dict[str, int] = {}
        ids = index.setdefault
        rows: list[list[int]] = []
        positive: list[bool] = []
        bounds = [0]
        used: list[int] = []
        for k in chosen:
            text, target = texts[k], targets[k]
            spans = candidate_spans(text, max_len)
            gold = set(_occurrences(text, target)) & set(spans)
            if not gold:  # the target is not a candidate (too long, or with punctuation)
                continue
            near = [s for s in spans if s not in gold and any(s[0] < g[1] and g[0] < s[1] for g in gold)]
            excluded = gold.union(near)
            far = [s for s in spans if s not in excluded]
            if len(far) > negatives:
                far = rng.sample(far, negatives)
            pos = SpanFeatures(text)
            start = [[ids(f, len(index)) for f in feats] for feats in pos.start]
            end = [[ids(f, len(index)) for f in feats] for feats in pos.end]
            start2 = [ids(f, len(index)) for f in pos.start2]
            end2 = [ids(f, len(index)) for f in pos.end2]
            inner = [ids(f, len(index)) for f in pos.inner]
            for (i, j), label in [*((s, True) for s in sorted(gold)), *((s, False) for s in near + far)]:
                span = text[i:j]
                row = start[i] + end[j] + inner[i:j]
                row.append(ids(length_feature(j - i), len(index)))
                if j - i >= 2:
                    row += (start2[i], end2[j])
                if span.isascii():
                    row.append(ids("ASCII", len(index)))
                whole, part = lexicon.flags(span, target)
                if whole:
                    row += (ids("LEX", len(index)), ids("W=" + span, len(index)))
                elif part:
                    row.append(ids("LEXPART", len(index)))
                rows.append(row)
                positive.append(label)
            bounds.append(len(rows))
            used.append(k)
        self.texts: list[int] = used
        self.names: list[str] = sorted(index)
        remap = np.empty(len(index), dtype=np.int64)
        for new, name in enumerate(self.names):
            remap[index[name]] = new
        indptr = np.cumsum([0, *map(len, rows)], dtype=np.int64)
        flat = np.fromiter((c for row in rows for c in row), dtype=np.int64, count=int(indptr[-1]))
        matrix = sp.csr_matrix((np.ones(flat.size), remap[flat], indptr), shape=(len(rows), len(self.names)))
        matrix.sum_duplicates()
        self.matrix = matrix
        self.positive = np.asarray(positive, dtype=bool)
        self.bounds = np.asarray(bounds, dtype=np.int64)

    def fit(self, c: float, exclude: set[int] | None = None) -> np.ndarray:
        """Weights (parallel to :attr:`names`) from every training text except those in
        ``exclude`` (indices into the original texts)."""
        keep = [g for g, k in enumerate(self.texts) if not exclude or k not in exclude]
        if not keep:
            return np.zeros(len(self.names))
        sizes = self.bounds[1:] - self.bounds[:-1]
        rows = np.concatenate([np.arange(self.bounds[g], self.bounds[g + 1]) for g in keep])
        bounds = np.concatenate(([0], np.cumsum(sizes[keep])))
        return _fit_conditional_logit(self.matrix[rows], self.positive[rows], bounds, c)


def _has_gold(text: str, target: str) -> bool:
    return target != NO_TARGET and bool(target) and target in text


def _fit_conditional_logit(matrix: sp.csr_matrix, positive: np.ndarray, bounds: np.ndarray, c: float) -> np.ndarray:
    from scipy.optimize import minimize  # training only

    starts = bounds[:-1]
    group = np.repeat(np.arange(starts.size), np.diff(bounds))
    matrix_t = matrix.T.tocsr()

    def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
        scores = matrix @ w
        top = np.maximum.reduceat(scores, starts)
        e = np.exp(scores - top[group])
        total = np.add.reduceat(e, starts)
        gold_scores = np.where(positive, scores, -np.inf)
        top_gold = np.maximum.reduceat(gold_scores, starts)
        e_gold = np.exp(gold_scores - top_gold[group])
        total_gold = np.add.reduceat(e_gold, starts)
        loss = float(np.sum(top + np.log(total) - top_gold - np.log(total_gold))) + 0.5 * float(w @ w) / c
        grad = matrix_t @ (e / total[group] - e_gold / total_gold[group]) + w / c
        return loss, grad

    with threadpool_limits(limits=1):  # competing BLAS/OpenMP pools slow small problems tenfold
        result = minimize(
            objective, np.zeros(matrix.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 2000, "gtol": 1e-6}
        )
    return np.asarray(result.x, dtype=np.float64)


def fit_span_scorer(
    texts: Sequence[str],
    targets: Sequence[str],
    max_len: int = 10,
    c: float = 3.0,
    negatives: int = 64,
    seed: int = 0,
) -> SpanScorer:
    """Train the span scorer on ``(text, reference target)`` pairs (module docstring)."""
    data = SpanTrainingSet(texts, targets, max_len, negatives, seed)
    return SpanScorer(data.names, data.fit(c), targets, max_len)


def out_of_fold_spans(
    texts: Sequence[str], data: SpanTrainingSet, targets: Sequence[str], folds: int, c: float, seed: int
) -> list[tuple[str, float] | None]:
    """The best span of every text by a scorer fitted without that text's fold (folds drawn
    with ``seed``; the fold's scorer knows only the other folds' targets as its lexicon)."""
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    folds = max(1, min(folds, len(texts)))
    spans: list[tuple[str, float] | None] = [None] * len(texts)
    for k in range(folds):
        held = set(order[k::folds])
        lexicon = [t for i, t in enumerate(targets) if i not in held]
        scorer = SpanScorer(data.names, data.fit(c, held), lexicon, data.max_len)
        held_rows = sorted(held)
        for i, span in zip(held_rows, scorer.best_spans([texts[i] for i in held_rows]), strict=True):
            spans[i] = span
    return spans
