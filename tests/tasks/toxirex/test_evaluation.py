import json
import math
import random

import numpy as np
import pytest
from sklearn.metrics import precision_recall_fscore_support
from sklearn.preprocessing import MultiLabelBinarizer

from tests.tasks.toxirex.helpers import (
    FIXTURES,
    NA,
    annotation,
    fixture_lines,
    full,
    no_implication,
    not_toxic,
    prediction,
)
from verimod.tasks.toxirex.evaluation import CLASSIFICATION_VARIABLES, evaluate, score_variable
from verimod.tasks.toxirex.evaluation_items import (
    INVALID,
    NOT_REACHED,
    all_pairs,
    comment_items,
    majority_pairs,
    max_pairs,
    random_draws,
    setting_labels,
)
from verimod.tasks.toxirex.evaluation_metrics import (
    jaccard,
    ordinal_error_table,
    prior_score,
    prior_score_multilabel,
    weighted_prf,
    weighted_prf_multilabel,
)
from verimod.tasks.toxirex.io import load_annotations, load_predictions
from verimod.tasks.toxirex.schema import Attitude

# ---------------------------------------------------------------- propagated vs conditional vs optimistic
#
# One annotator; variable implPolarity (N = Negative, P = Positive, ∅ = not reached).
#   c1: gold N,  prediction N
#   c2: gold N,  prediction stops (hasImplication false) but its composition says N
#   c3: gold P,  prediction N (other implication tokens)
#   c4: gold ∅ (no implication),  prediction N
#   c5: gold N,  prediction stops, its composition says P
# propagated (c1..c5): gold N N P ∅ N / pred N ∅ N N ∅:
#   N: TP 1, pred 3, support 3 → P = R = F1 = 1/3;  P and ∅: 0.   weighted = 3/5 · 1/3 = 0.2
#   Prior = (3/5)² + (1/5)² + (1/5)² = 0.44
# conditional (c1, c3): gold N P / pred N N:
#   N: P = 1/2, R = 1, F1 = 2/3; P: 0.   P = 1/4, R = 1/2, F1 = 1/3;  Prior = 1/2
# optimistic (c1, c2, c3, c5): gold N N P N / pred N N N P:
#   N: TP 2, pred 3, support 3 → 2/3;  P: 0.   P = R = F1 = 3/4 · 2/3 = 1/2;  Prior = 10/16
# cond-tokens (conditional with implTokens Jaccard ≥ 0.5): c1 only → 1.0


def _modes_case():
    stopped_n = {**full(polarity="Negative"), "hasImplication": False}
    stopped_p = {**full(polarity="Positive"), "hasImplication": False}
    annotations = [
        annotation("c1", "a", full(polarity="Negative")),
        annotation("c2", "a", full(polarity="Negative")),
        annotation("c3", "a", full(polarity="Positive")),
        annotation("c4", "a", no_implication()),
        annotation("c5", "a", full(polarity="Negative")),
    ]
    predictions = [
        prediction("c1", full(polarity="Negative")),
        prediction("c2", stopped_n),
        prediction("c3", full(polarity="Negative", impl_tokens=("totally", "different"))),
        prediction("c4", full(polarity="Negative")),
        prediction("c5", stopped_p),
    ]
    return annotations, predictions


@pytest.mark.parametrize(
    ("setting", "n", "precision", "recall", "f1", "prior"),
    [
        ("propagated", 5, 0.2, 0.2, 0.2, 0.44),
        ("conditional", 2, 0.25, 0.5, 1 / 3, 0.5),
        ("optimistic", 4, 0.5, 0.5, 0.5, 0.625),
        ("cond-tokens", 1, 1.0, 1.0, 1.0, 1.0),
    ],
)
def test_error_propagation_settings_hand_computed(setting, n, precision, recall, f1, prior):
    annotations, predictions = _modes_case()
    row = evaluate(annotations, predictions, variables=["implPolarity"], modes=["all"]).score(
        "implPolarity", setting, "all"
    )
    assert (row.n, row.n_invalid) == (n, 0)
    assert row.precision == pytest.approx(precision)
    assert row.recall == pytest.approx(recall)
    assert row.f1 == pytest.approx(f1)
    assert row.prior == pytest.approx(prior)


