"""The relevance reward: hand-computed edge scores, normalisation edge cases, admissibility
thresholds, and the scorer adapters' arithmetic (label probabilities, token log-probabilities)."""

from __future__ import annotations

import asyncio
import math

import pytest

from verimod.tasks.softhate.scorers import (
    CharNgramTfidfSimilarity,
    EmbeddingSimilarity,
    ScoringError,
    StaticLanguageScorer,
    StaticNliScorer,
    nli_from_label_probs,
    nli_from_text,
    passes_safety,
    token_nll_entropy,
)
from verimod.tasks.softhate.scoring import (
    EdgeInputs,
    LmStats,
    NliProbs,
    ScoringConfig,
    chain_score,
    char_ngram_cosine,
    default_chain_weights,
    effect,
    minmax,
    population_variance,
    resistance,
    score_pool,
    threshold_rejections,
)

CONFIG = ScoringConfig()  # ε = 0.05, γ_var = 0.2, weights 0.25 each, τ_ent = 0.6, τ_contr = 0.4
ln = math.log


def nli(e: float, n: float, k: float) -> NliProbs:
    return NliProbs(entail=e, neutral=n, contradict=k)


def lm(name: str, nll: float, entropy: float) -> LmStats:
    return LmStats(scorer=name, mean_nll=nll, mean_entropy=entropy)


# -- components ------------------------------------------------------------------------------


def test_effect_and_resistance() -> None:
    probs = nli(0.9, 0.05, 0.05)
    assert effect(probs) == pytest.approx(0.9 * 0.95)  # e · (1 − k)
    assert resistance(probs) == pytest.approx(0.1 + 0.05)  # (1 − e) + k
    assert resistance(nli(1.0, 0.0, 0.0)) == 0.0
    assert resistance(nli(0.0, 0.0, 1.0)) == 2.0


