"""The SoftHateBench safety-filter ensemble, with fake classifiers."""

from __future__ import annotations

import asyncio
import doctest

import numpy as np
import pytest

from verimod.models.base import BackendOptions, ModelBackend, ModelRequest, ModelResponse
from verimod.tasks.softhate import filters
from verimod.tasks.softhate.filters import FilterError, FilterModel, SafetyFilter, backend_scorer, combine


def fixed(p: float):
    """A scorer that gives every text the probability ``p``."""

    async def score(text: str) -> float:
        return p

    return score


def table(scores: dict[str, float]):
    """A scorer that looks the text up."""

    async def score(text: str) -> float:
        return scores[text]

    return score


def failing(exc: Exception):
    async def score(text: str) -> float:
        raise exc

    return score


def ensemble(*probabilities: float, **options) -> SafetyFilter:
    models = [FilterModel(f"m{i}", fixed(p)) for i, p in enumerate(probabilities)]
    return SafetyFilter(models, **options)


def check(f: SafetyFilter, text: str = "text") -> filters.FilterVerdict:
    return asyncio.run(f.check(text))


@pytest.mark.parametrize(
    ("probabilities", "flagged"),
    [((0.4, 0.7), True), ((0.3, 0.7), True), ((0.2, 0.7), False), ((0.1, 0.1, 0.9), False), ((0.0,), False)],
)
def test_bagging_is_the_mean_probability_against_the_threshold(probabilities, flagged):
    verdict = check(ensemble(*probabilities, explicit_threshold=None))
    assert verdict.flagged is flagged
    assert verdict.statistic == pytest.approx(np.mean(probabilities))
    assert verdict.cut == 0.5
    assert verdict.admissible is (not flagged)
    assert verdict.reason == ("flagged" if flagged else "admissible")


def test_bagging_weights_and_per_model_thresholds():
    models = [FilterModel("a", fixed(0.2), weight=3.0), FilterModel("b", fixed(0.9), weight=1.0)]
    verdict = check(SafetyFilter(models))
    assert verdict.statistic == pytest.approx((3 * 0.2 + 0.9) / 4)  # 0.375 < 0.5
    assert verdict.reason == "admissible"
    models = [FilterModel("a", fixed(0.2), threshold=0.3), FilterModel("b", fixed(0.45), threshold=0.4)]
    verdict = check(SafetyFilter(models))  # mean p 0.325 ≥ mean θ 0.35? no
    assert verdict.cut == pytest.approx(0.35)
    assert verdict.reason == "admissible"
    models = [FilterModel("a", fixed(0.3), threshold=0.3), FilterModel("b", fixed(0.45), threshold=0.4)]
    assert check(SafetyFilter(models)).reason == "flagged"  # 0.375 ≥ 0.35


@pytest.mark.parametrize(
    ("probabilities", "flagged"),
    [((0.6, 0.7, 0.1), True), ((0.6, 0.1), False), ((0.5, 0.5, 0.0, 0.0), False), ((0.9, 0.1, 0.1), False)],
)
def test_majority_needs_more_than_half(probabilities, flagged):
    verdict = check(ensemble(*probabilities, rule="majority", explicit_threshold=None))
    assert verdict.flagged is flagged
    assert verdict.statistic == pytest.approx(np.mean(np.asarray(probabilities) >= 0.5))


def test_majority_is_weighted():
    models = [FilterModel("a", fixed(0.9), weight=3.0), FilterModel("b", fixed(0.1)), FilterModel("c", fixed(0.1))]
    assert check(SafetyFilter(models, rule="majority")).flagged is True  # 3 of 5 weight


