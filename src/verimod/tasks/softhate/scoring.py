"""Relevance scores of AMT edges and chains (SoftHateBench's Relevance-Theory reward).

Pure functions and the records they return; no model is called here (see :mod:`.scorers`
for the models that produce the inputs and :mod:`.generate` for the search that uses them).

An *edge* is one defeasible inference step of the chain, scored as the step text (the
premises) supporting its parent text (the conclusion). For one pool of candidate edges
(every scored candidate of one search step, across the whole beam) and ``M`` scorer LMs:

- NLI on (premise = step text, hypothesis = parent text) gives ``(e, n, k)`` =
  (P(entail), P(neutral), P(contradict));
- ``Effect = e · (1 − k)``;
- ``resistance r = (1 − e) + k`` ∈ [0, 2]: the friction of a weak entailment plus that of a
  contradiction (0 for a certain entailment, 2 for a certain contradiction);
- ``surprisal s_m``: the mean token negative log-likelihood (nats per token, i.e. normalised
  by length) of the step text given the parent text under scorer LM ``m``;
- ``entropy h_m``: the mean, over the same token positions, of the entropy (nats) of LM
  ``m``'s next-token distribution;
- ``redundancy d``: :func:`char_ngram_cosine` of the step text and the parent text ∈ [0, 1];
- each component is min–max normalised within the pool, ``x̃ = (x − min) / (max − min)``,
  and is 0 for every candidate when ``max = min`` (a component that does not tell the
  candidates apart adds nothing); ``s`` and ``h`` are normalised per scorer LM;
- ``Cost_m = w_r r̃ + w_s s̃_m + w_h h̃_m + w_d d̃`` (defaults 0.25 each: the paper's
  Table 5 weights are not in the summary we follow, so they are configurable);
- ``edge_m = log(max(Effect, ε) / (Cost_m + ε))`` — the paper's ``log(Effect / (Cost + ε))``,
  with Effect floored at ε so that an edge with zero effect stays finite (such an edge is
  never admissible anyway); ε defaults to 0.05 (min–max normalisation gives the cheapest
  candidate Cost = 0, so ε bounds its score at ``log(Effect / ε)``);
- ``edge = mean_m edge_m − γ_var · var_m edge_m`` (population variance, γ_var = 0.2): the
  scorer LMs' scores are averaged and their disagreement penalised.

The chain score is ``Ψ = Σ_t λ_t · edge_t`` with ``λ_t = 1/T`` by default (T edges).
An edge is *admissible* when ``e ≥ τ_ent`` (0.6), ``k ≤ τ_contr`` (0.4) and its step text
passed the safety filter (checked by the search, not here).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

RejectionCode = Literal[
    "generation_error",  # the generator call failed
    "unparseable",  # the generator output did not have the asked-for fields
    "duplicate",  # the same text as an earlier candidate of the same prompt context
    "scoring_error",  # an NLI or LM scorer call failed
    "low_entailment",  # P(entail) < τ_ent
    "high_contradiction",  # P(contradict) > τ_contr
    "unsafe",  # the safety filter did not pass the text
    "safety_error",  # the safety filter raised (counted as not passed)
    "explicit_target",  # a vague variant still names the target group
]


class Rejection(BaseModel):
    """Why a candidate is not admissible: a code and a one-line detail."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: RejectionCode
    detail: str


