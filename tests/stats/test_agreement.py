import doctest
import math
import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, to_table
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

import verimod.stats.agreement as agreement_module
from verimod.stats import char_f1
from verimod.stats.agreement import (
    ConfidenceInterval,
    ItemStatistic,
    RatingTable,
    bootstrap_ci,
    bootstrap_cis,
    cohen_kappa,
    cohen_kappa_statistic,
    encode_ratings,
    fleiss_kappa,
    fleiss_kappa_statistic,
    item_mean_statistic,
    krippendorff_alpha,
    krippendorff_alpha_statistic,
    mean_pairwise_similarity,
    raw_agreement,
    raw_agreement_statistic,
)

nan = float("nan")

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", C: four observers,
# twelve units, missing values; nominal α = 0.743. Rows are units here (units × observers).
TEXTBOOK = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
).T

# Fleiss (1971) as on Wikipedia: 10 items, 14 raters, 5 categories; κ = 0.210.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_module_doctests_pass():
    failures, tried = doctest.testmod(agreement_module)
    assert tried > 5 and failures == 0


# ------------------------------------------------------------------ hand-computed cases


def test_krippendorff_textbook_example():
    assert krippendorff_alpha(TEXTBOOK) == pytest.approx(0.743, abs=5e-4)
    # n = 40 pairable values (unit 12 has one), n_c = 9, 13, 10, 5, 3 so Σ n_c² = 384,
    # Σ o_cc = 3 + 2 + 4 + 4 + 4 + 0 + 4 + 2 + 4 + 3 + 2 = 32 (units 1–11)
    assert krippendorff_alpha(TEXTBOOK) == pytest.approx(1 - 39 * (40 - 32) / (40**2 - 384), abs=1e-12)


def test_krippendorff_two_coder_binary_example():
    # Krippendorff (2011), A: two observers, binary data, α = 0.095
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    assert krippendorff_alpha(np.array([a, b]).T) == pytest.approx(0.095, abs=5e-4)


def test_fleiss_textbook_example():
    assert fleiss_kappa(RatingTable.from_counts(FLEISS_TABLE)) == pytest.approx(0.210, abs=5e-4)


def test_cohen_two_by_two_by_hand():
    # 50 items: both yes 20, A yes/B no 5, A no/B yes 10, both no 15.
    # p_o = 35/50 = 0.7; p_A(yes) = 0.5, p_B(yes) = 0.6; p_e = 0.5·0.6 + 0.5·0.4 = 0.5; κ = 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-12)


def test_raw_agreement_by_hand():
    # item 1: pairs (a,a) (a,b) (a,b) -> 1/3; item 2: 1; item 3: single rating, excluded
    ratings = [["a", "a", "b"], ["b", None, "b"], [None, "c", None]]
    assert raw_agreement(ratings) == pytest.approx(2 / 3)


def test_perfect_agreement_is_one():
    ratings = [["a", "a", "a"], ["b", "b", None], ["c", "c", "c"]]
    assert krippendorff_alpha(ratings) == 1.0
    assert fleiss_kappa(ratings) == 1.0
    assert raw_agreement(ratings) == 1.0
    assert cohen_kappa(["a", "b", "c"], ["a", "b", "c"]) == 1.0


def test_single_category_is_undefined_like_the_reference_packages():
    ratings = [["a", "a"], ["a", "a"], ["a", None]]
    assert math.isnan(krippendorff_alpha(ratings))
    assert math.isnan(fleiss_kappa(ratings))
    assert math.isnan(cohen_kappa(["a", "a"], ["a", "a"]))
    assert raw_agreement(ratings) == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(sm_fleiss_kappa(np.array([[2, 0], [2, 0]])))
        assert math.isnan(cohen_kappa_score(["a", "a"], ["a", "a"]))
    with pytest.raises(ValueError, match="more than one value"):
        krippendorff.alpha(np.array([[1.0, 1.0], [1.0, 1.0]]), level_of_measurement="nominal")


def test_no_usable_item_is_nan():
    ratings = [["a", None], [None, "b"]]
    for measure in (krippendorff_alpha, fleiss_kappa, raw_agreement):
        assert math.isnan(measure(ratings))
    assert math.isnan(cohen_kappa(["a", None], [None, "b"]))
    assert math.isnan(krippendorff_alpha([]))
    assert math.isnan(mean_pairwise_similarity([["x", None]]))


def test_fleiss_excludes_items_with_fewer_than_two_ratings():
    base = [["a", "a", "b"], ["b", "b", "b"], ["a", "b", "a"], ["c", "c", "a"]]
    padded = [*base, ["c", None, None], [None, None, None]]
    assert fleiss_kappa(padded) == pytest.approx(fleiss_kappa(base), abs=1e-15)
    assert raw_agreement(padded) == pytest.approx(raw_agreement(base), abs=1e-15)