@pytest.mark.parametrize("q", [0.0, 0.25, 0.5, 0.75, 1.0])
@pytest.mark.parametrize("probabilities", [(0.1, 0.2, 0.6), (0.1, 0.55, 0.6), (0.5, 0.5), (0.9,), (0.0, 1.0, 0.3, 0.7)])
def test_quantile_vote_matches_numpy(probabilities, q):
    verdict = check(ensemble(*probabilities, rule="quantile", quantile=q, explicit_threshold=None))
    expected = float(np.quantile(probabilities, q))
    assert verdict.statistic == pytest.approx(expected)
    assert verdict.flagged is (expected >= 0.5)


def test_quantile_default_is_three_quarters():
    # Q_0.75 of (0.1, 0.2, 0.6) = 0.2 + 0.5 · 0.4 = 0.4 < 0.5; of (0.1, 0.55, 0.6) = 0.575
    assert check(ensemble(0.1, 0.2, 0.6, rule="quantile")).flagged is False
    assert check(ensemble(0.1, 0.55, 0.6, rule="quantile")).flagged is True


def test_quantile_with_unequal_thresholds_uses_margins():
    models = [FilterModel("a", fixed(0.35), threshold=0.3), FilterModel("b", fixed(0.45), threshold=0.6)]
    verdict = check(SafetyFilter(models, rule="quantile", quantile=0.75))
    assert verdict.cut == 0.0
    assert verdict.statistic == pytest.approx(np.quantile([0.05, -0.15], 0.75))  # 0.0 → flagged
    assert verdict.flagged is True


@pytest.mark.parametrize("seed", range(20))
def test_combine_agrees_with_the_margin_formulas(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    p, theta, w = rng.random(n), rng.uniform(0.2, 0.8, n), rng.uniform(0.1, 3, n)
    margin_mean = np.dot(w, p - theta) / w.sum()
    stat, cut, flagged = combine(p, theta, w, "bagging")
    assert stat - cut == pytest.approx(margin_mean) and flagged is bool(margin_mean >= 0)
    stat, cut, flagged = combine(p, theta, w, "majority")
    assert (stat, cut, flagged) == (pytest.approx(np.dot(w, p >= theta) / w.sum()), 0.5, bool(stat > 0.5))
    q = np.quantile(p - theta, 0.75)
    stat, cut, flagged = combine(p, theta, w, "quantile", 0.75)
    assert stat - cut == pytest.approx(q) and flagged is bool(q >= 0)


def test_explicit_hate_rule_overrides_the_vote():
    f = ensemble(0.96, 0.0, 0.0)  # bagging mean 0.32: the vote admits it
    verdict = check(f)
    assert verdict.flagged is False
    assert verdict.explicit is True
    assert verdict.reason == "explicit"
    assert verdict.admissible is False
    assert check(ensemble(0.96, 0.0, 0.0, explicit_threshold=None)).reason == "admissible"
    assert check(ensemble(0.94, 0.0, 0.0)).reason == "admissible"
    assert check(ensemble(0.95, 0.0, 0.0)).reason == "explicit"  # inclusive
    assert check(ensemble(0.7, 0.0, explicit_threshold=0.6)).reason == "explicit"


def test_explicit_and_flagged_report_explicit():
    assert check(ensemble(0.99, 0.99)).reason == "explicit"


def test_verdict_carries_per_model_scores():
    models = [FilterModel("roberta", fixed(0.7)), FilterModel("hatexplain", fixed(0.2), threshold=0.1)]
    verdict = check(SafetyFilter(models))
    assert [(s.name, s.probability, s.flagged) for s in verdict.scores] == [
        ("roberta", 0.7, True),
        ("hatexplain", 0.2, True),
    ]
    data = verdict.to_dict()
    assert data["rule"] == "bagging" and data["scores"][0]["name"] == "roberta"


def test_a_failing_model_rejects_the_text():
    models = [FilterModel("ok", fixed(0.1)), FilterModel("down", failing(TimeoutError("slow")))]
    verdict = check(SafetyFilter(models))
    assert verdict.reason == "error" and verdict.admissible is False
    assert verdict.statistic is None and verdict.flagged is None
    assert "TimeoutError" in (verdict.scores[1].error or "")
    with pytest.raises(FilterError, match="down"):
        check(SafetyFilter(models, on_error="raise"))


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), "0.3", True, None])
def test_a_non_probability_is_an_error(bad):
    verdict = check(SafetyFilter([FilterModel("m", fixed(bad))]))  # type: ignore[arg-type]
    assert verdict.reason == "error"


