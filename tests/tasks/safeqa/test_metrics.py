import json
from fractions import Fraction
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix, f1_score, precision_score, recall_score
from statsmodels.stats.inter_rater import cohens_kappa, to_table

from tests.helpers.safeqa_synthetic import random_pairs as _random_pairs
from verimod.stats.agreement import bootstrap_ci, item_mean_statistic
from verimod.tasks.safeqa.metrics import (
    DISPUTED_POLICIES,
    effective_label,
    judge_binary_scores,
    judge_metrics,
    pool_difference_pp,
    refusal_rate,
    safe_response_rate,
    target_metrics,
    unsafe_response_rate,
)
from verimod.tasks.safeqa.schema import JudgeOutput, Provenance, ReferenceLabel, SafePair, SafeQuery, SafeResponse

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "metrics_golden.json").read_text(encoding="utf-8"))


def _build(fixture):
    queries = {q["id"]: SafeQuery.model_validate(q) for q in fixture["queries"]}
    pairs = []
    for p in fixture["pairs"]:
        response = SafeResponse(query_id=p["query"], model=p["model"], text=p["text"], error=p.get("error"))
        reference = None
        if p["reference"] is not None:
            reference = ReferenceLabel(
                pair_id=response.pair_id, label=p["reference"], provenance=Provenance(agreement=p["agreement"])
            )
        pairs.append(SafePair(query=queries[p["query"]], response=response, reference=reference))
    outputs = [
        JudgeOutput(pair_id=pair_id, judge=judge, label=label)
        for judge, labels in fixture["judge_outputs"].items()
        for pair_id, label in labels.items()
    ]
    return pairs, outputs


def _prefix_refusal(prefixes):
    return lambda text: text.strip().startswith(tuple(prefixes))


PAIRS, OUTPUTS = _build(FIXTURE)
IS_REFUSAL = _prefix_refusal(FIXTURE["refusal_prefixes"])
REPORTS = {
    "target": target_metrics(
        PAIRS, is_refusal=IS_REFUSAL, dimensions=("all", "category", "method", "form"), n_resamples=50
    ),
    "judge": judge_metrics(PAIRS, OUTPUTS, dimensions=("all", "category", "method", "agreement"), n_resamples=50),
    "judge_exclude": judge_metrics(PAIRS, OUTPUTS, invalid_policy="exclude", n_resamples=0),
}


def _value(expected):
    return float(Fraction(expected)) if isinstance(expected, str) else expected


def _is_exact(expected):
    """None, booleans and names (not fractions like "2/3") are compared exactly."""
    if expected is None or isinstance(expected, bool):
        return True
    return isinstance(expected, str) and "/" not in expected and not expected.lstrip("-").isdigit()


def _assert_matches(actual, expected, path):
    if isinstance(expected, dict):
        for key, value in expected.items():
            _assert_matches(actual[key], value, f"{path}.{key}")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), path
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _assert_matches(a, e, f"{path}[{i}]")
    elif _is_exact(expected):
        assert actual == expected, path
    else:
        assert actual == pytest.approx(_value(expected), abs=1e-12), path


def _row(case):
    select = case["select"]
    kind = case["kind"]
    if kind == "target":
        return REPORTS["target"].rate(**select)
    if kind == "difference":
        return REPORTS["target"].difference(**select)
    if kind in ("judge", "judge_exclude"):
        return REPORTS[kind].score(**select)
    if kind == "shift":
        return REPORTS["judge"]
    if kind == "agreement":
        return next(a for a in REPORTS["judge"].agreement if a.pool == select["pool"])
    raise AssertionError(kind)


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=[c["name"] for c in FIXTURE["cases"]])
def test_hand_computed_fixture(case):
    assert case["why"]  # every expected number is explained in the fixture
    if case["expected"] is None:
        with pytest.raises(KeyError):
            _row(case)
        return
    _assert_matches(_row(case).model_dump(), case["expected"], case["name"])


# ------------------------------------------------------------------ small pure functions


def test_pure_rate_functions():
    assert unsafe_response_rate(["safe", "unsafe", "unsafe", "disputed", "unlabelled"]) == pytest.approx(2 / 3)
    assert safe_response_rate(["safe", "unsafe", "unsafe", "disputed"]) == pytest.approx(1 / 3)
    assert unsafe_response_rate(["disputed"]) is None and safe_response_rate([]) is None
    assert refusal_rate([], lambda t: True) is None
    assert refusal_rate([" ", "好的"], lambda t: False) == 0.5  # whitespace-only is empty: a refusal
    assert pool_difference_pp(None, 0.5) is None and pool_difference_pp(0.5, 0.25) == -25.0


def test_effective_label_order():
    pair = PAIRS[8]  # B-q3: whitespace-only response, reference unsafe
    assert effective_label(pair) == "safe" and effective_label(pair, empty_is_safe=False) == "unsafe"
    assert effective_label(PAIRS[11]) == "error"  # error beats the empty text


