"""Inter-annotator agreement for nominal labels, with item-bootstrap confidence intervals.

Input is a *ratings* matrix: one row per item (unit), one column per annotator, any hashable
labels; a missing rating is ``None`` or NaN, and rows may be ragged (short rows are padded with
missing). For item u, n_uc is the number of annotators who gave category c and m_u = Σ_c n_uc.

Krippendorff's α (nominal, coincidence-matrix form). Only *pairable* items (m_u ≥ 2) count:
    o_ck = Σ_u (n_uc·n_uk − [c = k]·n_uc) / (m_u − 1)       (coincidences)
    n_c = Σ_k o_ck = Σ_u n_uc,   n = Σ_c n_c
    α = 1 − D_o / D_e = 1 − (n − 1)·(n − Σ_c o_cc) / (n² − Σ_c n_c²)
Fleiss' κ over the items with m_i ≥ 2 (items with fewer ratings are excluded):
    P_i = Σ_c n_ic(n_ic − 1) / (m_i(m_i − 1)),   P̄ = mean_i P_i
    p_c = Σ_i n_ic / Σ_i m_i,   P̄_e = Σ_c p_c²,   κ = (P̄ − P̄_e) / (1 − P̄_e)
  With the same number of ratings on every item this is Fleiss (1971) and equals
  ``statsmodels.stats.inter_rater.fleiss_kappa``; with unequal numbers p_c pools all ratings.
Raw (observed) agreement: P̄ above, the mean over items with m_i ≥ 2 of the fraction of
  agreeing annotator pairs.
Cohen's κ of two annotators over the items both rated (pairs with a missing side are dropped):
    p_o = fraction of items with equal labels,   p_e = Σ_c p_a(c)·p_b(c),   κ = (p_o − p_e) / (1 − p_e)
Mean pairwise similarity of free-text answers (default :func:`~verimod.stats.char_f1`): per item
  with at least two answers, the mean similarity over its unordered annotator pairs; averaged
  over those items.

Edge cases: when the expected disagreement is zero (every pairable rating is the same
category: D_e = 0, P̄_e = 1 or p_e = 1) α and κ are undefined and returned as NaN, as
``statsmodels`` and ``sklearn.metrics.cohen_kappa_score`` do (``krippendorff.alpha`` raises
instead). A measure with no usable item (no pairable item, no jointly rated item) is NaN too.

Every measure is built on per-item contributions (an :class:`ItemStatistic`): a few sums over
items, weighted by w, then a closed form. The point estimate uses w = 1, a bootstrap resample
w_u = how many times item u was drawn, so :func:`bootstrap_cis` costs one matrix product per
batch of resamples for all the statistics together. Intervals are percentile intervals over
items resampled with replacement.

>>> krippendorff_alpha([["a", "a"], ["b", "b"], ["a", "b"]])
0.4444444444444444
>>> bootstrap_ci(krippendorff_alpha_statistic([["a", "a"], ["b", "b"]] * 5), seed=0).estimate
1.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, NamedTuple, TypeAlias

import numpy as np
import numpy.typing as npt

from verimod.stats.text_overlap import char_f1

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int64]
#: Items × annotators labels (ragged rows allowed; ``None``/NaN = missing), or a 2-D array.
Ratings: TypeAlias = Sequence[Sequence[Any]] | npt.NDArray[Any]

#: Expected-agreement denominators at or below this are treated as zero (measure undefined).
_TOLERANCE = 1e-12
#: Maximum number of weight entries (resamples × items) held at once by the bootstrap.
_CHUNK_ENTRIES = 1 << 22


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float | np.floating) and math.isnan(value))


def _category_order(values: set[Any]) -> tuple[Any, ...]:
    try:
        return tuple(sorted(values))
    except TypeError:  # mixed types: fall back to a deterministic order by representation
        return tuple(sorted(values, key=repr))


def encode_ratings(ratings: Ratings) -> tuple[IntArray, tuple[Any, ...]]:
    """``(codes, categories)``: an items × annotators matrix of indices into ``categories``,
    −1 where the rating is missing. Categories are the distinct ratings, sorted when possible."""
    if isinstance(ratings, np.ndarray) and ratings.dtype.kind in "biuf":
        if ratings.ndim != 2:
            raise ValueError(f"ratings must be 2-D (items × annotators), got {ratings.ndim}-D")
        present = ~np.isnan(ratings) if ratings.dtype.kind == "f" else np.ones(ratings.shape, dtype=bool)
        values, inverse = np.unique(ratings[present], return_inverse=True)
        codes = np.full(ratings.shape, -1, dtype=np.int64)
        codes[present] = inverse
        return codes, tuple(values.tolist())
    if isinstance(ratings, np.ndarray):
        if ratings.ndim != 2:
            raise ValueError(f"ratings must be 2-D (items × annotators), got {ratings.ndim}-D")
        ratings = ratings.tolist()
    rows: list[list[Any]] = []
    for row in ratings:
        if isinstance(row, str | bytes) or not isinstance(row, Sequence | np.ndarray):
            raise ValueError("ratings must be 2-D (items × annotators): each item must be a sequence of ratings")
        rows.append(list(row))
    width = max((len(row) for row in rows), default=0)
    categories = _category_order({v for row in rows for v in row if not _is_missing(v)})
    index = {category: i for i, category in enumerate(categories)}
    codes = np.full((len(rows), width), -1, dtype=np.int64)
    for u, row in enumerate(rows):
        for r, value in enumerate(row):
            if not _is_missing(value):
                codes[u, r] = index[value]
    return codes, categories


@dataclass(frozen=True)
class RatingTable:
    """Items × categories counts n_uc (how many annotators put item u in category c)."""

    counts: IntArray
    categories: tuple[Any, ...]

    @classmethod
    def from_ratings(cls, ratings: Ratings) -> RatingTable:
        """Count an items × annotators ratings matrix (see :func:`encode_ratings`)."""
        codes, categories = encode_ratings(ratings)
        return cls(_count_codes(codes, len(categories)), categories)

    @classmethod
    def from_counts(cls, counts: npt.ArrayLike, categories: Sequence[Hashable] | None = None) -> RatingTable:
        """Wrap an items × categories table of non-negative integer counts."""
        table = np.asarray(counts)
        if table.ndim != 2:
            raise ValueError(f"counts must be 2-D (items × categories), got {table.ndim}-D")
        if table.size and (table.min() < 0 or not np.all(table == np.round(table))):
            raise ValueError("counts must be non-negative integers")
        names = tuple(range(table.shape[1])) if categories is None else tuple(categories)
        if len(names) != table.shape[1]:
            raise ValueError(f"{len(names)} categories for a table with {table.shape[1]} columns")
        return cls(table.astype(np.int64), names)

    @property
    def n_items(self) -> int:
        """Number of items (rows)."""
        return int(self.counts.shape[0])


def _count_codes(codes: IntArray, n_categories: int) -> IntArray:
    items, _ = np.nonzero(codes >= 0)
    flat = items * n_categories + codes[codes >= 0]
    return np.bincount(flat, minlength=codes.shape[0] * n_categories).reshape(codes.shape[0], n_categories)


def _table(ratings: Ratings | RatingTable) -> RatingTable:
    return ratings if isinstance(ratings, RatingTable) else RatingTable.from_ratings(ratings)


@dataclass(frozen=True)
class ItemStatistic:
    """A statistic of weighted items, in two steps: per-item ``contributions`` (items × p) are
    summed with item weights, S = w · contributions, and ``combine`` maps each row of S to the
    value. Every measure of this module has this form, so the bootstrap evaluates all of them
    with one matrix product per batch of resamples. Built by the ``*_statistic`` functions."""

    contributions: FloatArray
    combine: Callable[[FloatArray], FloatArray]

    @property
    def n_items(self) -> int:
        """Number of items (rows of ``contributions``)."""
        return int(self.contributions.shape[0])

    def from_sums(self, sums: FloatArray) -> FloatArray:
        """Values for rows of weighted sums (rows × p); undefined values are NaN."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.combine(sums)

    def __call__(self, weights: npt.ArrayLike) -> FloatArray:
        """Values of the statistic for each row of item weights (a 1-D vector is one row)."""
        w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        if w.shape[1] != self.n_items:
            raise ValueError(f"weights have {w.shape[1]} items, the statistic has {self.n_items}")
        return self.from_sums(w @ self.contributions)

    def estimate(self) -> float:
        """The statistic on the data as given (every item weight 1)."""
        return float(self.from_sums(self.contributions.sum(axis=0, keepdims=True))[0])


