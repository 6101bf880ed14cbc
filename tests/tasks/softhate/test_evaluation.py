"""SoftHateBench evaluation: HSR, Δ, runs, ablation, specificity."""

from __future__ import annotations

import doctest
import json
import math

import pytest
from sklearn.metrics import accuracy_score, f1_score

from verimod.tasks.softhate import evaluation
from verimod.tasks.softhate.evaluation import (
    EvalItem,
    Judgement,
    evaluate,
    hsr,
    prediction_matrix,
    scaffold_ablation,
    specificity,
)

# --- a hand-computed fixture: 6 hate items, 2 non-hate controls, 3 runs -----------------------

ITEMS = [
    EvalItem("h1", "hate", "hard", "race", "black"),
    EvalItem("h2", "hate", "hard", "race", "asian"),
    EvalItem("h3", "hate", "softbase", "race", "black"),
    EvalItem("h4", "hate", "softbase", "gender", "women"),
    EvalItem("h5", "hate", "softhv", "gender", "women"),
    EvalItem("h6", "hate", "softhv", "race", "black"),
    EvalItem("n1", "non_hate", "softbase", "race", "black"),
    EvalItem("n2", "non_hate", "softhv", "gender", "women"),
]
H, N, X = "hate", "non_hate", "invalid"  # X: an invalid output
RUNS = {
    0: [H, H, H, N, X, N, N, H],
    1: [H, N, H, H, N, N, N, N],
    2: [H, H, N, N, H, X, X, N],
}
JUDGEMENTS = [Judgement(item.id, labels[i], run) for run, labels in RUNS.items() for i, item in enumerate(ITEMS)]
SD = math.sqrt


def test_hsr_and_specificity_of_one_run():
    assert hsr([H, N, X, H]) == 0.5  # invalid = not detected, still counted
    assert hsr([]) != hsr([])  # NaN
    assert specificity([N, H, X, N]) == 0.5


def test_report_by_tier_hand_computed():
    report = evaluate(ITEMS, JUDGEMENTS)
    assert report.runs == (0, 1, 2) and report.n_items == 8
    assert report.invalid == 3
    hard = report.by_tier["hard"]
    assert hard.per_run == (1.0, 0.5, 1.0)
    assert hard.mean == pytest.approx(5 / 6) and hard.sd == pytest.approx(SD(1 / 12))
    assert (hard.n, hard.runs, hard.correct, hard.invalid) == (2, 3, 5, 0)
    softbase = report.by_tier["softbase"]
    assert softbase.per_run == (0.5, 1.0, 0.0) and softbase.mean == 0.5 and softbase.sd == pytest.approx(0.5)
    softhv = report.by_tier["softhv"]
    assert softhv.per_run == (0.0, 0.0, 0.5) and softhv.invalid == 2
    assert list(report.by_tier) == ["hard", "softbase", "softhv"]  # report order
    overall = report.hsr
    assert overall.per_run == (0.5, 0.5, 0.5) and overall.sd == 0.0 and overall.n == 6


def test_delta_vs_hard_in_points():
    report = evaluate(ITEMS, JUDGEMENTS)
    softbase = report.delta_vs_reference["softbase"]
    assert softbase.per_run == (-50.0, 50.0, -100.0)
    assert softbase.mean == pytest.approx(-100 / 3)
    assert softbase.sd == pytest.approx(SD((50 / 3) ** 2 + (250 / 3) ** 2 + (200 / 3) ** 2) / SD(2))
    softhv = report.delta_vs_reference["softhv"]
    assert softhv.per_run == (-100.0, -50.0, -50.0) and softhv.mean == pytest.approx(-200 / 3)
    # the mean Δ equals the difference of the mean HSRs
    assert softhv.mean == pytest.approx(100 * (report.by_tier["softhv"].mean - report.by_tier["hard"].mean))
    assert "hard" not in report.delta_vs_reference


def test_breakdowns_by_domain_and_group():
    report = evaluate(ITEMS, JUDGEMENTS)
    # race hate items: h1 h2 h3 h6
    assert report.by_domain["race"].per_run == (0.75, 0.5, 0.5)
    assert report.by_domain["gender"].per_run == (0.0, 0.5, 0.5)
    assert report.by_group["black"].per_run == pytest.approx((2 / 3, 2 / 3, 1 / 3))
    assert report.by_group["asian"].per_run == (1.0, 0.0, 1.0)
    assert report.by_tier_domain[("softhv", "race")].per_run == (0.0, 0.0, 0.0)
    assert report.by_tier_domain[("softhv", "race")].invalid == 1
    assert report.by_tier_group[("softbase", "women")].per_run == (0.0, 1.0, 0.0)
    assert next(iter(report.by_tier_domain)) == ("hard", "race")