def test_setting_labels_and_sklearn_agree_on_the_hand_case():
    annotations, predictions = _modes_case()
    items, _ = comment_items(annotations, predictions)
    gold, pred, _ = setting_labels(all_pairs(items), "implPolarity", "propagated")
    assert gold == ["Negative", "Negative", "Positive", NOT_REACHED, "Negative"]
    assert pred == ["Negative", NOT_REACHED, "Negative", "Negative", NOT_REACHED]
    p, r, f, _ = precision_recall_fscore_support(gold, pred, average="weighted", zero_division=0)
    assert weighted_prf(gold, pred).f1 == pytest.approx(f) == pytest.approx(0.2)
    assert (p, r) == pytest.approx((0.2, 0.2))


def test_unparseable_predictions_are_invalid_never_dropped():
    annotations = [annotation("c1", "a", full()), annotation("c2", "a", full()), annotation("c3", "a", not_toxic())]
    predictions = [prediction("c1", full()), prediction("c2", None)]  # c3: no prediction at all
    report = evaluate(annotations, predictions, variables=["toxicity", "implCategory"], modes=["all"])
    assert (report.n_missing, report.n_invalid) == (1, 2)
    toxicity = report.score("toxicity", "propagated", "all")
    assert (toxicity.n, toxicity.n_invalid) == (3, 2)
    assert toxicity.recall == pytest.approx(1 / 3)  # only c1 is right; invalid is wrong, not skipped
    category = report.score("implCategory", "propagated", "all")
    assert (category.n, category.n_invalid) == (2, 1)  # c1, c2 reached by the annotation
    assert report.score("implCategory", "optimistic", "all").n_invalid == 1
    assert report.score("implCategory", "conditional", "all").n == 1  # invalid never reaches
    items, _ = comment_items(annotations, predictions)
    _, pred, _ = setting_labels(all_pairs(items), "toxicity", "propagated")
    assert pred == ["yes", INVALID, INVALID]


# ---------------------------------------------------------------- all vs random vs max
#
# toxicity; d1: annotators yes, no, no, prediction yes; d2: one annotator yes, prediction yes;
# d3: one annotator no, prediction no.
# all: gold y n n y n / pred y y y y n: yes F1 = 2·2/(2+4) = 2/3, no F1 = 2·1/(3+1) = 1/2,
#      weighted = 2/5 · 2/3 + 3/5 · 1/2 = 17/30
# random: d1 draws a1 (p = 1/3) → perfect, 1.0; a2 or a3 (p = 2/3) → yes 2/3, no 2/3 → 2/3;
#      median of the draws 2/3
# max (on toxicity): d1 → a1 → 1.0


def _annotation_modes_case():
    annotations = [
        annotation("d1", "a1", no_implication()),
        annotation("d1", "a2", not_toxic()),
        annotation("d1", "a3", not_toxic()),
        annotation("d2", "a1", no_implication()),
        annotation("d3", "a1", not_toxic()),
    ]
    predictions = [prediction("d1", no_implication()), prediction("d2", full()), prediction("d3", not_toxic())]
    return annotations, predictions


def test_annotation_modes_hand_computed():
    annotations, predictions = _annotation_modes_case()
    report = evaluate(
        annotations,
        predictions,
        variables=["toxicity"],
        settings=["propagated"],
        n_draws=101,
        seed=0,
        max_on=["toxicity"],
    )
    assert report.score("toxicity", "propagated", "all").f1 == pytest.approx(17 / 30)
    assert report.score("toxicity", "propagated", "all").n == 5
    assert report.score("toxicity", "propagated", "random").f1 == pytest.approx(2 / 3)
    assert report.score("toxicity", "propagated", "random").n == 3
    assert report.score("toxicity", "propagated", "max").f1 == pytest.approx(1.0)
    items, _ = comment_items(annotations, predictions)
    values = {round(score_variable(draw, "toxicity", "propagated")[2], 9) for draw in random_draws(items, 200, seed=3)}
    assert values == {1.0, round(2 / 3, 9)}