def _columns(*parts: npt.ArrayLike) -> FloatArray:
    """Stack per-item vectors and matrices side by side into an items × p float array."""
    arrays = [np.asarray(part, dtype=np.float64) for part in parts]
    return np.hstack([a[:, None] if a.ndim == 1 else a for a in arrays])


def _ratio(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    return np.where(np.abs(denominator) > _TOLERANCE, numerator / np.where(denominator == 0, 1, denominator), np.nan)


def krippendorff_alpha_statistic(ratings: Ratings | RatingTable) -> ItemStatistic:
    """Krippendorff's nominal α as an :class:`ItemStatistic` (formula in the module docstring).

    Contributions of item u (zero unless pairable): Σ_c o_cc share Σ_c n_uc(n_uc − 1)/(m_u − 1),
    m_u, and n_uc for every c.
    """
    counts = _table(ratings).counts.astype(np.float64)
    m = counts.sum(axis=1)
    pairable = m >= 2
    diagonal = np.where(pairable, (counts * (counts - 1)).sum(axis=1) / np.where(pairable, m - 1, 1), 0.0)
    contributions = _columns(diagonal, np.where(pairable, m, 0.0), np.where(pairable[:, None], counts, 0.0))

    def alpha(sums: FloatArray) -> FloatArray:
        o_diag, n, n_c = sums[:, 0], sums[:, 1], sums[:, 2:]
        return 1.0 - _ratio((n - 1) * (n - o_diag), n * n - (n_c * n_c).sum(axis=1))

    return ItemStatistic(contributions, alpha)


def _pair_agreement(counts: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per item: fraction of agreeing pairs P_i (0 when m_i < 2), the inclusion mask, m_i."""
    m = counts.sum(axis=1)
    included = (m >= 2).astype(np.float64)
    safe = np.where(m >= 2, m * (m - 1), 1.0)
    p_i = np.where(m >= 2, (counts * (counts - 1)).sum(axis=1) / safe, 0.0)
    return p_i, included, m


def fleiss_kappa_statistic(ratings: Ratings | RatingTable) -> ItemStatistic:
    """Fleiss' κ over items with ≥ 2 ratings as an :class:`ItemStatistic` (module docstring).

    Contributions of item i (zero unless m_i ≥ 2): P_i, 1, m_i, and n_ic for every c.
    """
    counts = _table(ratings).counts.astype(np.float64)
    p_i, included, m = _pair_agreement(counts)
    contributions = _columns(p_i, included, m * included, counts * included[:, None])

    def kappa(sums: FloatArray) -> FloatArray:
        p_bar = sums[:, 0] / sums[:, 1]
        p_c = sums[:, 3:] / sums[:, 2:3]
        p_e = (p_c * p_c).sum(axis=1)
        return _ratio(p_bar - p_e, 1.0 - p_e)

    return ItemStatistic(contributions, kappa)


def _weighted_mean(sums: FloatArray) -> FloatArray:
    return sums[:, 0] / sums[:, 1]


def raw_agreement_statistic(ratings: Ratings | RatingTable) -> ItemStatistic:
    """Raw agreement (mean fraction of agreeing pairs, items with ≥ 2 ratings) as an :class:`ItemStatistic`."""
    p_i, included, _ = _pair_agreement(_table(ratings).counts.astype(np.float64))
    return ItemStatistic(_columns(p_i, included), _weighted_mean)


def cohen_kappa_statistic(a: Sequence[Any] | npt.NDArray[Any], b: Sequence[Any] | npt.NDArray[Any]) -> ItemStatistic:
    """Cohen's κ of two annotators' labels (same items, ``None``/NaN missing) as an :class:`ItemStatistic`.

    Contributions of item i (zero unless both rated it): 1, [a_i = b_i], one-hot a_i, one-hot b_i.
    """
    if len(a) != len(b):
        raise ValueError(f"a has {len(a)} items but b has {len(b)}")
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype.kind in "biuf" and b.dtype.kind in "biuf":
        codes, categories = encode_ratings(np.column_stack([a.astype(np.float64), b.astype(np.float64)]))
    else:
        codes, categories = encode_ratings([[x, y] for x, y in zip(a, b, strict=True)])
    codes = codes.reshape(len(a), 2)
    k = len(categories)
    both = (codes[:, 0] >= 0) & (codes[:, 1] >= 0)
    eye = np.vstack([np.eye(k), np.zeros((1, k))])  # code −1 selects the zero row
    contributions = _columns(
        both,
        both & (codes[:, 0] == codes[:, 1]),
        eye[np.where(both, codes[:, 0], -1)],
        eye[np.where(both, codes[:, 1], -1)],
    )

    def kappa(sums: FloatArray) -> FloatArray:
        total = sums[:, 0]
        p_o = sums[:, 1] / total
        p_e = (sums[:, 2 : 2 + k] * sums[:, 2 + k :]).sum(axis=1) / (total * total)
        return _ratio(p_o - p_e, 1.0 - p_e)

    return ItemStatistic(contributions, kappa)


def item_mean_statistic(scores: Sequence[float] | FloatArray) -> ItemStatistic:
    """Mean of per-item scores as an :class:`ItemStatistic`; NaN scores mark excluded items."""
    values = np.asarray(scores, dtype=np.float64).reshape(-1)
    return ItemStatistic(_columns(np.nan_to_num(values, nan=0.0), ~np.isnan(values)), _weighted_mean)


def pairwise_similarity_scores(
    texts: Sequence[Sequence[str | None]], similarity: Callable[[str, str], float] = char_f1
) -> FloatArray:
    """Per item, the mean ``similarity`` over its unordered pairs of present answers (NaN when
    fewer than two annotators answered)."""
    scores = np.full(len(texts), np.nan)
    for u, row in enumerate(texts):
        present = [t for t in row if t is not None and not _is_missing(t)]
        if len(present) >= 2:
            pairs = [similarity(x, y) for x, y in combinations(present, 2)]
            scores[u] = sum(pairs) / len(pairs)
    return scores


def mean_pairwise_similarity_statistic(
    texts: Sequence[Sequence[str | None]], similarity: Callable[[str, str], float] = char_f1
) -> ItemStatistic:
    """Mean pairwise similarity of free-text answers (module docstring) as an :class:`ItemStatistic`."""
    return item_mean_statistic(pairwise_similarity_scores(texts, similarity))


def krippendorff_alpha(ratings: Ratings | RatingTable) -> float:
    """Krippendorff's α for nominal data with missing ratings (module docstring).

    NaN when no item has two ratings or every pairable rating is the same category.

    >>> krippendorff_alpha([[1, 1, None], [2, 2, 2], [1, 2, 1]])
    0.5625
    """
    return krippendorff_alpha_statistic(ratings).estimate()


def fleiss_kappa(ratings: Ratings | RatingTable) -> float:
    """Fleiss' κ (module docstring); items with fewer than 2 ratings are excluded.

    Pass ``RatingTable.from_counts(table)`` for an items × categories count table.
    NaN when every included rating is the same category or no item has 2 ratings.

    >>> fleiss_kappa(RatingTable.from_counts([[3, 0], [0, 3], [2, 1]]))
    0.55
    """
    return fleiss_kappa_statistic(ratings).estimate()


def raw_agreement(ratings: Ratings | RatingTable) -> float:
    """Mean over items with ≥ 2 ratings of the fraction of agreeing annotator pairs; NaN if none.

    >>> raw_agreement([["a", "a", "b"], ["a", "a", None]])
    0.6666666666666666
    """
    return raw_agreement_statistic(ratings).estimate()


def cohen_kappa(a: Sequence[Any] | npt.NDArray[Any], b: Sequence[Any] | npt.NDArray[Any]) -> float:
    """Cohen's κ of two annotators over the items both rated (module docstring).

    NaN when p_e = 1 (both annotators always use one same category) or no item is jointly rated.

    >>> cohen_kappa(["y", "y", "n", "n"], ["y", "n", "n", "n"])
    0.5
    """
    return cohen_kappa_statistic(a, b).estimate()


def mean_pairwise_similarity(
    texts: Sequence[Sequence[str | None]], similarity: Callable[[str, str], float] = char_f1
) -> float:
    """Mean over items (with ≥ 2 answers) of the mean pairwise ``similarity``; NaN if none.

    >>> mean_pairwise_similarity([["小县城公务员", "县城公务员们"], ["老师", None]])
    0.8333333333333334
    """
    return mean_pairwise_similarity_statistic(texts, similarity).estimate()


class ConfidenceInterval(NamedTuple):
    """A point estimate and its percentile bootstrap interval; unpacks as (estimate, low, high)."""

    estimate: float
    low: float
    high: float


def _resample_weights(rng: np.random.Generator, n_items: int, rows: int) -> FloatArray:
    """``rows`` bootstrap resamples of ``n_items`` items as counts (rows × n_items)."""
    drawn = rng.integers(0, n_items, size=(rows, n_items))
    drawn += (np.arange(rows) * n_items)[:, None]
    return np.bincount(drawn.ravel(), minlength=rows * n_items).reshape(rows, n_items).astype(np.float64)


def bootstrap_distribution(
    statistics: Sequence[ItemStatistic], n_resamples: int = 1000, seed: int = 0
) -> tuple[list[float], FloatArray]:
    """The estimates of several statistics of the same items, and their values on shared
    bootstrap resamples (statistics × resamples; NaN where a statistic is undefined on a
    resample). Each resample draws ``n_items`` items with replacement
    (``numpy.random.default_rng(seed)``). Deterministic for given data, ``n_resamples`` and
    ``seed``."""
    if n_resamples < 0:
        raise ValueError("n_resamples must be ≥ 0")
    sizes = {s.n_items for s in statistics}
    if len(sizes) > 1:
        raise ValueError(f"statistics over different numbers of items: {sorted(sizes)}")
    n_items = sizes.pop() if sizes else 0
    estimates = [s.estimate() for s in statistics]
    values = np.full((len(statistics), n_resamples), np.nan)
    if n_items > 0 and statistics:
        stacked = np.hstack([s.contributions for s in statistics])
        bounds = np.cumsum([0] + [s.contributions.shape[1] for s in statistics])
        rng = np.random.default_rng(seed)
        chunk = max(1, _CHUNK_ENTRIES // n_items)
        for start in range(0, n_resamples, chunk):
            rows = min(chunk, n_resamples - start)
            sums = _resample_weights(rng, n_items, rows) @ stacked
            for j, statistic in enumerate(statistics):
                values[j, start : start + rows] = statistic.from_sums(sums[:, bounds[j] : bounds[j + 1]])
    return estimates, values


def bootstrap_cis(
    statistics: Sequence[ItemStatistic], n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> list[ConfidenceInterval]:
    """Percentile bootstrap intervals of several statistics of the same items, on shared resamples.

    The resamples are those of :func:`bootstrap_distribution`. The interval is the
    ((1 − confidence)/2, (1 + confidence)/2) quantile (linear interpolation) of the resampled
    values; resamples where a statistic is undefined (NaN, e.g. a resample with one category
    only) are left out of its quantiles; when all are, or ``n_resamples`` is 0, low = high = NaN.
    Callers that must say how many were left out use :func:`bootstrap_distribution`.
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    estimates, values = bootstrap_distribution(statistics, n_resamples, seed)
    tail = (1 - confidence) / 2
    intervals = []
    for estimate, row in zip(estimates, values, strict=True):
        finite = row[~np.isnan(row)]
        low, high = np.quantile(finite, [tail, 1 - tail]) if finite.size else (np.nan, np.nan)
        intervals.append(ConfidenceInterval(estimate, float(low), float(high)))
    return intervals


def bootstrap_ci(
    statistic: ItemStatistic, n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> ConfidenceInterval:
    """``(estimate, low, high)``: percentile bootstrap interval over items (see :func:`bootstrap_cis`).

    >>> bootstrap_ci(raw_agreement_statistic([["a", "a"], ["a", "b"]] * 10), seed=1).estimate
    0.5
    """
    return bootstrap_cis([statistic], n_resamples, seed, confidence)[0]