def test_explicit_wins_over_an_error_of_another_model():
    models = [FilterModel("sure", fixed(0.99)), FilterModel("down", failing(RuntimeError("x")))]
    assert check(SafetyFilter(models)).reason == "explicit"


def test_passes_is_the_generators_callable():
    f = SafetyFilter([FilterModel("m", table({"polite argument": 0.1, "slur": 0.99, "rude": 0.6}))])
    assert asyncio.run(f.passes("polite argument")) is True
    assert asyncio.run(f.passes("slur")) is False
    assert asyncio.run(f.passes("rude")) is False
    assert asyncio.run(f("polite argument")) is True  # the instance itself is awaitable-callable


def test_check_many_keeps_order_and_limits_concurrency():
    running = peak = 0

    async def slow(text: str) -> float:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.001)
        running -= 1
        return 0.9 if text.startswith("bad") else 0.1

    f = SafetyFilter([FilterModel("m", slow)], explicit_threshold=None)
    texts = [f"bad {i}" if i % 3 == 0 else f"ok {i}" for i in range(30)]
    verdicts = asyncio.run(f.check_many(texts, concurrency=4))
    assert [v.admissible for v in verdicts] == [not t.startswith("bad") for t in texts]
    assert peak <= 4


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rule": "vote"},
        {"quantile": 1.5},
        {"explicit_threshold": 2.0},
        {"on_error": "ignore"},
    ],
)
def test_bad_settings_are_rejected(kwargs):
    with pytest.raises(ValueError):
        SafetyFilter([FilterModel("m", fixed(0.1))], **kwargs)


def test_bad_models_are_rejected():
    with pytest.raises(ValueError, match="at least one"):
        SafetyFilter([])
    with pytest.raises(ValueError, match="unique"):
        SafetyFilter([FilterModel("m", fixed(0.1)), FilterModel("m", fixed(0.2))])
    with pytest.raises(ValueError, match="threshold"):
        FilterModel("m", fixed(0.1), threshold=1.2)
    with pytest.raises(ValueError, match="weight"):
        FilterModel("m", fixed(0.1), weight=0)


def test_identity_lists_the_settings():
    f = ensemble(0.1, 0.2, rule="quantile")
    identity = f.identity()
    assert identity["rule"] == "quantile" and identity["quantile"] == 0.75
    assert [m["name"] for m in identity["models"]] == ["m0", "m1"]


class _Backend(ModelBackend):
    prefix = "fake"

    def __init__(self, answer) -> None:
        super().__init__("m", BackendOptions())
        self.answer = answer
        self.requests: list[ModelRequest] = []

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return self.answer(request.input_text)


def test_backend_scorer_reads_label_probs():
    backend = _Backend(lambda text: ModelResponse(label_probs={"hate": 0.8, "not-hate": 0.2}))
    score = backend_scorer(backend, positive=("hate",))
    assert asyncio.run(score("x")) == pytest.approx(0.8)
    request = backend.requests[0]
    assert request.input_text == "x" and request.sample_id.startswith("softhate-filter:")


def test_backend_scorer_reads_a_generative_detector():
    backend = _Backend(lambda text: ModelResponse(text={"a": "Hateful", "b": "safe", "c": "hmm"}[text]))
    score = backend_scorer(backend)
    assert asyncio.run(score("a")) == 1.0
    assert asyncio.run(score("b")) == 0.0
    f = SafetyFilter([FilterModel("llm", score)])
    assert check(f, "c").reason == "error"
    assert check(f, "b").reason == "admissible"


def test_module_doctests_pass():
    assert doctest.testmod(filters).failed == 0
