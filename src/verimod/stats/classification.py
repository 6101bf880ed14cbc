"""Per-class and macro-averaged F1 over a fixed label set.

For each class c in ``labels``:
    TP_c = #{i : y_true_i = c and y_pred_i = c}
    support_c = #{i : y_true_i = c},   predicted_c = #{i : y_pred_i = c}
    F1_c = 2·TP_c / (support_c + predicted_c),  or ``zero_division`` when the denominator is 0.
Macro-F1 = mean of F1_c over ``labels``. Predictions of a value outside ``labels`` (for
example an INVALID token standing for an unparseable output) are misses for their true class
and false positives for no class. With ``labels`` defaulting to the sorted set of values in
``y_true`` this equals scikit-learn's
``f1_score(y_true, y_pred, labels=sorted(set(y_true)), average="macro", zero_division=0)``.

>>> macro_f1(["a", "a", "b"], ["a", "b", "b"])
0.6666666666666666
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt


def _encode(
    y_true: Sequence[Any] | npt.NDArray[np.integer],
    y_pred: Sequence[Any] | npt.NDArray[np.integer],
    labels: Sequence[Hashable],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Map both sequences to indices into ``labels`` (−1 for values outside ``labels``).

    Integer arrays with integer labels are mapped in vectorised form; anything else through a
    dictionary.
    """
    if (
        isinstance(y_true, np.ndarray)
        and isinstance(y_pred, np.ndarray)
        and y_true.dtype.kind in "iu"
        and y_pred.dtype.kind in "iu"
        and all(isinstance(label, int | np.integer) for label in labels)
    ):
        label_array = np.asarray(labels, dtype=np.int64)
        order = np.argsort(label_array, kind="stable")
        ordered = label_array[order]

        def index_of(values: npt.NDArray[np.integer]) -> npt.NDArray[np.int64]:
            values = values.astype(np.int64, copy=False)
            position = np.clip(np.searchsorted(ordered, values), 0, max(len(ordered) - 1, 0))
            if len(ordered) == 0:
                return np.full(len(values), -1, dtype=np.int64)
            return np.where(ordered[position] == values, order[position], -1)

        return index_of(y_true), index_of(y_pred)
    index = {label: i for i, label in enumerate(labels)}
    true_idx = np.fromiter((index.get(v, -1) for v in y_true), dtype=np.int64, count=len(y_true))
    pred_idx = np.fromiter((index.get(v, -1) for v in y_pred), dtype=np.int64, count=len(y_pred))
    return true_idx, pred_idx


def per_class_f1(
    y_true: Sequence[Any] | npt.NDArray[np.integer],
    y_pred: Sequence[Any] | npt.NDArray[np.integer],
    labels: Sequence[Hashable] | None = None,
    zero_division: float = 0.0,
) -> dict[Any, float]:
    """F1 of each class in ``labels`` (default: sorted distinct values of ``y_true``)."""
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} items but y_pred has {len(y_pred)}")
    if labels is None:
        labels = np.unique(y_true).tolist() if isinstance(y_true, np.ndarray) else sorted(set(y_true))
    labels = list(labels)
    k = len(labels)
    true_idx, pred_idx = _encode(y_true, y_pred, labels)
    hit = (true_idx == pred_idx) & (true_idx >= 0)
    tp = np.bincount(true_idx[hit], minlength=k)[:k]
    support = np.bincount(true_idx[true_idx >= 0], minlength=k)[:k]
    predicted = np.bincount(pred_idx[pred_idx >= 0], minlength=k)[:k]
    denominator = support + predicted
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(denominator > 0, 2.0 * tp / np.maximum(denominator, 1), zero_division)
    return {label: float(value) for label, value in zip(labels, f1, strict=True)}


def macro_f1(
    y_true: Sequence[Any] | npt.NDArray[np.integer],
    y_pred: Sequence[Any] | npt.NDArray[np.integer],
    labels: Sequence[Hashable] | None = None,
    zero_division: float = 0.0,
) -> float:
    """Unweighted mean of :func:`per_class_f1` over ``labels``; 0.0 when there are no labels."""
    scores = per_class_f1(y_true, y_pred, labels, zero_division)
    return float(np.mean(list(scores.values()))) if scores else 0.0
