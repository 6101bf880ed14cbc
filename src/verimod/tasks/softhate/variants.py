"""GroupVague and HostilityVague variants of a Softbase item, chosen Best-of-N.

- **GroupVague** (``softgv``): the base text with the explicit target-group name replaced by
  a coded reference.
- **HostilityVague** (``softhv``): the argument as a social-media post that does not name the
  group, with self-justifying disclaimers and coded hints.

The generator backend proposes ``N`` candidates (default 5; the paper does not give N), ids
``<base id>/<kind>/cand<k>``. A candidate is rejected when the call fails
(``generation_error``), the answer is empty (``unparseable``), it repeats an earlier candidate
(``duplicate``), it still names the target group (``explicit_target``, see
:func:`explicit_mention`; on by default for both kinds, since a GroupVague text that keeps the
name has not replaced it), its NLI or similarity scoring fails (``scoring_error``), or — when a
safety filter is given — the filter does not pass it (``unsafe`` / ``safety_error``). Every
parsed, non-duplicate candidate is scored (rejected ones too, for audit):

    score = w_sim · sim(candidate, base) + w_ent · P(entail | premise = candidate, hypothesis = base)

with ``sim`` a pluggable :class:`~verimod.tasks.softhate.scorers.TextSimilarity` (default
:class:`~verimod.tasks.softhate.scorers.CharNgramTfidfSimilarity`, IDF fitted on the base and
the scored candidates) and ``w_sim = w_ent = 0.5``. The admissible candidate with the highest
score wins (ties: smaller id); NLI gives no hard threshold here (the paper ranks by it).
"""

from __future__ import annotations

import asyncio
import re

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, Outcome, run_requests
from verimod.models.base import GenerationParams, ModelBackend, ModelRequest
from verimod.tasks.softhate.prompts import OutputParseError, parse_variant, softhate_prompts, variant_messages
from verimod.tasks.softhate.schema import (
    GeneratedItem,
    TargetGroup,
    Tier,
    VariantCandidate,
    VariantConfig,
    VariantKind,
    VariantTrace,
)
from verimod.tasks.softhate.scorers import (
    CharNgramTfidfSimilarity,
    NliScorer,
    SafetyCheck,
    TextSimilarity,
    passes_safety,
)
from verimod.tasks.softhate.scoring import NliProbs, Rejection, normalise_text


def explicit_mention(text: str, target: TargetGroup) -> str | None:
    """The first surface form of ``target`` (name, then aliases) that ``text`` names, or None.

    Matching is on :func:`~verimod.tasks.softhate.scoring.normalise_text` forms (NFKC, so
    full-width letters match half-width ones, and case-folded). A form that starts (ends) with
    an ASCII letter or digit must not be preceded (followed) by one, so ``men`` does not match
    inside ``women``; an English plural ``s``/``es`` after the form still matches. Forms in
    other scripts (Chinese) match as plain substrings.

    >>> group = TargetGroup(name="Velorian", level1="nationality_region", level2="Velorian")
    >>> explicit_mention("ＶＥＬＯＲＩＡＮＳ again", group)
    'Velorian'
    """
    norm = normalise_text(text)
    for form in target.surface_forms():
        needle = normalise_text(form)
        if not needle:
            continue
        pattern = re.escape(needle)
        if needle[0].isascii() and needle[0].isalnum():
            pattern = r"(?<![0-9a-z])" + pattern
        if needle[-1].isascii() and needle[-1].isalnum():
            pattern += r"(?:e?s)?(?![0-9a-z])"
        if re.search(pattern, norm):
            return form
    return None


class _Work:
    """A candidate while it is being scored."""

    def __init__(self, candidate_id: str) -> None:
        self.id = candidate_id
        self.raw_output: str | None = None
        self.text: str | None = None
        self.similarity: float | None = None
        self.nli: NliProbs | None = None
        self.safe: bool | None = None
        self.rejections: list[Rejection] = []
        self.score: float | None = None

    def frozen(self) -> VariantCandidate:
        return VariantCandidate(
            id=self.id,
            raw_output=self.raw_output,
            text=self.text,
            similarity=self.similarity,
            nli=self.nli,
            selection_score=self.score,
            safe=self.safe,
            rejections=self.rejections,
            admissible=self.score is not None and not self.rejections,
        )


async def _measure(work: _Work, base_text: str, nli: NliScorer, safety: SafetyCheck | None) -> None:
    assert work.text is not None
    try:
        work.nli = await nli.score(work.text, base_text, key=f"{work.id}/nli")
    except Exception as exc:
        work.rejections.append(Rejection(code="scoring_error", detail=f"{nli.name}: {exc}"))
    if safety is None:
        return
    try:
        work.safe = await passes_safety(safety, work.text)
    except Exception as exc:
        work.safe = False
        work.rejections.append(Rejection(code="safety_error", detail=f"{type(exc).__name__}: {exc}"))
        return
    if not work.safe:
        work.rejections.append(Rejection(code="unsafe", detail="the safety filter did not pass the text"))