def test_random_draws_are_seeded_and_max_breaks_ties_by_order():
    annotations, predictions = _annotation_modes_case()
    items, _ = comment_items(annotations, predictions)
    first = [[p.annotator for p in draw] for draw in random_draws(items, 20, seed=5)]
    again = [[p.annotator for p in draw] for draw in random_draws(items, 20, seed=5)]
    other = [[p.annotator for p in draw] for draw in random_draws(items, 20, seed=6)]
    assert first == again and first != other
    assert {a for draw in first for a in draw[:1]} == {"a1", "a2", "a3"}
    assert [p.annotator for p in max_pairs(items, ["toxicity"])] == ["a1", "a1", "a1"]
    # on counternarrative all three agree with the prediction: the tie goes to the first
    assert max_pairs(items, ["counternarrative"])[0].annotator == "a1"
    # hasImplication: a2 and a3 did not reach it, the prediction did (no) → a1 (equal) wins
    assert max_pairs(items, ["hasImplication"])[0].annotator == "a1"
    with pytest.raises(ValueError, match="unknown variable"):
        max_pairs(items, ["toxic"])


def test_single_annotations_make_the_three_modes_equal():
    annotations, predictions = _modes_case()
    report = evaluate(annotations, predictions, variables=["implPolarity", "toxicity"], n_draws=5)
    for variable in ("implPolarity", "toxicity"):
        for setting in ("propagated", "conditional", "optimistic"):
            rows = [report.score(variable, setting, mode) for mode in ("all", "random", "max")]
            assert rows[0].f1 == pytest.approx(rows[1].f1) and rows[0].f1 == pytest.approx(rows[2].f1)


# ---------------------------------------------------------------- metrics against independent implementations


def test_weighted_prf_matches_sklearn_on_random_labels():
    rng = random.Random(11)
    for trial in range(60):
        n = rng.randint(1, 40)
        classes = ["a", "b", "c", NOT_REACHED][: rng.randint(1, 4)]
        gold = [rng.choice(classes) for _ in range(n)]
        pred = [rng.choice([*classes, INVALID]) for _ in range(n)]
        mine = weighted_prf(gold, pred)
        p, r, f, _ = precision_recall_fscore_support(gold, pred, average="weighted", zero_division=0)
        assert (mine.precision, mine.recall, mine.f1) == pytest.approx((p, r, f)), trial


def test_weighted_prf_multilabel_matches_sklearn():
    rng = random.Random(12)
    labels = ["past", "present", "future", NOT_REACHED]
    for trial in range(60):
        n = rng.randint(1, 30)
        gold = [frozenset(rng.sample(labels, rng.randint(1, 2))) for _ in range(n)]
        pred = [frozenset(rng.sample(labels, rng.randint(0, 3))) for _ in range(n)]
        binarizer = MultiLabelBinarizer(classes=labels).fit([labels])
        y_true, y_pred = binarizer.transform(gold), binarizer.transform(pred)
        p, r, f, _ = precision_recall_fscore_support(y_true, y_pred, average="weighted", zero_division=0)
        mine = weighted_prf_multilabel(gold, pred)
        assert (mine.precision, mine.recall, mine.f1) == pytest.approx((p, r, f)), trial


def test_empty_inputs_are_nan():
    assert math.isnan(weighted_prf([], []).f1)
    assert math.isnan(prior_score([]))
    assert math.isnan(weighted_prf_multilabel([], []).f1)
    with pytest.raises(ValueError):
        weighted_prf(["a"], [])


def test_prior_formula_matches_a_large_simulation():
    rng = np.random.default_rng(0)
    classes = np.array(["a", "b", "c", "d"])
    p = np.array([0.5, 0.25, 0.15, 0.1])
    n = 200_000
    gold = rng.choice(classes, size=n, p=p).tolist()
    empirical = np.array([gold.count(c) / n for c in classes])
    guesses = rng.choice(classes, size=n, p=empirical).tolist()  # guess in proportion to the test distribution
    simulated = weighted_prf(gold, guesses)
    expected = prior_score(gold)
    assert expected == pytest.approx(float((empirical**2).sum()))
    assert expected == pytest.approx(0.345, abs=0.005)
    for value in (simulated.precision, simulated.recall, simulated.f1):
        assert value == pytest.approx(expected, abs=0.005)


def test_multilabel_prior_formula_matches_a_large_simulation():
    rng = np.random.default_rng(1)
    labels = ["past", "present", "future"]
    q = np.array([0.2, 0.7, 0.4])
    n = 100_000
    gold_matrix = rng.random((n, 3)) < q
    gold_matrix[gold_matrix.sum(axis=1) == 0, 1] = True  # at least one time per item
    gold = [frozenset(label for label, on in zip(labels, row, strict=True) if on) for row in gold_matrix]
    q_hat = gold_matrix.mean(axis=0)
    guess_matrix = rng.random((n, 3)) < q_hat
    guesses = [frozenset(label for label, on in zip(labels, row, strict=True) if on) for row in guess_matrix]
    simulated = weighted_prf_multilabel(gold, guesses)
    expected = prior_score_multilabel(gold)
    assert expected == pytest.approx(float((q_hat**2).sum() / q_hat.sum()))
    assert simulated.f1 == pytest.approx(expected, abs=0.005)
    assert simulated.precision == pytest.approx(expected, abs=0.005)


