import numpy as np
import pytest
from sklearn.metrics import f1_score

from verimod.stats import macro_f1, per_class_f1


def test_hand_computed_case():
    # a: TP 1, support 2, predicted 1 -> 2/3; b: TP 1, support 1, predicted 2 -> 2/3
    assert per_class_f1(["a", "a", "b"], ["a", "b", "b"]) == pytest.approx({"a": 2 / 3, "b": 2 / 3})
    assert macro_f1(["a", "a", "b"], ["a", "b", "b"]) == pytest.approx(2 / 3)


def test_invalid_prediction_is_a_miss_and_no_false_positive():
    # INVALID is outside the label set: a miss for "a", a false positive for nobody
    scores = per_class_f1(["a", "b"], ["INVALID", "b"])
    assert scores == {"a": 0.0, "b": 1.0}


def test_predicted_class_absent_from_reference_is_not_averaged():
    assert per_class_f1(["a", "a"], ["a", "c"]) == pytest.approx({"a": 2 / 3})


def test_zero_division_applies_to_explicit_labels_without_support_or_predictions():
    assert per_class_f1(["a"], ["a"], labels=["a", "z"], zero_division=1.0) == {"a": 1.0, "z": 1.0}
    assert macro_f1([], [], labels=[]) == 0.0


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="items"):
        macro_f1(["a"], ["a", "b"])


@pytest.mark.parametrize("seed", range(25))
def test_matches_scikit_learn_on_random_labels(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    classes = ["harmful", "non_harmful", "x", "y", "INVALID"][: int(rng.integers(2, 6))]
    y_true = rng.choice(classes[:-1] if len(classes) > 2 else classes, size=n).tolist()
    y_pred = rng.choice(classes, size=n).tolist()
    labels = sorted(set(y_true))
    expected = f1_score(y_true, y_pred, labels=labels, average="macro", zero_division=0)
    assert macro_f1(y_true, y_pred) == pytest.approx(expected, abs=1e-12)
    per_class = f1_score(y_true, y_pred, labels=labels, average=None, zero_division=0)
    assert list(per_class_f1(y_true, y_pred).values()) == pytest.approx(per_class.tolist(), abs=1e-12)


def test_integer_arrays_match_scikit_learn():
    rng = np.random.default_rng(7)
    y_true = rng.integers(0, 4, size=500)
    y_pred = rng.integers(-1, 5, size=500)
    expected = f1_score(y_true, y_pred, labels=sorted(set(y_true.tolist())), average="macro", zero_division=0)
    assert macro_f1(y_true, y_pred) == pytest.approx(expected, abs=1e-12)
