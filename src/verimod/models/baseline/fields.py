"""Per-field linear classifiers and exact joint decoding under the VARM codebook.

- :class:`LinearSoftmax` holds one field's weights over the TF-IDF columns: ``weights`` is
  ``(K, V)`` and ``bias`` ``(K,)``, with one row per value of the field's *full* vocabulary
  (:data:`verimod.tasks.varm.codebook.VOCABULARY` order). Probabilities are
  ``softmax(X @ weights.T + bias)``, computed in numpy only. Values never seen in training
  get a zero weight row and the bias :data:`UNSEEN_LOGIT`, so their probability is tiny but
  positive and every log-probability is finite.
- :func:`fit_linear_softmax` trains one field with scikit-learn's ``LogisticRegression``
  (L2, lbfgs; multinomial for three or more values) and exports its coefficients; a binary
  model ``sigmoid(w·x + c)`` becomes the rows ``[0, w]`` and biases ``[0, c]`` (the same
  probabilities as a two-way softmax).
- :data:`COMBOS` enumerates every combination of the five discrete fields that the codebook
  allows (``codebook_violations_of`` with a placeholder target, which is ``no_clear_target``
  exactly when the type is). :func:`joint_decode` returns, for each row, the combination that
  maximises the sum of the five log-probabilities among the allowed ones (ties: the first in
  enumeration order). It is exact: all 50 consistent combinations are scored.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Final

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from verimod.tasks.varm.codebook import DISCRETE_FIELDS, NO_CLEAR_TARGET, VOCABULARY, codebook_violations_of

UNSEEN_LOGIT: Final = -30.0


def _consistent_combos() -> np.ndarray:
    rows = []
    for values in itertools.product(*(VOCABULARY[f] for f in DISCRETE_FIELDS)):
        target = NO_CLEAR_TARGET if values[0] == NO_CLEAR_TARGET else "x"
        if not codebook_violations_of((target, *values)):
            rows.append([VOCABULARY[f].index(v) for f, v in zip(DISCRETE_FIELDS, values, strict=True)])
    return np.asarray(rows, dtype=np.int64)


#: Every codebook-consistent (target_type, explicitness, stance, label, category), as value codes.
COMBOS: Final = _consistent_combos()


class LinearSoftmax:
    """A linear softmax classifier over one field's full vocabulary (see the module docstring)."""

    def __init__(self, field: str, weights: np.ndarray, bias: np.ndarray) -> None:
        classes = VOCABULARY[field]
        if weights.ndim != 2 or weights.shape[0] != len(classes) or bias.shape != (len(classes),):
            raise ValueError(f"{field}: weights {weights.shape} / bias {bias.shape} do not fit {len(classes)} values")
        self.field = field
        self.classes: tuple[str, ...] = classes
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self.bias = np.ascontiguousarray(bias, dtype=np.float64)
        self._weights_t = np.ascontiguousarray(self.weights.T)

    def logits(self, features: sp.csr_matrix) -> np.ndarray:
        """``(N, K)`` decision values."""
        return np.asarray(features @ self._weights_t) + self.bias

    def log_proba(self, features: sp.csr_matrix) -> np.ndarray:
        """``(N, K)`` log-probabilities (log-softmax of the logits)."""
        z = self.logits(features)
        z = z - z.max(axis=1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=1, keepdims=True))

    def contributions(self, indices: np.ndarray, values: np.ndarray, cls: int) -> np.ndarray:
        """How much each present feature pushes towards class ``cls`` against the average class:
        ``x_k · (W[cls, k] − mean_c W[c, k])`` for the given columns."""
        columns = self.weights[:, indices]
        return values * (columns[cls] - columns.mean(axis=0))


def fit_linear_softmax(
    field: str, features: sp.csr_matrix, y: Sequence[str], c: float, class_weight: str | None = None
) -> LinearSoftmax:
    """Train one field's classifier on TF-IDF rows and their gold values."""
    classes = VOCABULARY[field]
    weights = np.zeros((len(classes), features.shape[1]), dtype=np.float64)
    bias = np.full(len(classes), UNSEEN_LOGIT, dtype=np.float64)
    seen = sorted(set(y), key=classes.index)
    if not seen:
        raise ValueError(f"{field}: no training values")
    if len(seen) == 1:
        bias[classes.index(seen[0])] = 0.0
        return LinearSoftmax(field, weights, bias)
    from sklearn.linear_model import LogisticRegression  # training only: prediction needs numpy alone

    model = LogisticRegression(C=c, max_iter=5000, tol=1e-6, class_weight=class_weight)
    with threadpool_limits(limits=1):  # competing BLAS/OpenMP pools slow small problems tenfold
        model.fit(features, np.asarray(y))
    learned = [classes.index(str(v)) for v in model.classes_]
    if len(learned) == 2:
        bias[learned[0]] = 0.0
        weights[learned[1]] = model.coef_[0]
        bias[learned[1]] = model.intercept_[0]
    else:
        for row, k in enumerate(learned):
            weights[k] = model.coef_[row]
            bias[k] = model.intercept_[row]
    return LinearSoftmax(field, weights, bias)


def joint_decode(log_probs: Sequence[np.ndarray], allowed: np.ndarray | None = None) -> np.ndarray:
    """Row-wise index into :data:`COMBOS` of the most probable consistent combination.

    ``log_probs`` holds one ``(N, K_f)`` array per field of :data:`DISCRETE_FIELDS`, in order;
    ``allowed`` (``(N, len(COMBOS))`` booleans) removes combinations for some rows (at least
    one must stay allowed per row).
    """
    if len(log_probs) != len(DISCRETE_FIELDS):
        raise ValueError("one log-probability array per discrete field is needed")
    scores = sum(lp[:, COMBOS[:, f]] for f, lp in enumerate(log_probs))
    assert isinstance(scores, np.ndarray)
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    return np.asarray(scores.argmax(axis=1), dtype=np.int64)