# ---------------------------------------------------------------- Jaccard and cond-tokens


def test_jaccard_hand_cases():
    assert jaccard(["That", "chick", "her"], ["That", "chick", "her"]) == 1.0
    assert jaccard(["That", "chick", "her"], ["her", "back"]) == pytest.approx(1 / 4)
    assert jaccard(["a", "a", "b"], ["a"]) == pytest.approx(1 / 2)  # sets
    assert jaccard([], ["x"]) == 0.0
    assert jaccard([], []) is None
    assert jaccard(["外地人"], ["外地"], unit="char") == pytest.approx(2 / 3)
    assert jaccard(["外地人"], ["外地"]) == 0.0
    assert jaccard(["ｗｅ"], ["we"], unit="char") == 1.0


def test_jaccard_rows_and_cond_tokens_threshold():
    annotations = [
        annotation("c1", "a", full(subject_tokens=("That", "chick", "her"))),
        annotation("c2", "a", full(subject_tokens=("him",), specificity="personal")),
        annotation("c3", "a", full(subject_tokens=())),
        annotation("c4", "a", not_toxic()),
    ]
    predictions = [
        prediction("c1", full(subject_tokens=("chick", "her"))),  # 2/3
        prediction("c2", full(subject_tokens=("them", "they"), role="author")),  # 0
        prediction("c3", full(subject_tokens=())),  # both empty: left out, counted
        prediction("c4", full()),
    ]
    report = evaluate(annotations, predictions, variables=["subject"], modes=["all"])
    row = next(r for r in report.jaccard if r.variable == "subjectTokens")
    assert (row.n, row.n_both_empty) == (2, 1)
    assert row.mean == pytest.approx((2 / 3 + 0) / 2)
    cond = report.score("subject", "cond-tokens", "all")
    assert cond.n == 1 and cond.f1 == 1.0  # only c1 passes Jaccard ≥ 0.5
    assert report.score("subject", "conditional", "all").n == 3
    strict = evaluate(annotations, predictions, variables=["subject"], modes=["all"], token_threshold=0.7)
    assert strict.score("subject", "cond-tokens", "all").n == 0
    no_tokens = evaluate(annotations, predictions, variables=["implSarcasm"], modes=["all"])
    assert no_tokens.score("implSarcasm", "cond-tokens", "all").n == 0  # no relevant token variable


# ---------------------------------------------------------------- ordinal attitude table


def test_ordinal_error_table_hand_case():
    H, VH, L, VL, M, N = "High", "Very high", "Low", "Very low", "Medium", NA
    pairs = [(H, H), (H, VH), (H, L), (VL, VH), (VH, VL), (M, VL), (N, N), (N, L), (L, N)]
    table = ordinal_error_table([(Attitude(g), Attitude(p)) for g, p in pairs])
    assert table.steps == {"0": 1, "1": 1, "2": 2, "3+": 2}
    assert (table.na_both, table.na_mismatch, table.n) == (1, 2, 9)
    assert table.to_dict()["3+"] == 2


def test_attitude_tables_use_matching_summaries_by_default():
    gold_same = full(attitudes=("High", "Very high", "Low", "Low", NA))
    gold_other = full(polarity="Positive", attitudes=("Very low", "Very low", "Very low", "Very low", "Very low"))
    annotations = [annotation("c1", "a1", gold_other), annotation("c1", "a2", gold_same)]
    predictions = [prediction("c1", full(attitudes=("High", "Medium", "Very high", "Low", NA)))]
    matched = evaluate(annotations, predictions, variables=["toxicity"], modes=["all"])
    assert matched.attitudes["authorBelief"].steps["0"] == 1 and matched.attitudes["authorBelief"].n == 1
    assert matched.attitudes["authorPrefer"].steps["2"] == 1  # Very high vs Medium
    assert matched.attitudes["authorIntent"].steps["3+"] == 1  # Low vs Very high
    assert matched.attitudes["expertBelief"].na_both == 1
    everyone = evaluate(annotations, predictions, variables=["toxicity"], modes=["all"], attitudes_matched_only=False)
    assert everyone.attitudes["authorBelief"].n == 2
    assert everyone.attitudes["authorBelief"].steps["3+"] == 1  # Very low vs High
    assert everyone.attitudes["expertBelief"].na_mismatch == 1


