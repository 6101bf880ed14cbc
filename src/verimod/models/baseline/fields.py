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
- :func:`record_scores` scores every consistent record under the chain factorisation used by
  the model (category conditional on harmful, stance conditional on non-harmful);
  :func:`decode_records` decides the label by its marginal, then picks the best allowed
  record with that label, and gives the posterior, :func:`marginals`
  the per-field probabilities of that posterior.
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
    field: str,
    features: sp.csr_matrix,
    y: Sequence[str],
    c: float,
    class_weight: str | None = None,
    sample_weight: np.ndarray | None = None,
) -> LinearSoftmax:
    """Train one field's classifier on feature rows, their gold values and optional per-row
    weights. Binary problems use liblinear (fixed ``random_state``: deterministic), three or
    more values multinomial lbfgs."""
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

    if len(seen) == 2:
        model = LogisticRegression(C=c, solver="liblinear", tol=1e-4, class_weight=class_weight, random_state=0)
    else:
        model = LogisticRegression(C=c, max_iter=2000, tol=1e-5, class_weight=class_weight)
    with threadpool_limits(limits=1):  # competing BLAS/OpenMP pools slow small problems tenfold
        model.fit(features, np.asarray(y), sample_weight=sample_weight)
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


_STANCE, _LABEL, _CATEGORY = (DISCRETE_FIELDS.index(f) for f in ("stance", "label", "category"))
_HARMFUL_COMBO: Final = COMBOS[:, _LABEL] == VOCABULARY["label"].index("harmful")


def record_scores(log_probs: dict[str, np.ndarray]) -> np.ndarray:
    """``(N, len(COMBOS))`` log-scores of every consistent record under the chain factorisation

    ``P(record) ∝ P(type) · P(explicitness) · P(label) · [harmful: P(category | harmful);
    non_harmful: P(stance | non_harmful)]``

    — the codebook fixes the stance of a harmful record (attack_or_endorse) and the category of
    a non-harmful one (non_attack), so those factors are 1. ``log_probs`` maps each discrete
    field to ``(N, K_f)`` log-probabilities; ``category`` is read as conditional on harmful
    and ``stance`` as conditional on non_harmful (their other values are ignored)."""
    t, e = log_probs["target_type"], log_probs["target_explicitness"]
    scores = t[:, COMBOS[:, 0]] + e[:, COMBOS[:, 1]] + log_probs["label"][:, COMBOS[:, _LABEL]]
    conditional = np.where(
        _HARMFUL_COMBO,
        log_probs["category"][:, COMBOS[:, _CATEGORY]],
        log_probs["stance"][:, COMBOS[:, _STANCE]],
    )
    return np.asarray(scores + conditional, dtype=np.float64)


def decode_records(scores: np.ndarray, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise index into :data:`COMBOS` of the decided record, and the posterior over the
    allowed records (softmax of ``scores``).

    The label is decided first, by its marginal probability under the posterior (harmful
    when ``P(harmful) ≥ 0.5``), then the most probable allowed record with that label is
    taken (ties: the first in enumeration order). Deciding the label by its marginal rather
    than by the single most probable record keeps a spread-out category (four attack categories
    at 0.25 each) from turning a probably harmful comment into a non-harmful record."""
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    top = scores.max(axis=1, keepdims=True)
    posterior = np.exp(scores - top)
    posterior /= posterior.sum(axis=1, keepdims=True)
    harmful = posterior[:, _HARMFUL_COMBO].sum(axis=1) >= 0.5
    keep = np.where(harmful[:, None], _HARMFUL_COMBO[None, :], ~_HARMFUL_COMBO[None, :])
    chosen = np.where(keep, scores, -np.inf)
    # a row whose decided label has no allowed record keeps the overall best one
    fallback = ~np.isfinite(chosen.max(axis=1))
    chosen[fallback] = scores[fallback]
    best = np.asarray(chosen.argmax(axis=1), dtype=np.int64)
    return best, posterior


def marginals(posterior: np.ndarray) -> list[np.ndarray]:
    """Per discrete field, ``(N, K_f)`` marginal probabilities of a posterior over :data:`COMBOS`."""
    out = []
    for k, f in enumerate(DISCRETE_FIELDS):
        table = np.zeros((len(VOCABULARY[f]), len(COMBOS)))
        table[COMBOS[:, k], np.arange(len(COMBOS))] = 1.0
        out.append(posterior @ table.T)
    return out