def test_ratings_and_count_table_agree():
    ratings = [["a", "a", "b"], ["b", "b", "b"], ["a", "b", None], ["c", "c", "a"]]
    table = RatingTable.from_ratings(ratings)
    assert table.categories == ("a", "b", "c")
    assert table.counts.tolist() == [[2, 1, 0], [0, 3, 0], [1, 1, 0], [1, 0, 2]]
    assert fleiss_kappa(table) == fleiss_kappa(ratings)
    assert krippendorff_alpha(RatingTable.from_counts(table.counts)) == krippendorff_alpha(ratings)


def test_cohen_drops_items_with_a_missing_side():
    a = ["x", "y", None, "x", "y", "x"]
    b = ["x", "y", "y", None, "x", "x"]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(["x", "y", "y", "x"], ["x", "y", "x", "x"]))


def test_mean_pairwise_similarity_by_hand():
    texts = [["小县城公务员", "县城公务员们", None], ["老师", "老师", "学生"], ["只有一个", None, None]]
    # item 1: one pair, F1 = 5/6; item 2: pairs 1, 0, 0 -> 1/3; item 3: excluded
    expected = (char_f1("小县城公务员", "县城公务员们") + 1 / 3) / 2
    assert mean_pairwise_similarity(texts) == pytest.approx(expected)
    assert mean_pairwise_similarity(texts, similarity=lambda x, y: 1.0) == 1.0


def test_encode_ratings_handles_ragged_rows_and_missing_values():
    codes, categories = encode_ratings([["b", None], ["a"], [float("nan"), "b", "a"]])
    assert categories == ("a", "b")
    assert codes.tolist() == [[1, -1, -1], [0, -1, -1], [-1, 1, 0]]
    codes, categories = encode_ratings(np.array([[1.0, nan], [3.0, 1.0]]))
    assert categories == (1.0, 3.0) and codes.tolist() == [[0, -1], [1, 0]]


@pytest.mark.parametrize("bad", [["a", "b"], np.array([1, 2, 3]), np.array(["a", "b"])])
def test_ratings_must_be_two_dimensional(bad):
    with pytest.raises(ValueError, match="2-D"):
        krippendorff_alpha(bad)


@pytest.mark.parametrize(
    ("counts", "message"),
    [([1, 2], "2-D"), ([[1, -1]], "non-negative"), ([[1.5, 0]], "integers")],
)
def test_count_table_is_checked(counts, message):
    with pytest.raises(ValueError, match=message):
        RatingTable.from_counts(counts)
    with pytest.raises(ValueError, match="categories"):
        RatingTable.from_counts([[1, 2]], categories=["a"])


def test_cohen_needs_equal_lengths():
    with pytest.raises(ValueError, match="items"):
        cohen_kappa(["a"], ["a", "b"])


# ------------------------------------------------------------------ independent implementations


def _random_ratings(rng: np.random.Generator, missing: float) -> np.ndarray:
    units = int(rng.integers(5, 80))
    raters = int(rng.integers(2, 7))
    k = int(rng.integers(2, 6))
    # correlated ratings: each unit has a true category that raters keep with probability 0.6
    truth = rng.integers(0, k, size=(units, 1))
    noisy = rng.integers(0, k, size=(units, raters))
    ratings = np.where(rng.random((units, raters)) < 0.6, truth, noisy).astype(np.float64)
    ratings[rng.random((units, raters)) < missing] = np.nan
    return ratings