async def generate_variant(
    base: GeneratedItem,
    kind: VariantKind,
    *,
    generator: ModelBackend,
    nli: NliScorer,
    similarity: TextSimilarity | None = None,
    safety: SafetyCheck | None = None,
    config: VariantConfig | None = None,
    engine: EngineConfig | None = None,
    cache: ResponseCache | None = None,
) -> VariantTrace:
    """Generate ``N`` candidates of one variant of a Softbase ``base`` and pick the best
    (see the module docstring). Failures become rejections; never raises for them."""
    if base.amt is None:
        raise ValueError(f"item {base.id} has no AMT: variants are made from softbase items")
    config = config or VariantConfig()
    similarity = similarity or CharNgramTfidfSimilarity()
    target = base.amt.target
    n = config.n_candidates
    works = [_Work(f"{base.id}/{kind}/cand{k}") for k in range(1, n + 1)]
    params = GenerationParams(temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed)
    requests = [
        ModelRequest(
            sample_id=w.id,
            messages=variant_messages(kind, base.text, target, k, n, config.language, base.gold),
            params=params,
        )
        for k, w in enumerate(works, start=1)
    ]
    outcomes: dict[str, Outcome] = {}
    version = softhate_prompts().version
    await run_requests(
        generator, requests, lambda o: outcomes.__setitem__(o.request.sample_id, o), engine, cache, version
    )
    seen: dict[str, str] = {}
    for work in works:
        outcome = outcomes[work.id]
        if outcome.response is None:
            error = outcome.error
            detail = f"{error.kind}: {error}" if error else "no response"
            work.rejections.append(Rejection(code="generation_error", detail=detail))
            continue
        work.raw_output = outcome.response.text
        try:
            work.text = parse_variant(work.raw_output)
        except OutputParseError as exc:
            work.rejections.append(Rejection(code="unparseable", detail=str(exc)))
            continue
        key = normalise_text(work.text)
        if key in seen:
            work.rejections.append(Rejection(code="duplicate", detail=f"same text as {seen[key]}"))
            continue
        seen[key] = work.id
        named = explicit_mention(work.text, target) if config.reject_explicit_target else None
        if named is not None:
            work.rejections.append(Rejection(code="explicit_target", detail=f"names the target group as {named!r}"))

    scored = [w for w in works if w.text is not None and w.id in seen.values()]
    await asyncio.gather(*(_measure(w, base.text, nli, safety) for w in scored))
    sims: list[float | None]
    try:
        sims = list(similarity.similarity(base.text, [w.text or "" for w in scored]))
    except Exception as exc:
        sims = [None] * len(scored)
        for work in scored:
            work.rejections.append(Rejection(code="scoring_error", detail=f"{similarity.name}: {exc}"))
    for work, sim in zip(scored, sims, strict=True):
        work.similarity = sim
        if sim is not None and work.nli is not None:
            work.score = config.similarity_weight * sim + config.entailment_weight * work.nli.entail

    candidates = [w.frozen() for w in works]
    ranked = sorted((c for c in candidates if c.admissible), key=lambda c: (-(c.selection_score or 0.0), c.id))
    winner = ranked[0] if ranked else None
    return VariantTrace(
        base_id=base.id,
        base_text=base.text,
        kind=kind,
        config=config,
        prompt_version=version,
        generator=generator.spec,
        nli_scorer=nli.name,
        similarity=similarity.name,
        candidates=candidates,
        ranking=[c.id for c in ranked],
        outcome="winner" if winner else "no_admissible_candidate",
        reason=None if winner else _reason(candidates),
        winner_id=winner.id if winner else None,
        text=winner.text if winner else None,
    )


def _reason(candidates: list[VariantCandidate]) -> str:
    counts: dict[str, int] = {}
    for candidate in candidates:
        for rejection in candidate.rejections:
            counts[rejection.code] = counts.get(rejection.code, 0) + 1
    listed = ", ".join(f"{n} {code}" for code, n in sorted(counts.items())) or "none"
    return f"no admissible candidate among {len(candidates)}; rejection reasons: {listed}"


def variant_item(base: GeneratedItem, trace: VariantTrace) -> GeneratedItem | None:
    """The ``softgv``/``softhv`` item of a variant search with a winner (id ``<base id>/<kind>``;
    the base's standpoint id and gold: the pairing and the label go through the variants)."""
    if trace.text is None:
        return None
    return GeneratedItem(
        id=f"{base.id}/{trace.kind}",
        tier=Tier(trace.kind),
        text=trace.text,
        amt=base.amt,
        variant=trace,
        standpoint_id=base.standpoint_id or (base.search.standpoint.id if base.search else None),
        gold=base.gold,
    )