# ---------------------------------------------------------------- the multilingual fixture


def test_fixture_report_counts_and_an_independent_toxicity_score():
    annotations = load_annotations(FIXTURES / "annotations.jsonl")
    predictions = load_predictions(FIXTURES / "predictions.jsonl")
    report = evaluate(annotations, predictions, n_draws=21, seed=0)
    assert (report.n_comments, report.n_annotations, report.n_missing, report.n_invalid) == (11, 33, 1, 2)
    assert len(report.scores) == len(CLASSIFICATION_VARIABLES) * 4 * 4  # variables × settings × modes
    assert report.summary.counts["identical"] == 4
    # toxicity is always reached: propagated/all = every (annotation, prediction) pair
    pred = {line["commentId"]: line for line in fixture_lines("predictions.jsonl")}
    gold_labels, pred_labels = [], []
    for line in fixture_lines("annotations.jsonl"):
        gold_labels.append("yes" if line["reasoning"]["toxicity"] else "no")
        p = pred.get(line["commentId"])
        pred_labels.append(
            INVALID if p is None or "reasoning" not in p else ("yes" if p["reasoning"]["toxicity"] else "no")
        )
    p, r, f, _ = precision_recall_fscore_support(gold_labels, pred_labels, average="weighted", zero_division=0)
    row = report.score("toxicity", "propagated", "all")
    assert (row.precision, row.recall, row.f1) == pytest.approx((p, r, f))
    assert row.n_invalid == 6  # two invalid comments × three annotators
    text = json.dumps(report.to_dict(), allow_nan=False, ensure_ascii=False)
    again = evaluate(annotations, predictions, n_draws=21, seed=0)
    assert json.dumps(again.to_dict(), allow_nan=False, ensure_ascii=False) == text  # re-scoring is bit-identical