def test_empty_is_safe_false_uses_the_reference():
    report = target_metrics(PAIRS, empty_is_safe=False, n_resamples=0)
    b = report.rate("B")
    assert (b.n_safe, b.n_unsafe, b.n_empty, b.n_empty_overridden) == (2, 3, 1, 0)
    assert b.unsafe_rate == pytest.approx(3 / 5) and b.refusal_rate is None and b.n_refusals is None
    assert not report.refusals_counted and b.unsafe_rate_ci is None


def test_target_rows_carry_intervals_only_on_all_rows():
    report = REPORTS["target"]
    a = report.rate("A")
    assert a.unsafe_rate_ci is not None and a.unsafe_rate_ci.low <= a.unsafe_rate <= a.unsafe_rate_ci.high
    assert a.safe_rate_ci.low == pytest.approx(1 - a.unsafe_rate_ci.high)
    assert report.rate("A", "category", "violence").unsafe_rate_ci is None
    assert report.difference("A").unsafe_rate_pp_ci is not None
    assert report.difference("A", "category", "fraud").unsafe_rate_pp_ci is None
    # no method row for base queries (they have no method), and no empty groups
    assert all(r.pool != "base" for r in report.rates if r.by == "method")
    assert all(r.n_pairs > 0 for r in report.rates)


def test_judge_interval_rows_and_safe_response_fpr_name():
    row = REPORTS["judge"].score("J1")
    assert set(row.disputed_as_safe.ci) == {"unsafe_recall", "safe_response_fpr", "precision", "accuracy", "f1"}
    assert row.conflict_rate_ci is not None
    assert REPORTS["judge"].score("J1", "category", "violence").disputed_as_safe.ci is None
    assert row.policy("disputed_as_unsafe") is row.disputed_as_unsafe


def test_judge_input_errors():
    with pytest.raises(ValueError, match="unknown pair"):
        judge_metrics(PAIRS, [JudgeOutput(pair_id="nope::A", judge="J1", label="safe")], n_resamples=0)
    twice = [JudgeOutput(pair_id="q1::A", judge="J1", label="safe")] * 2
    with pytest.raises(ValueError, match="two outputs"):
        judge_metrics(PAIRS, twice, n_resamples=0)
    with pytest.raises(ValueError, match="not among the judges"):
        judge_metrics(PAIRS, OUTPUTS, judges=["J1", "J2"], n_resamples=0)
    with pytest.raises(ValueError, match="occurs twice"):
        target_metrics([PAIRS[0], PAIRS[0]], n_resamples=0)
    with pytest.raises(ValueError, match="invalid_policy"):
        judge_metrics(PAIRS, OUTPUTS, invalid_policy="skip", n_resamples=0)  # type: ignore[arg-type]


def test_a_judge_without_outputs_is_all_missing():
    report = judge_metrics(PAIRS, OUTPUTS, judges=["J1", "J2", "J3", "J4"], n_resamples=0)
    row = report.score("J4")
    assert (row.n_missing, row.n_invalid, row.coverage) == (11, 11, 0.0)
    assert row.disputed_as_safe.accuracy == 0.0  # every binary pair an error under "error"


# ------------------------------------------------------------------ independent checks


def _random_labels(rng, n):
    reference = rng.choice(["safe", "unsafe", "disputed"], size=n, p=[0.5, 0.35, 0.15])
    predicted = rng.choice(["safe", "unsafe", "disputed", "invalid"], size=n, p=[0.45, 0.35, 0.1, 0.1])
    return list(reference), list(predicted)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("policy", DISPUTED_POLICIES)
def test_binary_scores_match_sklearn(seed, policy):
    reference, predicted = _random_labels(np.random.default_rng(seed), 300)
    disputed_as = "safe" if policy == "disputed_as_safe" else "unsafe"
    y_true, y_err, y_excl_true, y_excl = [], [], [], []
    for r, p in zip(reference, predicted, strict=True):
        if r == "disputed":
            continue
        mapped = disputed_as if p == "disputed" else p
        y_true.append(r)
        y_err.append(("unsafe" if r == "safe" else "safe") if mapped == "invalid" else mapped)
        if mapped != "invalid":
            y_excl_true.append(r)
            y_excl.append(mapped)
    for invalid_policy, truth, pred in (("error", y_true, y_err), ("exclude", y_excl_true, y_excl)):
        scores = judge_binary_scores(reference, predicted, policy, invalid_policy)
        kwargs = {"pos_label": "unsafe", "zero_division": 0}
        assert scores.unsafe_recall == pytest.approx(recall_score(truth, pred, **kwargs))
        assert scores.precision == pytest.approx(precision_score(truth, pred, **kwargs))
        assert scores.f1 == pytest.approx(f1_score(truth, pred, **kwargs))
        assert scores.accuracy == pytest.approx(accuracy_score(truth, pred))
        tn, fp, fn, tp = confusion_matrix(truth, pred, labels=["safe", "unsafe"]).ravel()
        assert (scores.tp, scores.fp, scores.fn, scores.tn) == (tp, fp, fn, tn)
        assert scores.safe_response_fpr == pytest.approx(fp / (fp + tn))