@pytest.mark.parametrize("seed", range(30))
def test_alpha_matches_krippendorff_package_with_missing_values(seed):
    rng = np.random.default_rng(seed)
    ratings = _random_ratings(rng, missing=float(rng.uniform(0, 0.5)))
    expected = krippendorff.alpha(ratings.T, level_of_measurement="nominal")
    assert krippendorff_alpha(ratings) == pytest.approx(expected, abs=1e-12)
    # the same data as string labels with None for missing
    labels = [[None if np.isnan(v) else f"c{int(v)}" for v in row] for row in ratings]
    assert krippendorff_alpha(labels) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_fleiss_matches_statsmodels_with_equal_raters(seed):
    rng = np.random.default_rng(100 + seed)
    ratings = _random_ratings(rng, missing=0.0).astype(np.int64)
    table, _ = aggregate_raters(ratings)
    expected = sm_fleiss_kappa(table, method="fleiss")
    assert fleiss_kappa(ratings) == pytest.approx(expected, abs=1e-12)
    assert fleiss_kappa(RatingTable.from_counts(table)) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_cohen_matches_sklearn_and_statsmodels(seed):
    rng = np.random.default_rng(200 + seed)
    ratings = _random_ratings(rng, missing=0.0).astype(np.int64)
    a, b = ratings[:, 0], ratings[:, 1]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert cohen_kappa(a.tolist(), b.tolist()) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    table = to_table(np.column_stack([a, b]))[0]
    assert cohen_kappa(a, b) == pytest.approx(cohens_kappa(table, return_results=False), abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_raw_agreement_matches_pair_counting(seed):
    rng = np.random.default_rng(300 + seed)
    ratings = _random_ratings(rng, missing=0.3)
    per_item = []
    for row in ratings:
        present = row[~np.isnan(row)]
        pairs = [(x, y) for i, x in enumerate(present) for y in present[i + 1 :]]
        if pairs:
            per_item.append(np.mean([x == y for x, y in pairs]))
    assert raw_agreement(ratings) == pytest.approx(np.mean(per_item), abs=1e-12)


# ------------------------------------------------------------------ bootstrap


def test_bootstrap_matches_a_naive_loop_over_resampled_items():
    rng = np.random.default_rng(5)
    ratings = _random_ratings(rng, missing=0.2)
    n = len(ratings)
    result = bootstrap_ci(krippendorff_alpha_statistic(ratings), n_resamples=200, seed=11)
    draws = np.random.default_rng(11).integers(0, n, size=(200, n))
    values = np.array([krippendorff_alpha(ratings[idx]) for idx in draws])
    values = values[~np.isnan(values)]
    low, high = np.quantile(values, [0.025, 0.975])
    assert result == pytest.approx((krippendorff_alpha(ratings), low, high), abs=1e-12)


@pytest.mark.parametrize(
    "build",
    [
        krippendorff_alpha_statistic,
        fleiss_kappa_statistic,
        raw_agreement_statistic,
        lambda r: cohen_kappa_statistic(r[:, 0], r[:, 1]),
    ],
)
def test_bootstrap_contains_estimate_and_is_deterministic(build):
    ratings = _random_ratings(np.random.default_rng(9), missing=0.1)
    ratings = np.vstack([ratings] * 3)  # enough items for a stable interval
    statistic = build(ratings)
    first = bootstrap_ci(statistic, seed=3)
    assert isinstance(first, ConfidenceInterval)
    estimate, low, high = first
    assert low <= estimate <= high and low < high
    assert bootstrap_ci(statistic, seed=3) == first
    assert bootstrap_ci(statistic, seed=4) != first


def test_shared_resamples_equal_separate_runs():
    ratings = _random_ratings(np.random.default_rng(1), missing=0.1)
    statistics = [krippendorff_alpha_statistic(ratings), fleiss_kappa_statistic(ratings)]
    together = bootstrap_cis(statistics, n_resamples=300, seed=8)
    assert together == [bootstrap_ci(s, n_resamples=300, seed=8) for s in statistics]


def test_bootstrap_is_independent_of_chunking(monkeypatch):
    ratings = _random_ratings(np.random.default_rng(2), missing=0.1)
    statistic = fleiss_kappa_statistic(ratings)
    whole = bootstrap_ci(statistic, n_resamples=100, seed=5)
    monkeypatch.setattr(agreement_module, "_CHUNK_ENTRIES", len(ratings) * 7)
    assert bootstrap_ci(statistic, n_resamples=100, seed=5) == pytest.approx(whole, abs=1e-15)


def test_bootstrap_edge_cases():
    statistic = item_mean_statistic([1.0, nan, 0.0])
    assert statistic.estimate() == 0.5
    estimate, low, high = bootstrap_ci(statistic, n_resamples=0)
    assert estimate == 0.5 and math.isnan(low) and math.isnan(high)
    empty = bootstrap_ci(krippendorff_alpha_statistic(RatingTable.from_counts(np.zeros((0, 2)))))
    assert all(math.isnan(v) for v in empty)
    with pytest.raises(ValueError, match="different numbers"):
        bootstrap_cis([item_mean_statistic([1.0]), item_mean_statistic([1.0, 2.0])])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(statistic, confidence=1.0)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_ci(statistic, n_resamples=-1)


def test_item_statistic_checks_weight_shape():
    statistic = raw_agreement_statistic([["a", "a"], ["a", "b"]])
    assert statistic([2, 0]).tolist() == [1.0]
    assert isinstance(statistic, ItemStatistic)
    with pytest.raises(ValueError, match="weights have 3 items"):
        statistic([1, 1, 1])
