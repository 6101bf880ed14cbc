"""Pure metrics of the ToxiREX evaluation: weighted P/R/F1, the Prior baseline, Jaccard, ordinal errors.

**Weighted precision, recall, F1** (single-label). For each class c of the gold labels, with
TP_c true positives, pred_c items predicted c and support_c items of gold class c (n items):

    P_c = TP_c / pred_c   (0 when pred_c = 0),    R_c = TP_c / support_c,
    F1_c = 2·TP_c / (support_c + pred_c),
    weighted X = Σ_c (support_c / n) · X_c

Classes that are only predicted have support 0 and weight 0 (their false positives still lower
no class's precision but cost recall of the true classes). Equal to scikit-learn's
``precision_recall_fscore_support(y_true, y_pred, average="weighted", zero_division=0)``.

**Multi-label** (``implTemporality``): each label l is a binary problem over the items
(TP_l, pred_l, support_l = items whose gold set contains l); the weights are
support_l / Σ_l support_l. Equal to scikit-learn's ``average="weighted"`` on indicator matrices.

**Prior baseline**, analytically. A guesser that ignores the input and draws class c with the
probability p_c = support_c / n of the gold distribution has, in expectation,
TP_c = n·p_c·p_c and pred_c = n·p_c, so P_c = R_c = F1_c = p_c and

    weighted P = weighted R = weighted F1 = Σ_c p_c²                       (single-label)

Multi-label: the guesser includes each label l independently with probability
q_l = support_l / n, so P_l = R_l = F1_l = q_l and weighted P = R = F1 = Σ_l q_l² / Σ_l q_l.
These are ratios of expectations, the limit for many items; the expected F1 of a finite sample
differs by O(1/n) (a test checks the formula against a large simulation).

**Jaccard index** of token selections A, B: J = |A ∩ B| / |A ∪ B| over the *sets* of tokens
(``unit="token"``), or over the *multisets* of non-space characters of the tokens
(``unit="char"``: J = Σ_x min(a_x, b_x) / Σ_x max(a_x, b_x), text NFKC-normalised), which
credits partly overlapping Chinese spans. Both selections empty: undefined (None), left out of
means and counted apart.

**Ordinal attitude errors**: |rank(pred) − rank(gold)| on Very low = 0 … Very high = 4,
bucketed 0 / 1 / 2 / 3+. "Not applicable" is not on the scale: a pair where both are Not
applicable is counted as ``na_both`` (agreement, but no step), a pair where exactly one is as
``na_mismatch``; neither enters the step buckets.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from verimod.tasks.toxirex.schema import Attitude, attitude_rank

TokenUnit = Literal["token", "char"]
STEP_BUCKETS: tuple[str, ...] = ("0", "1", "2", "3+")


@dataclass(frozen=True, slots=True)
class PRF:
    """Weighted precision, recall and F1 over ``n`` items (NaN when n = 0)."""

    precision: float
    recall: float
    f1: float
    n: int


_EMPTY = PRF(math.nan, math.nan, math.nan, 0)


def weighted_prf(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> PRF:
    """Support-weighted precision, recall and F1 of single-label predictions (module docstring).

    >>> weighted_prf(["a", "a", "b"], ["a", "b", "b"]).f1
    0.6666666666666666
    """
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} items but y_pred has {len(y_pred)}")
    n = len(y_true)
    if n == 0:
        return _EMPTY
    support = Counter(y_true)
    predicted = Counter(y_pred)
    tp = Counter(t for t, p in zip(y_true, y_pred, strict=True) if t == p)
    precision = recall = f1 = 0.0
    for c, s in support.items():
        w = s / n
        precision += w * (tp[c] / predicted[c] if predicted[c] else 0.0)
        recall += w * tp[c] / s
        f1 += w * 2 * tp[c] / (s + predicted[c])
    return PRF(precision, recall, f1, n)


def weighted_prf_multilabel(y_true: Sequence[Collection[Hashable]], y_pred: Sequence[Collection[Hashable]]) -> PRF:
    """Support-weighted P/R/F1 of multi-label predictions (sets of labels per item).

    >>> weighted_prf_multilabel([{"past"}, {"past", "future"}], [{"past"}, {"past"}]).recall
    0.6666666666666666
    """
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} items but y_pred has {len(y_pred)}")
    support: Counter[Hashable] = Counter(label for labels in y_true for label in set(labels))
    total = sum(support.values())
    if not y_true or total == 0:
        return PRF(math.nan, math.nan, math.nan, len(y_true))
    predicted: Counter[Hashable] = Counter(label for labels in y_pred for label in set(labels))
    tp: Counter[Hashable] = Counter(label for t, p in zip(y_true, y_pred, strict=True) for label in set(t) & set(p))
    precision = recall = f1 = 0.0
    for label, s in support.items():
        w = s / total
        precision += w * (tp[label] / predicted[label] if predicted[label] else 0.0)
        recall += w * tp[label] / s
        f1 += w * 2 * tp[label] / (s + predicted[label])
    return PRF(precision, recall, f1, len(y_true))


def prior_score(y_true: Sequence[Hashable]) -> float:
    """Weighted P = R = F1 of the Prior guesser: Σ_c p_c² (NaN for no items).

    >>> prior_score(["a", "a", "a", "b"])
    0.625
    """
    n = len(y_true)
    return sum((s / n) ** 2 for s in Counter(y_true).values()) if n else math.nan


def prior_score_multilabel(y_true: Sequence[Collection[Hashable]]) -> float:
    """Weighted P = R = F1 of the multi-label Prior guesser: Σ_l q_l² / Σ_l q_l (NaN if undefined)."""
    n = len(y_true)
    support = Counter(label for labels in y_true for label in set(labels))
    total = sum(support.values())
    if n == 0 or total == 0:
        return math.nan
    return sum((s / n) ** 2 for s in support.values()) / (total / n)


def _chars(tokens: Iterable[str]) -> Counter[str]:
    return Counter(ch for t in tokens for ch in unicodedata.normalize("NFKC", t) if not ch.isspace())


def jaccard(a: Iterable[str], b: Iterable[str], unit: TokenUnit = "token") -> float | None:
    """Jaccard index of two token selections (module docstring); None when both are empty.

    >>> jaccard(["That", "chick", "her"], ["chick", "her"])
    0.6666666666666666
    >>> jaccard(["那个女的"], ["女的"], unit="char")
    0.5
    """
    if unit == "char":
        ca, cb = _chars(a), _chars(b)
        union = sum((ca | cb).values())
        return sum((ca & cb).values()) / union if union else None
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else None


@dataclass(frozen=True, slots=True)
class OrdinalTable:
    """Counts of ordinal step errors (0 / 1 / 2 / 3+) and of Not applicable pairs."""

    steps: dict[str, int]
    na_both: int
    na_mismatch: int

    @property
    def n(self) -> int:
        """All pairs counted."""
        return sum(self.steps.values()) + self.na_both + self.na_mismatch

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts."""
        return {**self.steps, "na_both": self.na_both, "na_mismatch": self.na_mismatch, "n": self.n}


def ordinal_error_table(pairs: Iterable[tuple[Attitude, Attitude]]) -> OrdinalTable:
    """Step errors of ``(gold, pred)`` attitude pairs (module docstring).

    >>> t = ordinal_error_table([(Attitude.HIGH, Attitude.LOW), (Attitude.NOT_APPLICABLE, Attitude.LOW)])
    >>> t.steps["2"], t.na_mismatch
    (1, 1)
    """
    steps = dict.fromkeys(STEP_BUCKETS, 0)
    na_both = na_mismatch = 0
    for gold, pred in pairs:
        g, p = attitude_rank(Attitude(gold)), attitude_rank(Attitude(pred))
        if g is None and p is None:
            na_both += 1
        elif g is None or p is None:
            na_mismatch += 1
        else:
            steps[STEP_BUCKETS[min(abs(g - p), 3)]] += 1
    return OrdinalTable(steps, na_both, na_mismatch)