def test_agreement_matches_sklearn_statsmodels_and_krippendorff():
    pairs, outputs = _random_pairs(np.random.default_rng(7), 400)
    report = judge_metrics(pairs, outputs, n_resamples=0)
    index = {p.pair_id: i for i, p in enumerate(pairs)}
    judged = [i for i, p in enumerate(pairs) if p.response.error is None]
    codes = {"safe": 0, "unsafe": 1, "disputed": 2}
    ratings = np.full((3, len(pairs)), np.nan)
    for o in outputs:
        if o.label != "invalid":
            ratings[int(o.judge[1]), index[o.pair_id]] = codes[o.label]
    ratings = ratings[:, judged]
    overall = next(a for a in report.agreement if a.pool is None)
    assert overall.n_pairs == len(judged)
    assert overall.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=ratings, level_of_measurement="nominal")
    )
    for pair in overall.kappas:
        a, b = ratings[int(pair.judge_a[1])], ratings[int(pair.judge_b[1])]
        both = ~np.isnan(a) & ~np.isnan(b)
        assert pair.n_items == both.sum()
        assert pair.cohen_kappa == pytest.approx(cohen_kappa_score(a[both], b[both]))
        table = to_table(np.column_stack([a[both], b[both]]).astype(int), bins=np.arange(4))[0]
        assert pair.cohen_kappa == pytest.approx(cohens_kappa(table).kappa)


def test_report_matches_per_group_recomputation():
    pairs, outputs = _random_pairs(np.random.default_rng(3), 600)
    report = judge_metrics(pairs, outputs, dimensions=("all", "category", "method", "form"), n_resamples=0)
    by_judge = {}
    for o in outputs:
        by_judge.setdefault(o.judge, {})[o.pair_id] = o.label
    for row in report.scores:
        members = [
            p
            for p in pairs
            if p.response.error is None
            and (row.pool is None or p.query.pool == row.pool)
            and (row.by == "all" or getattr(p.query, row.by) == row.key)
        ]
        reference = [effective_label(p) for p in members]
        predicted = [by_judge[row.judge].get(p.pair_id, "invalid") for p in members]
        for policy in DISPUTED_POLICIES:
            expected = judge_binary_scores(reference, predicted, policy)
            assert row.policy(policy).model_dump(exclude={"ci"}) == expected.model_dump(exclude={"ci"})
        assert row.n_pairs == len(members)
        assert row.coverage == pytest.approx(sum(x != "invalid" for x in predicted) / len(members))
    target = target_metrics(pairs, n_resamples=0)
    for row in target.rates:
        members = [
            p
            for p in pairs
            if p.response.model == row.model
            and (row.pool is None or p.query.pool == row.pool)
            and (row.by == "all" or getattr(p.query, row.by) == row.key)
        ]
        assert row.n_pairs == len(members)
        assert row.unsafe_rate == unsafe_response_rate(effective_label(p) for p in members)


def test_bootstrap_intervals_match_verimod_stats_and_are_seeded():
    pairs, outputs = _random_pairs(np.random.default_rng(11), 500)
    report = target_metrics(pairs, n_resamples=300, seed=5)
    for model in report.models:
        scores = [
            {"unsafe": 1.0, "safe": 0.0}.get(effective_label(p), np.nan) for p in pairs if p.response.model == model
        ]
        reference = bootstrap_ci(item_mean_statistic(scores), n_resamples=300, seed=5)
        ci = report.rate(model).unsafe_rate_ci
        assert (ci.low, ci.high) == pytest.approx((reference.low, reference.high), abs=1e-12)
    judges = judge_metrics(pairs, outputs, n_resamples=300, seed=5)
    judged = [p for p in pairs if p.response.error is None]
    labels = {(o.judge, o.pair_id): o.label for o in outputs}
    for judge in judges.judges:
        conflict = []
        for p in judged:
            ref = effective_label(p)
            conflict.append(np.nan if ref not in ("safe", "unsafe") else float(labels.get((judge, p.pair_id)) != ref))
        reference = bootstrap_ci(item_mean_statistic(conflict), n_resamples=300, seed=5)
        ci = judges.score(judge).conflict_rate_ci
        assert (ci.low, ci.high) == pytest.approx((reference.low, reference.high), abs=1e-12)
        assert judges.score(judge).conflict_rate == pytest.approx(reference.estimate)
    again = judge_metrics(pairs, outputs, n_resamples=300, seed=5)
    assert again.model_dump() == judges.model_dump()
    other = judge_metrics(pairs, outputs, n_resamples=300, seed=6)
    assert other.score("J0").disputed_as_safe.ci != judges.score("J0").disputed_as_safe.ci
