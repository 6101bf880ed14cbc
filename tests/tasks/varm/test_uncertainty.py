import random

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from tests.conftest import rationale
from verimod.core.errors import InputError
from verimod.tasks.varm.codebook import FIELDS, VOCABULARY
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import score_predictions
from verimod.tasks.varm.uncertainty import (
    SCALAR_METRICS,
    mcnemar_exact,
    metric_intervals,
    metric_value,
    paired_comparison,
    scorer_of,
)


def run(seed, n=80, accuracy=0.7):
    """References drawn from ``seed`` alone; outputs right with probability ``accuracy``."""
    rng = random.Random(seed)
    predictions = random.Random(seed * 1000 + int(accuracy * 100))
    refs, outputs = [], {}
    for i in range(n):
        record = {f: rng.choice(VOCABULARY[f]) for f in VOCABULARY}
        record["target"] = rng.choice(["河南人", "楼主", "女司机"])
        refs.append(VarmReference(id=f"i{i}", text="一条足够长的随机测试评论文本。", **record))
        if predictions.random() < 0.1:
            continue
        pred = {
            f: (record[f] if predictions.random() < accuracy else predictions.choice(VOCABULARY[f])) for f in VOCABULARY
        }
        pred["target"] = record["target"]
        outputs[f"i{i}"] = rationale(*(pred[f] for f in FIELDS))
    return refs, outputs


@pytest.mark.parametrize(("b", "c"), [(0, 0), (3, 0), (5, 9), (12, 4), (30, 31)])
def test_mcnemar_matches_statsmodels(b, c):
    j_a = [1] * b + [0] * c + [1] * 7 + [0] * 5
    j_b = [0] * b + [1] * c + [1] * 7 + [0] * 5
    result = mcnemar_exact(j_a, j_b)
    assert (result.only_a, result.only_b, result.both, result.neither) == (b, c, 7, 5)
    expected = 1.0 if b + c == 0 else mcnemar([[7, b], [c, 5]], exact=True).pvalue
    assert result.p_value == pytest.approx(expected, abs=1e-12)


def test_intervals_match_an_independent_bootstrap_of_jrem():
    refs, outputs = run(1)
    scores, items = score_predictions(refs, outputs)
    intervals = metric_intervals(scorer_of(refs, items), n_resamples=300, seed=5)
    j = np.array([item.j for item in items], dtype=float)
    draws = np.random.default_rng(5).integers(0, len(j), size=(300, len(j)))
    means = j[draws].mean(axis=1)
    assert intervals["jrem"].estimate == scores.jrem
    assert intervals["jrem"].low == pytest.approx(np.quantile(means, 0.025))
    assert intervals["jrem"].high == pytest.approx(np.quantile(means, 0.975))
    assert set(intervals) == set(SCALAR_METRICS)
    for metric, interval in intervals.items():
        assert interval.estimate == metric_value(scores, metric)
        if interval.low is not None:
            assert interval.low <= interval.high


def test_intervals_are_deterministic_per_seed():
    refs, outputs = run(2)
    _, items = score_predictions(refs, outputs)
    scorer = scorer_of(refs, items)
    assert metric_intervals(scorer, 100, seed=3) == metric_intervals(scorer, 100, seed=3)
    assert metric_intervals(scorer, 100, seed=3) != metric_intervals(scorer, 100, seed=4)


def test_paired_comparison_of_identical_runs_is_null():
    refs, outputs = run(3)
    _, items = score_predictions(refs, outputs)
    comparison = paired_comparison(refs, items, items, n_resamples=200)
    for difference in comparison.differences:
        if difference.difference is not None:
            assert difference.difference == 0 and difference.low == difference.high == 0 and difference.p_value == 1.0
    assert comparison.mcnemar.p_value == 1.0 and comparison.mcnemar.only_a == comparison.mcnemar.only_b == 0


def test_paired_comparison_detects_a_better_run_and_aligns_by_id():
    refs, outputs_a = run(4, accuracy=0.5)
    _, outputs_b = run(4, accuracy=0.95)
    _, items_a = score_predictions(refs, outputs_a)
    _, items_b = score_predictions(refs, outputs_b)
    comparison = paired_comparison(refs, items_a, list(reversed(items_b)), n_resamples=300)
    jrem = next(d for d in comparison.differences if d.metric == "jrem")
    assert jrem.difference > 0 and jrem.low > 0 and jrem.p_value < 0.05
    assert comparison.mcnemar.only_b > comparison.mcnemar.only_a and comparison.mcnemar.p_value < 0.05


def test_paired_comparison_needs_the_same_items():
    refs, outputs = run(5)
    _, items = score_predictions(refs, outputs)
    with pytest.raises(InputError, match="same reference items"):
        paired_comparison(refs, items, items[:-1])