def test_evaluate_rejects_bad_options():
    annotations, predictions = _modes_case()
    with pytest.raises(ValueError, match="not classification variables: authorBelief"):
        evaluate(annotations, predictions, variables=["authorBelief"])
    with pytest.raises(ValueError, match="unknown setting"):
        evaluate(annotations, predictions, settings=["pessimistic"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="no F1"):
        score_variable([], "implTokens", "conditional")


def test_metric_docstring_examples():
    import doctest

    from verimod.tasks.toxirex import evaluation_metrics

    assert doctest.testmod(evaluation_metrics).failed == 0


# ---------------------------------------------------------------- empty random draws, majority vote, groups


def _one_reacher_case(n_comments: int = 1):
    """Per comment three annotators; only a1 reaches the implication (and agrees with the prediction)."""
    annotations, predictions = [], []
    for k in range(n_comments):
        comment = f"e{k}"
        annotations += [
            annotation(comment, "a1", full(polarity="Negative")),
            annotation(comment, "a2", not_toxic()),
            annotation(comment, "a3", not_toxic()),
        ]
        predictions.append(prediction(comment, full(polarity="Negative")))
    return annotations, predictions


def test_random_mode_with_mostly_empty_draws_is_undefined_not_100_percent():
    annotations, predictions = _one_reacher_case()
    report = evaluate(annotations, predictions, variables=["implPolarity"], settings=["conditional"],
                      modes=["random"], n_draws=100, seed=4)  # fmt: skip
    row = report.score("implPolarity", "conditional", "random")
    # the draws that pick a1 (index 0 in name order) are the only non-empty ones
    chosen = np.random.default_rng(4).integers(0, [3], size=(100, 1))[:, 0]
    assert row.nonempty_share == pytest.approx(np.mean(chosen == 0)) and row.nonempty_share < 0.5
    assert row.n == 0 and math.isnan(row.f1) and math.isnan(row.precision) and math.isnan(row.prior)
    # with most draws non-empty the medians are over the non-empty draws
    two = [a for a in annotations if a.annotator != "a3"] + [annotation("e0", "a3", full(polarity="Negative"))]
    filled = evaluate(two, predictions, variables=["implPolarity"], settings=["conditional"], modes=["random"],
                      n_draws=100, seed=4).score("implPolarity", "conditional", "random")  # fmt: skip
    assert filled.nonempty_share == pytest.approx(np.mean(chosen != 1)) and filled.nonempty_share >= 0.5
    assert (filled.n, filled.f1) == (1, 1.0)


def test_all_mode_without_items_is_undefined():
    annotations, predictions = _one_reacher_case()
    report = evaluate(annotations, predictions, variables=["hasOther"], settings=["conditional"], modes=["all"])
    row = report.score("hasOther", "conditional", "all")
    assert row.n == 1 and row.f1 == 1.0 and row.nonempty_share == 1.0
    lone = evaluate([a for a in annotations if a.annotator != "a1"], predictions, variables=["hasOther"],
                    settings=["conditional"], modes=["all"]).score("hasOther", "conditional", "all")  # fmt: skip
    assert lone.n == 0 and lone.nonempty_share == 0.0 and math.isnan(lone.f1)


# Majority vote, by hand (three annotators):
#   m1: a1 full N, a2 full N, a3 not toxic  → toxicity yes (2/3); implPolarity N (2/3)
#   m2: a1 full N, a2 full P, a3 not toxic  → toxicity yes; implPolarity N | P | ∅: no majority
#   m3: a1, a2 not toxic, a3 full N         → toxicity no; implPolarity ∅ (2/3)
# predictions: m1 full N, m2 full N, m3 not toxic.
#   toxicity: gold yes yes no / pred yes yes no → F1 1; Prior (2/3)² + (1/3)² = 5/9
#   implPolarity propagated: m1 (N / N) only; m2 left out (no majority); m3 neither side → 1 item
def _majority_case():
    annotations = [
        annotation("m1", "a1", full(polarity="Negative", impl_tokens=("watch", "her", "back"))),
        annotation("m1", "a2", full(polarity="Negative", impl_tokens=("watch", "her"))),
        annotation("m1", "a3", not_toxic()),
        annotation("m2", "a1", full(polarity="Negative")),
        annotation("m2", "a2", full(polarity="Positive")),
        annotation("m2", "a3", not_toxic()),
        annotation("m3", "a1", not_toxic()),
        annotation("m3", "a2", not_toxic()),
        annotation("m3", "a3", full(polarity="Negative")),
    ]
    predictions = [prediction("m1", full()), prediction("m2", full()), prediction("m3", not_toxic())]
    return annotations, predictions


def test_majority_vote_mode_hand_computed():
    annotations, predictions = _majority_case()
    report = evaluate(annotations, predictions, variables=["toxicity", "implPolarity"], settings=["propagated"],
                      modes=["majority", "all"])  # fmt: skip
    toxicity = report.score("toxicity", "propagated", "majority")
    assert (toxicity.n, toxicity.f1, toxicity.prior, toxicity.n_no_majority) == (3, 1.0, pytest.approx(5 / 9), 0)
    polarity = report.score("implPolarity", "propagated", "majority")
    assert (polarity.n, polarity.f1, polarity.n_no_majority) == (1, 1.0, 1)
    assert report.score("toxicity", "propagated", "all").n == 9  # every annotation: a different sample
    items, _ = comment_items(annotations, predictions)
    sides = {p.comment_id: p.gold for p in majority_pairs(items)}
    assert sides["m1"].values["implTokens"] == ("watch", "her")  # tokens chosen by more than half
    assert "implPolarity" in sides["m2"].undecided and "implPolarity" not in sides["m2"].reached
    assert "hasImplication" not in sides["m3"].reached and not sides["m3"].undecided


def test_group_annotations_by_language():
    from verimod.core.errors import InputError
    from verimod.tasks.toxirex.groups import group_annotations

    annotations = load_annotations(FIXTURES / "annotations.jsonl")
    groups = group_annotations(annotations)
    assert list(groups) == ["en", "nl", "zh"]
    assert sum(len(g) for g in groups.values()) == len(annotations)
    assert {a.comment_id[:2] for a in groups["zh"]} == {"zh"}
    mixed = [*annotations[:2], annotations[2].model_copy(update={"lang": "en"})]
    with pytest.raises(InputError, match="annotated as 'zh' and 'en'"):
        group_annotations(mixed)
    with pytest.raises(InputError, match="has no lang"):
        group_annotations([annotations[0].model_copy(update={"lang": None})])