def test_specificity_and_classification():
    report = evaluate(ITEMS, JUDGEMENTS)
    assert report.specificity is not None
    assert report.specificity.per_run == (0.5, 1.0, 0.5)
    assert report.specificity.invalid == 1
    assert report.specificity_by_tier["softhv"].per_run == (0.0, 1.0, 1.0)
    summary = report.classification
    assert summary is not None
    gold = [item.gold for item in ITEMS]
    for r, labels in RUNS.items():
        assert summary.accuracy.per_run[r] == pytest.approx(accuracy_score(gold, labels))
        expected = f1_score(gold, labels, labels=["hate", "non_hate"], average="macro", zero_division=0)
        assert summary.macro_f1.per_run[r] == pytest.approx(expected)
    assert summary.accuracy.per_run == (0.5, 0.625, 0.5)


def test_no_controls_no_specificity():
    hate_only = [item for item in ITEMS if item.gold == "hate"]
    judgements = [j for j in JUDGEMENTS if j.item_id.startswith("h")]
    report = evaluate(hate_only, judgements)
    assert report.specificity is None and report.classification is None and report.specificity_by_tier == {}


def test_one_run_has_nan_sd_and_json_is_clean():
    report = evaluate(ITEMS, [j for j in JUDGEMENTS if j.run == 1])
    assert report.by_tier["hard"].per_run == (0.5,) and math.isnan(report.by_tier["hard"].sd)
    data = report.to_dict()
    text = json.dumps(data, allow_nan=False)  # NaN became null
    assert '"sd": null' in text
    assert data["by_tier_domain"]["hard/race"]["mean"] == 0.5


def test_missing_and_bad_judgements():
    with pytest.raises(ValueError, match="no judgement for 1 item"):
        evaluate(ITEMS, JUDGEMENTS[1:])
    report = evaluate(ITEMS, JUDGEMENTS[1:], missing="invalid")
    assert report.by_tier["hard"].per_run == (0.5, 0.5, 1.0)
    with pytest.raises(ValueError, match="two judgements"):
        evaluate(ITEMS, [*JUDGEMENTS, JUDGEMENTS[0]])
    with pytest.raises(ValueError, match="unknown item 'h9'"):
        evaluate(ITEMS, [*JUDGEMENTS, Judgement("h9", "hate")])
    with pytest.raises(ValueError, match="label must be"):
        evaluate(ITEMS, [Judgement("h1", "hateful")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="duplicate item id"):
        prediction_matrix([ITEMS[0], ITEMS[0]], [])
    with pytest.raises(ValueError, match="cannot break down"):
        evaluation.breakdown(prediction_matrix(ITEMS, JUDGEMENTS), "hate", ("model",))


def test_items_without_a_field_are_left_out_of_that_breakdown():
    items = [EvalItem("a", tier="hard"), EvalItem("b")]
    report = evaluate(items, [Judgement("a", "hate"), Judgement("b", "non_hate")])
    assert report.hsr.per_run == (0.5,)
    assert report.by_tier["hard"].per_run == (1.0,) and report.by_domain == {}


def test_scaffold_ablation_gains():
    items = [
        EvalItem("x1:ed", tier="softhv", condition="E+D"),
        EvalItem("x2:ed", tier="softhv", condition="E+D"),
        EvalItem("x1:edp", tier="softhv", condition="E+D+P"),
        EvalItem("x2:edp", tier="softhv", condition="E+D+P"),
        EvalItem("x1:edpm", tier="softhv", condition="E+D+P+M"),
        EvalItem("x2:edpm", tier="softhv", condition="E+D+P+M"),
        EvalItem("y1:ed", tier="softbase", condition="E+D"),
        EvalItem("y1:edp", tier="softbase", condition="E+D+P"),
        EvalItem("z", tier="softbase"),  # no condition: not in the ablation
    ]
    labels = {
        "x1:ed": N,
        "x2:ed": X,
        "x1:edp": H,
        "x2:edp": N,
        "x1:edpm": H,
        "x2:edpm": H,
        "y1:ed": H,
        "y1:edp": H,
        "z": N,
    }
    runs = [Judgement(i, label, run) for run in (0, 1) for i, label in labels.items()]
    rows = scaffold_ablation(items, runs)
    table = {(r.tier, r.condition): r for r in rows}
    assert [(r.tier, r.condition) for r in rows] == [
        ("softbase", "E+D"),
        ("softbase", "E+D+P"),
        ("softhv", "E+D"),
        ("softhv", "E+D+P"),
        ("softhv", "E+D+P+M"),
    ]
    assert table[("softhv", "E+D")].hsr.mean == 0.0 and table[("softhv", "E+D")].gain is None
    assert table[("softhv", "E+D+P")].hsr.mean == 0.5
    assert table[("softhv", "E+D+P")].gain.per_run == (50.0, 50.0)
    assert table[("softhv", "E+D+P+M")].gain.mean == 100.0 and table[("softhv", "E+D+P+M")].gain.sd == 0.0
    assert table[("softbase", "E+D+P")].gain.mean == 0.0
    report = evaluate(items, runs)
    assert report.by_tier_condition[("softhv", "E+D+P+M")].mean == 1.0


def test_module_doctests_pass():
    assert doctest.testmod(evaluation).failed == 0