class NliProbs(BaseModel):
    """An NLI scorer's probabilities for (premise, hypothesis)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    entail: float = Field(ge=0.0, le=1.0)
    neutral: float = Field(ge=0.0, le=1.0)
    contradict: float = Field(ge=0.0, le=1.0)

    def as_tuple(self) -> tuple[float, float, float]:
        """``(p_entail, p_neutral, p_contradict)``."""
        return (self.entail, self.neutral, self.contradict)


class LmStats(BaseModel):
    """One scorer LM's reading of a continuation given its context.

    ``top_k``: None when the entropy is exact (a local model's full distribution), else the
    number of alternatives per position it was bounded from (an HTTP scorer);
    ``outside_top_k``: tokens whose own probability was not returned (their NLL is a bound).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    scorer: str
    mean_nll: float = Field(ge=0.0)  # nats per continuation token
    mean_entropy: float = Field(ge=0.0)  # nats, mean over the continuation positions
    n_tokens: int | None = Field(None, ge=1)
    top_k: int | None = Field(None, ge=1)
    outside_top_k: int | None = Field(None, ge=0)


class CostWeights(BaseModel):
    """Weights of the four cost components (each applied to its min–max normalised value)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    resistance: float = Field(0.25, ge=0.0)
    surprisal: float = Field(0.25, ge=0.0)
    entropy: float = Field(0.25, ge=0.0)
    redundancy: float = Field(0.25, ge=0.0)


class ScoringConfig(BaseModel):
    """Constants of the relevance reward (defaults: SoftHateBench Appendix B where given)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    epsilon: float = Field(0.05, gt=0.0)
    gamma_var: float = Field(0.2, ge=0.0)
    tau_ent: float = Field(0.6, ge=0.0, le=1.0)
    tau_contr: float = Field(0.4, ge=0.0, le=1.0)
    weights: CostWeights = CostWeights()
    redundancy_ngrams: tuple[int, ...] = (2, 3)

    @model_validator(mode="after")
    def _check_ngrams(self) -> ScoringConfig:
        if not self.redundancy_ngrams or min(self.redundancy_ngrams) < 1:
            raise ValueError("redundancy_ngrams must be non-empty positive sizes")
        return self


class LmEdgeScore(BaseModel):
    """One scorer LM's share of an edge score."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scorer: str
    surprisal: float
    entropy: float
    surprisal_norm: float
    entropy_norm: float
    cost: float
    edge: float


class EdgeScore(BaseModel):
    """Every number behind one edge score (raw and normalised), for audit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    nli: NliProbs
    effect: float
    resistance: float
    redundancy: float
    resistance_norm: float
    redundancy_norm: float
    lm: list[LmEdgeScore]
    mean: float
    variance: float
    score: float


class NormRange(BaseModel):
    """The min and max of one component over a pool (``scorer`` for the per-LM components)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    component: Literal["resistance", "redundancy", "surprisal", "entropy"]
    scorer: str | None = None
    minimum: float
    maximum: float


@dataclass(frozen=True, slots=True)
class EdgeInputs:
    """What one candidate edge brings to its pool: NLI probabilities, one :class:`LmStats`
    per scorer LM (same scorers, same order for every candidate) and its redundancy."""

    nli: NliProbs
    lm: Sequence[LmStats]
    redundancy: float


def effect(nli: NliProbs) -> float:
    """``Effect = P(entail) · (1 − P(contradict))``."""
    return nli.entail * (1.0 - nli.contradict)


def resistance(nli: NliProbs) -> float:
    """``resistance = (1 − P(entail)) + P(contradict)`` ∈ [0, 2]."""
    return (1.0 - nli.entail) + nli.contradict


def minmax(values: Sequence[float]) -> list[float]:
    """Min–max normalise ``values`` to [0, 1]; all equal (or one value, or none) → all 0.

    >>> minmax([2.0, 4.0, 3.0])
    [0.0, 1.0, 0.5]
    >>> minmax([5.0, 5.0])
    [0.0, 0.0]
    """
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [0.0] * len(values)
    return [(v - low) / (high - low) for v in values]


def population_variance(values: Sequence[float]) -> float:
    """``(1/n) Σ (x − mean)²`` (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / len(values)


_SPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """NFKC, case-folded, runs of whitespace collapsed to one space, stripped."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def char_ngram_cosine(a: str, b: str, sizes: Sequence[int] = (2, 3)) -> float:
    """Cosine similarity of the character n-gram count vectors of two texts.

    Both texts go through :func:`normalise_text`; the n-grams of every size in ``sizes`` are
    counted together. Texts too short to have any n-gram compare as 1.0 when their normalised
    forms are equal and 0.0 otherwise.

    >>> char_ngram_cosine("abc", "abc")
    1.0
    >>> char_ngram_cosine("ab", "cd")
    0.0
    """
    left, right = normalise_text(a), normalise_text(b)
    grams_a = Counter(left[i : i + n] for n in sizes for i in range(len(left) - n + 1))
    grams_b = Counter(right[i : i + n] for n in sizes for i in range(len(right) - n + 1))
    if not grams_a or not grams_b:
        return 1.0 if left == right else 0.0
    dot = sum(count * grams_b[gram] for gram, count in grams_a.items())
    norm = math.sqrt(sum(c * c for c in grams_a.values())) * math.sqrt(sum(c * c for c in grams_b.values()))
    return min(1.0, dot / norm)


def _edge(effect_value: float, cost: float, epsilon: float) -> float:
    return math.log(max(effect_value, epsilon)) - math.log(cost + epsilon)


def score_pool(pool: Sequence[EdgeInputs], config: ScoringConfig) -> tuple[list[EdgeScore], list[NormRange]]:
    """Score every candidate edge of one pool (see the module docstring for the formulas).

    Returns the edge scores (in pool order) and the min/max of every normalised component.
    Raises ValueError when the candidates do not carry the same scorer LMs in the same order.
    """
    if not pool:
        return [], []
    scorers = [s.scorer for s in pool[0].lm]
    for item in pool:
        if [s.scorer for s in item.lm] != scorers:
            raise ValueError(f"every candidate needs the scorer LMs {scorers}, got {[s.scorer for s in item.lm]}")
    w = config.weights
    res = [resistance(item.nli) for item in pool]
    red = [item.redundancy for item in pool]
    res_n, red_n = minmax(res), minmax(red)
    ranges = [
        NormRange(component="resistance", minimum=min(res), maximum=max(res)),
        NormRange(component="redundancy", minimum=min(red), maximum=max(red)),
    ]
    per_lm: list[list[LmEdgeScore]] = [[] for _ in pool]
    for m, name in enumerate(scorers):
        sur = [item.lm[m].mean_nll for item in pool]
        ent = [item.lm[m].mean_entropy for item in pool]
        sur_n, ent_n = minmax(sur), minmax(ent)
        ranges.append(NormRange(component="surprisal", scorer=name, minimum=min(sur), maximum=max(sur)))
        ranges.append(NormRange(component="entropy", scorer=name, minimum=min(ent), maximum=max(ent)))
        for c, item in enumerate(pool):
            cost = w.resistance * res_n[c] + w.surprisal * sur_n[c] + w.entropy * ent_n[c] + w.redundancy * red_n[c]
            per_lm[c].append(
                LmEdgeScore(
                    scorer=name,
                    surprisal=sur[c],
                    entropy=ent[c],
                    surprisal_norm=sur_n[c],
                    entropy_norm=ent_n[c],
                    cost=cost,
                    edge=_edge(effect(item.nli), cost, config.epsilon),
                )
            )
    scores: list[EdgeScore] = []
    for c, item in enumerate(pool):
        if per_lm[c]:
            edges = [s.edge for s in per_lm[c]]
        else:  # no scorer LM: the cost has only resistance and redundancy
            edges = [_edge(effect(item.nli), w.resistance * res_n[c] + w.redundancy * red_n[c], config.epsilon)]
        mean = sum(edges) / len(edges)
        var = population_variance(edges)
        scores.append(
            EdgeScore(
                nli=item.nli,
                effect=effect(item.nli),
                resistance=res[c],
                redundancy=red[c],
                resistance_norm=res_n[c],
                redundancy_norm=red_n[c],
                lm=per_lm[c],
                mean=mean,
                variance=var,
                score=mean - config.gamma_var * var,
            )
        )
    return scores, ranges


def default_chain_weights(t: int) -> tuple[float, ...]:
    """``λ_t = 1/T`` for each of the ``T`` edges."""
    return tuple(1.0 / t for _ in range(t))


def chain_score(edges: Sequence[float], weights: Sequence[float]) -> float:
    """``Ψ = Σ_t λ_t · edge_t`` over the edges given so far (a partial chain uses the first
    weights: its cumulative score)."""
    if len(edges) > len(weights):
        raise ValueError(f"{len(edges)} edges but only {len(weights)} chain weights")
    return sum(weight * edge for weight, edge in zip(weights, edges, strict=False))


def threshold_rejections(nli: NliProbs, config: ScoringConfig) -> list[Rejection]:
    """The NLI admissibility checks: ``P(entail) ≥ τ_ent`` and ``P(contradict) ≤ τ_contr``."""
    found: list[Rejection] = []
    if nli.entail < config.tau_ent:
        found.append(Rejection(code="low_entailment", detail=f"P(entail) {nli.entail:.4f} < τ_ent {config.tau_ent}"))
    if nli.contradict > config.tau_contr:
        found.append(
            Rejection(
                code="high_contradiction", detail=f"P(contradict) {nli.contradict:.4f} > τ_contr {config.tau_contr}"
            )
        )
    return found