def test_minmax_edge_cases() -> None:
    assert minmax([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert minmax([7.0, 7.0, 7.0]) == [0.0, 0.0, 0.0]  # all equal → 0 (documented)
    assert minmax([3.5]) == [0.0]
    assert minmax([]) == []
    assert minmax([-1.0, 1.0]) == [0.0, 1.0]


def test_population_variance() -> None:
    assert population_variance([1.0, 3.0]) == 1.0  # ((3 − 1) / 2)²
    assert population_variance([2.0]) == 0.0
    assert population_variance([1.0, 2.0, 3.0]) == pytest.approx(2 / 3)


def test_char_ngram_cosine_by_hand() -> None:
    # sizes (2,): "abcd" → ab, bc, cd; "abce" → ab, bc, ce; dot 2, norms √3 · √3 → 2/3
    assert char_ngram_cosine("abcd", "abce", sizes=(2,)) == pytest.approx(2 / 3)
    # default sizes (2, 3): "甲乙寅卯" has 甲乙 乙寅 寅卯 甲乙寅 乙寅卯; "甲乙丙丁" has 甲乙 乙丙 丙丁 甲乙丙 乙丙丁;
    # one shared gram (甲乙) → 1 / (√5 · √5) = 0.2
    assert char_ngram_cosine("甲乙寅卯", "甲乙丙丁") == pytest.approx(0.2)
    assert char_ngram_cosine("ＡＢＣ def", "abc   DEF") == 1.0  # width, case and spacing insensitive
    assert char_ngram_cosine("子丑", "甲乙") == 0.0
    assert char_ngram_cosine("a", "A") == 1.0  # too short for n-grams: equality decides
    assert char_ngram_cosine("a", "b") == 0.0


# -- the pool: two scorer LMs, hand computed ----------------------------------------------------


def test_score_pool_two_lms_by_hand() -> None:
    pool = [
        EdgeInputs(nli(0.9, 0.05, 0.05), [lm("lm1", 2.0, 1.0), lm("lm2", 3.0, 2.0)], 0.2),  # A
        EdgeInputs(nli(0.7, 0.2, 0.1), [lm("lm1", 4.0, 1.0), lm("lm2", 2.0, 2.0)], 0.6),  # B
        EdgeInputs(nli(0.8, 0.1, 0.1), [lm("lm1", 3.0, 3.0), lm("lm2", 2.5, 2.0)], 0.4),  # C
    ]
    scores, ranges = score_pool(pool, CONFIG)
    a, b, c = scores
    # Effect = e(1 − k): A 0.855, B 0.63, C 0.72. Resistance (1 − e) + k: A 0.15, B 0.4, C 0.3.
    assert [s.effect for s in scores] == pytest.approx([0.855, 0.63, 0.72])
    assert [s.resistance for s in scores] == pytest.approx([0.15, 0.4, 0.3])
    # Normalised over [0.15, 0.4]: A 0, B 1, C 0.15/0.25 = 0.6. Redundancy [0.2, 0.6]: 0, 1, 0.5.
    assert [s.resistance_norm for s in scores] == pytest.approx([0.0, 1.0, 0.6])
    assert [s.redundancy_norm for s in scores] == pytest.approx([0.0, 1.0, 0.5])
    # lm1 surprisal 2, 4, 3 → 0, 1, 0.5; entropy 1, 1, 3 → 0, 0, 1.
    # lm2 surprisal 3, 2, 2.5 → 1, 0, 0.5; entropy 2, 2, 2 → all equal → 0, 0, 0.
    assert [s.lm[0].surprisal_norm for s in scores] == pytest.approx([0.0, 1.0, 0.5])
    assert [s.lm[0].entropy_norm for s in scores] == pytest.approx([0.0, 0.0, 1.0])
    assert [s.lm[1].surprisal_norm for s in scores] == pytest.approx([1.0, 0.0, 0.5])
    assert [s.lm[1].entropy_norm for s in scores] == [0.0, 0.0, 0.0]
    # Cost_m = 0.25 (r̃ + s̃_m + h̃_m + d̃):
    #   lm1: A 0.25·0 = 0, B 0.25·(1 + 1 + 0 + 1) = 0.75, C 0.25·(0.6 + 0.5 + 1 + 0.5) = 0.65
    #   lm2: A 0.25·(0 + 1 + 0 + 0) = 0.25, B 0.25·(1 + 0 + 0 + 1) = 0.5, C 0.25·(0.6 + 0.5 + 0 + 0.5) = 0.4
    assert [s.lm[0].cost for s in scores] == pytest.approx([0.0, 0.75, 0.65])
    assert [s.lm[1].cost for s in scores] == pytest.approx([0.25, 0.5, 0.4])
    # edge_m = ln(Effect / (Cost_m + 0.05))
    expected = {
        "A": (ln(0.855 / 0.05), ln(0.855 / 0.30)),
        "B": (ln(0.63 / 0.80), ln(0.63 / 0.55)),
        "C": (ln(0.72 / 0.70), ln(0.72 / 0.45)),
    }
    for score, (e1, e2) in zip(scores, expected.values(), strict=True):
        assert [s.edge for s in score.lm] == pytest.approx([e1, e2], rel=1e-12)
        mean = (e1 + e2) / 2
        variance = ((e1 - e2) / 2) ** 2  # population variance of two values
        assert score.mean == pytest.approx(mean, rel=1e-12)
        assert score.variance == pytest.approx(variance, rel=1e-12)
        assert score.score == pytest.approx(mean - 0.2 * variance, rel=1e-12)
    # A: ln 17.1 = 2.83908, ln 2.85 = 1.04732 → mean 1.94320, var 0.89588² = 0.80260 → 1.78268
    assert a.score == pytest.approx(1.78268, abs=1e-5)
    assert b.score < c.score < a.score
    got = {(r.component, r.scorer): (r.minimum, r.maximum) for r in ranges}
    assert got[("resistance", None)] == pytest.approx((0.15, 0.4))
    assert got[("redundancy", None)] == pytest.approx((0.2, 0.6))
    assert got[("surprisal", "lm1")] == (2.0, 4.0)
    assert got[("entropy", "lm2")] == (2.0, 2.0)


def test_variance_penalty_only_with_disagreement() -> None:
    same = [lm("x", 2.0, 1.0), lm("y", 2.0, 1.0)]
    other = [lm("x", 3.0, 2.0), lm("y", 3.0, 2.0)]
    pool = [EdgeInputs(nli(0.9, 0.1, 0.0), same, 0.0), EdgeInputs(nli(0.9, 0.1, 0.0), other, 0.0)]
    scores, _ = score_pool(pool, CONFIG)
    assert [s.variance for s in scores] == [0.0, 0.0]  # both LMs agree: no penalty
    assert scores[0].score == scores[0].mean == pytest.approx(ln(0.9 / 0.05))
    # cost 0.25·(0 + 1 + 1 + 0) = 0.5
    assert scores[1].score == pytest.approx(ln(0.9 / 0.55))


def test_single_candidate_pool_and_effect_floor() -> None:
    # one candidate: every component normalises to 0, Cost = 0, edge = ln(Effect / ε)
    (only,), _ = score_pool([EdgeInputs(nli(0.8, 0.2, 0.0), [lm("m", 5.0, 4.0)], 0.9)], CONFIG)
    assert only.lm[0].cost == 0.0
    assert only.score == pytest.approx(ln(0.8 / 0.05))
    # Effect 0 is floored at ε so the score stays finite: ln(ε / (Cost + ε))
    scores, _ = score_pool(
        [
            EdgeInputs(nli(0.0, 0.0, 1.0), [lm("m", 1.0, 1.0)], 0.0),
            EdgeInputs(nli(1.0, 0.0, 0.0), [lm("m", 1.0, 1.0)], 0.0),
        ],
        CONFIG,
    )
    assert scores[0].effect == 0.0
    assert scores[0].score == pytest.approx(ln(0.05 / (0.25 + 0.05)))  # resistance 2 → r̃ 1 → cost 0.25
    assert math.isfinite(scores[0].score)


def test_pool_without_lms_and_mismatched_lms() -> None:
    scores, ranges = score_pool([EdgeInputs(nli(0.9, 0.1, 0.0), [], 0.0)], CONFIG)
    assert scores[0].lm == [] and scores[0].score == pytest.approx(ln(0.9 / 0.05))
    assert {r.component for r in ranges} == {"resistance", "redundancy"}
    with pytest.raises(ValueError, match="scorer LMs"):
        score_pool(
            [
                EdgeInputs(nli(0.9, 0.1, 0.0), [lm("a", 1, 1)], 0.0),
                EdgeInputs(nli(0.9, 0.1, 0.0), [lm("b", 1, 1)], 0.0),
            ],
            CONFIG,
        )
    assert score_pool([], CONFIG) == ([], [])


def test_custom_weights_and_epsilon() -> None:
    config = ScoringConfig(epsilon=0.1, weights={"resistance": 1.0, "surprisal": 0, "entropy": 0, "redundancy": 0})
    scores, _ = score_pool([EdgeInputs(nli(0.9, 0.1, 0.0), [], 0.0), EdgeInputs(nli(0.7, 0.1, 0.2), [], 0.0)], config)
    assert scores[1].score == pytest.approx(ln(0.7 * 0.8 / (1.0 + 0.1)))  # r̃ = 1, cost = 1


def test_chain_score() -> None:
    assert default_chain_weights(2) == (0.5, 0.5)
    assert chain_score([2.0, 1.0], (0.5, 0.5)) == 1.5
    assert chain_score([2.0], (0.5, 0.5)) == 1.0  # a partial chain: its cumulative score
    assert chain_score([2.0, 1.0], (0.25, 0.75)) == 1.25
    with pytest.raises(ValueError, match="chain weights"):
        chain_score([1.0, 1.0, 1.0], (0.5, 0.5))


@pytest.mark.parametrize(
    ("probs", "codes"),
    [
        (nli(0.6, 0.0, 0.4), []),  # both bounds are inclusive
        (nli(0.5999, 0.0, 0.4), ["low_entailment"]),
        (nli(0.6, 0.0, 0.4001), ["high_contradiction"]),
        (nli(0.3, 0.2, 0.5), ["low_entailment", "high_contradiction"]),
        (nli(1.0, 0.0, 0.0), []),
    ],
)
def test_threshold_rejections(probs: NliProbs, codes: list[str]) -> None:
    assert [r.code for r in threshold_rejections(probs, CONFIG)] == codes


def test_scoring_config_validation() -> None:
    with pytest.raises(ValueError):
        ScoringConfig(epsilon=0.0)
    with pytest.raises(ValueError):
        ScoringConfig(redundancy_ngrams=())
    with pytest.raises(ValueError):
        ScoringConfig(unknown=1)  # type: ignore[call-arg]


# -- scorer adapters -------------------------------------------------------------------------


def test_token_nll_entropy_by_hand() -> None:
    # row 1: logits (0, 0) → p = (½, ½); token 0: nll ln 2, entropy ln 2
    # row 2: logits (ln 3, 0) → p = (¾, ¼); token 1: nll ln 4, entropy −(¾ ln ¾ + ¼ ln ¼)
    nll, entropy = token_nll_entropy([[0.0, 0.0], [ln(3.0), 0.0]], [0, 1])
    assert nll == pytest.approx((ln(2) + ln(4)) / 2)
    assert entropy == pytest.approx((ln(2) - (0.75 * ln(0.75) + 0.25 * ln(0.25))) / 2)
    with pytest.raises(ValueError, match="one logits row per token"):
        token_nll_entropy([[0.0, 0.0]], [0, 1])


def test_nli_from_label_probs() -> None:
    assert nli_from_label_probs({"Entailment": 0.6, "neutral": 0.0, "CONTRADICTION": 0.4}).as_tuple() == (0.6, 0.0, 0.4)
    assert nli_from_label_probs({"entail": 2.0, "neutral": 1.0, "contradict": 1.0}).as_tuple() == (0.5, 0.25, 0.25)
    assert nli_from_label_probs({"entailment": 0.5}).as_tuple() == (1.0, 0.0, 0.0)
    with pytest.raises(ScoringError):
        nli_from_label_probs({"yes": 1.0})
    with pytest.raises(ScoringError):
        nli_from_label_probs({"entailment": 0.0, "neutral": 0.0})


def test_nli_from_text() -> None:
    assert nli_from_text('{"entailment": 0.7, "neutral": 0.2, "contradiction": 0.1}').as_tuple() == (0.7, 0.2, 0.1)
    assert nli_from_text("Answer: Contradiction.").as_tuple() == (0.0, 0.0, 1.0)  # one-hot
    assert nli_from_text("entailment").entail == 1.0
    with pytest.raises(ScoringError, match="no NLI label"):
        nli_from_text("I think so")
    with pytest.raises(ScoringError):
        nli_from_text(None)


def test_static_scorers() -> None:
    nli_scorer = StaticNliScorer({"k": (0.8, 0.1, 0.1)})
    assert asyncio.run(nli_scorer.score("p", "h", key="k")).entail == 0.8
    with pytest.raises(ScoringError):
        asyncio.run(nli_scorer.score("p", "h", key="other"))
    lm_scorer = StaticLanguageScorer({"k": (2.0, 1.0)}, name="lmA")
    assert asyncio.run(lm_scorer.score("c", "x", key="k")) == LmStats(scorer="lmA", mean_nll=2.0, mean_entropy=1.0)
    with pytest.raises(ScoringError):
        asyncio.run(lm_scorer.score("c", "x"))


def test_passes_safety_sync_and_async() -> None:
    async def async_filter(text: str) -> bool:
        return "bad" not in text

    assert asyncio.run(passes_safety(lambda t: True, "x")) is True
    assert asyncio.run(passes_safety(async_filter, "bad text")) is False
    assert asyncio.run(passes_safety(async_filter, "fine")) is True


def test_char_tfidf_similarity() -> None:
    sim = CharNgramTfidfSimilarity()
    values = sim.similarity("今天天气很好", ["今天天气很好", "ＡＢＣ", "今天天气不好"])
    assert values[0] == pytest.approx(1.0)
    assert values[1] == 0.0
    assert 0.0 < values[2] < 1.0
    assert sim.similarity("abc", ["ABC"]) == [pytest.approx(1.0)]  # case-folded
    assert sim.similarity("abc", []) == []
    assert sim.name == "char-tfidf-1-3"


def test_embedding_similarity() -> None:
    table = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0], "z": [0.0, 0.0]}
    sim = EmbeddingSimilarity(lambda texts: [table[t] for t in texts], name="toy")
    assert sim.similarity("a", ["a", "b", "c", "z"]) == pytest.approx([1.0, 0.0, 1 / math.sqrt(2), 0.0])
