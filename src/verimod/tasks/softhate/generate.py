"""Reverse-AMT generation by relevance-guided beam search (SoftHateBench Section 3).

Given a verified hostile standpoint S about a target group [TG] and a locus L, the search
builds the AMT chain backwards. The chain has ``T = 2`` *edges* (defeasible inference
steps); a *step* of the search generates and scores the candidates of one edge:

1. **Step 1, edge ``(P, M) ⊢ S``.** The generator proposes ``K₁`` (default 5) candidates
   ``(P, M)`` from ``(S, [TG], L)``. The step text is ``P M``, its context (parent text) is S.
2. **Step 2, edge ``(E, D) ⊢ P``.** For each of the ``B`` (default 3) best admissible
   step-1 candidates, the generator decomposes P into ``K₂`` (default 5) candidates
   ``(E, D)``. The step text is ``E D`` (what the audience reads), its context is P.

Every candidate of a step that was generated, parsed, not a duplicate of a sibling and
scored by every scorer goes into one normalisation pool (all such ``B × K₂`` candidates at
step 2), whether or not it later fails a threshold or the safety filter — so the scores do
not depend on the filter. Each is scored by :func:`~verimod.tasks.softhate.scoring.score_pool`:
NLI(premise = step text, hypothesis = context) gives ``(e, n, k)``; ``Effect = e(1 − k)``;
``Cost_m = w·(r̃, s̃_m, h̃_m, d̃)`` from resistance ``r = (1 − e) + k``, the scorer LM ``m``'s
surprisal ``s_m`` (mean token NLL of the step text given the context) and mean next-token
entropy ``h_m``, and redundancy ``d`` (character n-gram cosine of step text and context),
each min–max normalised within the pool; ``edge = mean_m log(Effect / (Cost_m + ε)) −
γ_var · var_m(·)``. The chain score is ``Ψ = λ₁ edge₁ + λ₂ edge₂`` (``λ_t = 1/T``); a
partial chain ranks by its cumulative ``λ₁ edge₁``.

An edge is admissible when ``e ≥ τ_ent``, ``k ≤ τ_contr`` and the step text passes the
safety filter. A chain with an inadmissible edge can never be admissible, so inadmissible
step-1 candidates are not expanded: the beam keeps the ``B`` admissible ones with the best
cumulative score. The complete admissible chain with the highest Ψ wins (ties: the smaller
candidate id, as a string). Every candidate, its raw output, scores, normalisation ranges and rejection
reasons are kept in the :class:`~verimod.tasks.softhate.schema.SearchTrace`.

Sample ids are deterministic: ``<standpoint id>/<locus>/step1/cand<k>`` and
``<step-1 id>/step2/cand<k>``; scorer keys append ``/nli`` and ``/lm``. Each candidate is one
generator call (``≤ max_tokens``, temperature 0 by default, the same seed); the prompt names
its index ("candidate k of K") so a deterministic model can vary, and a candidate that repeats
a sibling's text is rejected as ``duplicate``.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, Outcome, run_requests
from verimod.models.base import GenerationParams, ModelBackend, ModelRequest, StructuredOutput
from verimod.tasks.softhate.prompts import (
    DECOMPOSITION_FIELDS,
    PREMISE_FIELDS,
    OutputParseError,
    decompose_messages,
    field_schema,
    parse_fields,
    premise_messages,
    softhate_prompts,
)
from verimod.tasks.softhate.schema import (
    AmtInstance,
    Candidate,
    ChainRecord,
    GeneratedItem,
    Locus,
    SearchConfig,
    SearchTrace,
    Standpoint,
    StepTrace,
    Tier,
    join_texts,
)
from verimod.tasks.softhate.scorers import LanguageScorer, NliScorer, SafetyCheck, passes_safety
from verimod.tasks.softhate.scoring import (
    EdgeInputs,
    EdgeScore,
    LmStats,
    NliProbs,
    NormRange,
    Rejection,
    char_ngram_cosine,
    normalise_text,
    score_pool,
    threshold_rejections,
)


@dataclass
class _Draft:
    """A candidate while its step is being worked on (frozen into :class:`Candidate` after)."""

    id: str
    step: int
    context: str
    parent: _Draft | None = None
    raw_output: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    text: str | None = None
    nli: NliProbs | None = None
    lm: list[LmStats] = field(default_factory=list)
    safe: bool | None = None
    score: EdgeScore | None = None
    cumulative: float | None = None
    rejections: list[Rejection] = field(default_factory=list)
    kept: bool = False

    @property
    def admissible(self) -> bool:
        return self.score is not None and not self.rejections

    def frozen(self) -> Candidate:
        return Candidate(
            id=self.id,
            step=1 if self.step == 1 else 2,
            parent_id=self.parent.id if self.parent else None,
            raw_output=self.raw_output,
            fields=self.fields,
            text=self.text,
            context=self.context,
            safe=self.safe,
            score=self.score,
            cumulative=self.cumulative,
            rejections=self.rejections,
            admissible=self.admissible,
            kept=self.kept,
        )


def choose_locus(standpoint_id: str, seed: int = 0) -> Locus:
    """A locus drawn deterministically from the standpoint id and a seed (uniform over the eight)."""
    digest = hashlib.sha256(f"{seed}\0{standpoint_id}".encode()).digest()
    loci = list(Locus)
    return loci[int.from_bytes(digest[:8], "big") % len(loci)]


async def _generate(
    generator: ModelBackend,
    requests: list[ModelRequest],
    engine: EngineConfig | None,
    cache: ResponseCache | None,
) -> dict[str, Outcome]:
    outcomes: dict[str, Outcome] = {}
    if requests:
        await run_requests(
            generator,
            requests,
            lambda o: outcomes.__setitem__(o.request.sample_id, o),
            engine,
            cache,
            prompt_version=softhate_prompts().version,
        )
    return outcomes


def _read_answer(draft: _Draft, outcome: Outcome, fields: tuple[str, ...], seen: dict[str, str]) -> None:
    """Fill ``raw_output``, ``fields`` and ``text`` or record why not (``seen``: normalised
    text → first candidate id, among siblings)."""
    if outcome.response is None:
        error = outcome.error
        detail = f"{error.kind}: {error}" if error else "no response"
        draft.rejections.append(Rejection(code="generation_error", detail=detail))
        return
    draft.raw_output = outcome.response.text
    try:
        draft.fields = parse_fields(draft.raw_output, fields)
    except OutputParseError as exc:
        draft.rejections.append(Rejection(code="unparseable", detail=str(exc)))
        return
    draft.text = join_texts(draft.fields[fields[0]], draft.fields[fields[1]])
    key = normalise_text(draft.text)
    if key in seen:
        draft.rejections.append(Rejection(code="duplicate", detail=f"same text as {seen[key]}"))
    else:
        seen[key] = draft.id


async def _measure(draft: _Draft, nli: NliScorer, lms: Sequence[LanguageScorer], safety: SafetyCheck) -> None:
    """NLI, scorer LMs and safety filter on one parsed candidate; failures become rejections."""
    text = draft.text
    assert text is not None

    async def run_nli() -> NliProbs | Rejection:
        try:
            return await nli.score(text, draft.context, key=f"{draft.id}/nli")
        except Exception as exc:
            return Rejection(code="scoring_error", detail=f"{nli.name}: {exc}")

    async def run_lm(lm: LanguageScorer) -> LmStats | Rejection:
        try:
            stats = await lm.score(draft.context, text, key=f"{draft.id}/lm")
            return stats.model_copy(update={"scorer": lm.name})
        except Exception as exc:
            return Rejection(code="scoring_error", detail=f"{lm.name}: {exc}")

    async def run_safety() -> bool | Rejection:
        try:
            return await passes_safety(safety, text)
        except Exception as exc:
            return Rejection(code="safety_error", detail=f"{type(exc).__name__}: {exc}")

    nli_result, safety_result, *lm_results = await asyncio.gather(run_nli(), run_safety(), *(run_lm(lm) for lm in lms))
    for result in (nli_result, *lm_results):
        if isinstance(result, Rejection):
            draft.rejections.append(result)
    if isinstance(nli_result, NliProbs):
        draft.nli = nli_result
    draft.lm = [r for r in lm_results if isinstance(r, LmStats)]
    if isinstance(safety_result, Rejection):
        draft.safe = False
        draft.rejections.append(safety_result)
    else:
        draft.safe = bool(safety_result)


async def _score_step(
    drafts: list[_Draft],
    nli: NliScorer,
    lms: Sequence[LanguageScorer],
    safety: SafetyCheck,
    config: SearchConfig,
) -> list[NormRange]:
    """Measure, pool-score and check every parsed candidate; returns the normalisation ranges."""
    parsed = [d for d in drafts if d.text is not None and not d.rejections]
    await asyncio.gather(*(_measure(d, nli, lms, safety) for d in parsed))
    pool: list[tuple[_Draft, EdgeInputs]] = []
    for d in parsed:
        if d.nli is not None and d.text is not None and len(d.lm) == len(lms):
            redundancy = char_ngram_cosine(d.text, d.context, config.scoring.redundancy_ngrams)
            pool.append((d, EdgeInputs(d.nli, d.lm, redundancy)))
    scores, ranges = score_pool([inputs for _, inputs in pool], config.scoring)
    weights = config.weights()
    for (draft, _), score in zip(pool, scores, strict=True):
        draft.score = score
        draft.rejections.extend(threshold_rejections(score.nli, config.scoring))
        if draft.safe is False and not any(r.code == "safety_error" for r in draft.rejections):
            draft.rejections.append(Rejection(code="unsafe", detail="the safety filter did not pass the step text"))
        parent = draft.parent.cumulative if draft.parent and draft.parent.cumulative is not None else 0.0
        draft.cumulative = parent + weights[draft.step - 1] * score.score
    return ranges


def _rank(drafts: list[_Draft]) -> list[_Draft]:
    """Admissible candidates, best cumulative score first (ties: smaller id)."""
    return sorted((d for d in drafts if d.admissible), key=lambda d: (-(d.cumulative or 0.0), d.id))


def _summary(drafts: list[_Draft]) -> str:
    counts = Counter(r.code for d in drafts for r in d.rejections)
    listed = ", ".join(f"{n} {code}" for code, n in sorted(counts.items())) or "none"
    return f"{len(drafts)} generated; rejection reasons: {listed}"


def _params(config: SearchConfig, fields: tuple[str, ...]) -> GenerationParams:
    structured = StructuredOutput(json_schema=field_schema(fields)) if config.structured_output else None
    return GenerationParams(
        temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed, structured=structured
    )


async def generate_amt(
    standpoint: Standpoint,
    locus: Locus,
    *,
    generator: ModelBackend,
    nli: NliScorer,
    lms: Sequence[LanguageScorer],
    safety: SafetyCheck,
    config: SearchConfig | None = None,
    engine: EngineConfig | None = None,
    cache: ResponseCache | None = None,
) -> SearchTrace:
    """Run the beam search for ``(S, [TG], L)`` (see the module docstring).

    Never raises for a failed model call or an unreadable answer: those become rejections in
    the trace, and a search whose beam runs dry ends with ``outcome = "no_admissible_chain"``.
    """
    config = config or SearchConfig()
    language = config.language
    prefix = f"{standpoint.id}/{locus.value}/step1"
    k1 = config.premise_candidates
    step1 = [_Draft(id=f"{prefix}/cand{k}", step=1, context=standpoint.text) for k in range(1, k1 + 1)]
    params1 = _params(config, PREMISE_FIELDS)
    requests = [
        ModelRequest(sample_id=d.id, messages=premise_messages(standpoint, locus, k, k1, language), params=params1)
        for k, d in enumerate(step1, start=1)
    ]
    outcomes = await _generate(generator, requests, engine, cache)
    seen: dict[str, str] = {}
    for draft in step1:
        _read_answer(draft, outcomes[draft.id], PREMISE_FIELDS, seen)
    ranges1 = await _score_step(step1, nli, lms, safety, config)
    beam = _rank(step1)[: config.beam_size]
    for draft in beam:
        draft.kept = True

    step2: list[_Draft] = []
    k2 = config.decomposition_candidates
    params2 = _params(config, DECOMPOSITION_FIELDS)
    requests = []
    for parent in beam:
        premise, maxim = parent.fields["premise"], parent.fields["maxim"]
        for k in range(1, k2 + 1):
            draft = _Draft(id=f"{parent.id}/step2/cand{k}", step=2, context=premise, parent=parent)
            step2.append(draft)
            messages = decompose_messages(standpoint, premise, maxim, k, k2, language)
            requests.append(ModelRequest(sample_id=draft.id, messages=messages, params=params2))
    outcomes = await _generate(generator, requests, engine, cache)
    for parent in beam:
        seen = {}
        for draft in step2:
            if draft.parent is parent:
                _read_answer(draft, outcomes[draft.id], DECOMPOSITION_FIELDS, seen)
    ranges2 = await _score_step(step2, nli, lms, safety, config) if step2 else []
    complete = _rank(step2)
    for draft in complete[: config.beam_size]:
        draft.kept = True

    weights = config.weights()
    chains: list[ChainRecord] = []
    for draft in complete:
        assert draft.parent is not None and draft.parent.score is not None and draft.score is not None
        chains.append(
            ChainRecord(
                candidate_ids=(draft.parent.id, draft.id),
                edge_scores=(draft.parent.score.score, draft.score.score),
                psi=weights[0] * draft.parent.score.score + weights[1] * draft.score.score,
            )
        )
    steps = [
        StepTrace(step=1, candidates=[d.frozen() for d in step1], ranges=ranges1, beam=[d.id for d in beam]),
        StepTrace(
            step=2,
            candidates=[d.frozen() for d in step2],
            ranges=ranges2,
            beam=[d.id for d in complete[: config.beam_size]],
        ),
    ]
    prompt_version = softhate_prompts().version

    def trace(reason: str | None = None, amt: AmtInstance | None = None) -> SearchTrace:
        return SearchTrace(
            standpoint=standpoint,
            locus=locus,
            config=config,
            prompt_version=prompt_version,
            generator=generator.spec,
            nli_scorer=nli.name,
            lm_scorers=[lm.name for lm in lms],
            steps=steps,
            chains=chains,
            outcome="winner" if amt is not None else "no_admissible_chain",
            reason=reason,
            winner=chains[0] if amt is not None else None,
            amt=amt,
        )

    if not beam:
        return trace(reason=f"step 1: no admissible (P, M) candidate ({_summary(step1)})")
    if not complete:
        return trace(reason=f"step 2: no admissible (E, D) candidate ({_summary(step2)})")
    best = complete[0]
    assert best.parent is not None
    return trace(
        amt=AmtInstance(
            endoxon=best.fields["endoxon"],
            datum=best.fields["datum"],
            premise=best.parent.fields["premise"],
            locus=locus,
            maxim=best.parent.fields["maxim"],
            standpoint=standpoint.text,
            target=standpoint.target,
        )
    )


def base_item(trace: SearchTrace) -> GeneratedItem | None:
    """The softbase item of a search with a winner (id ``<standpoint id>/<locus>``; text E D;
    paired with its standpoint, gold from it); None for a search without one."""
    if trace.amt is None:
        return None
    return GeneratedItem(
        id=f"{trace.standpoint.id}/{trace.locus.value}",
        tier=Tier.SOFTBASE,
        text=trace.amt.visible_text,
        amt=trace.amt,
        search=trace,
        standpoint_id=trace.standpoint.id,
        gold=trace.standpoint.gold,
    )
