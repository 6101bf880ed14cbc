"""A scorer LM over an OpenAI-compatible server: surprisal and next-token entropy from the
server's token log-probabilities (no local model file needed).

The continuation's tokens come from
:meth:`verimod.models.openai_compat.OpenAICompatibleBackend.continuation_logprobs` (vLLM
``prompt_logprobs``, completions ``echo``, or llama.cpp server ``n_probs``; detected once per
server) through the engine, so calls are retried, cached and bounded like any other request.
The request is ``(user: context, assistant: continuation)`` with the sample id ``key``; the
engine sees the backend under its own identity plus ``{"scoring": …, "top_k": k}``, so a
cached chat answer is never served for a scoring call.

**Statistics** (:func:`stats_from_logprobs`) over the continuation's tokens i = 1 … n, each with
its log-probability ``ℓ_i`` and the server's top alternatives ``T_i`` (distinct tokens, the
token itself possibly among them), ``p(v) = exp(ℓ(v))`` and the residual mass
``r_i = max(0, 1 − Σ_{v∈T_i} p(v))``:

- ``mean_nll = (1/n) Σ_i −ℓ_i``. A token outside the returned top k (llama.cpp only; vLLM and
  echo always return the token itself) gets the upper bound ``min(min_{v∈T_i} p(v), r_i)`` of its
  probability, so its NLL is a lower bound; such tokens are counted in ``outside_top_k``;
- ``mean_entropy = (1/n) Σ_i [−Σ_{v∈T_i} p(v) log p(v) − r_i log r_i]`` — a lower bound of the
  true next-token entropy (the unseen mass counted as one outcome), exact when ``T_i`` covers
  the vocabulary. A GGUF scorer (:class:`~verimod.tasks.softhate.scorers.LlamaCppScorer`)
  computes the exact entropy instead; the search normalises each scorer LM's values within its
  own pool, so only one scorer's values are ever compared with each other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, Outcome, run_requests
from verimod.models.base import (
    BackendError,
    ChatMessage,
    GenerationParams,
    ModelBackend,
    ModelRequest,
    ModelResponse,
    TokenLogprob,
)
from verimod.models.openai_compat import OpenAICompatibleBackend
from verimod.tasks.softhate.bounded import BoundedBackend
from verimod.tasks.softhate.scorers import ScoringError, hashed_key
from verimod.tasks.softhate.scoring import LmStats

SCORING_VERSION: Final = "softhate-continuation-logprobs/1"
DEFAULT_TOP_K: Final = 20


def stats_from_logprobs(tokens: Sequence[TokenLogprob], scorer: str, top_k: int | None = None) -> LmStats:
    """Mean NLL and mean (top-k lower-bound) entropy of the scored tokens (module docstring).

    Raises :class:`~verimod.tasks.softhate.scorers.ScoringError` for no tokens, or a position
    without alternatives (the entropy needs them) or without any log-probability.
    """
    if not tokens:
        raise ScoringError(f"{scorer}: no scored tokens")
    nll_sum = entropy_sum = 0.0
    outside = 0
    for i, token in enumerate(tokens):
        seen: dict[object, float] = {}
        for alt in token.top:
            seen.setdefault(alt.token_id if alt.token_id is not None else alt.token, alt.logprob)
        if not seen:
            raise ScoringError(f"{scorer}: token {i} ({token.token!r}) came without top alternatives (top_k ≥ 1)")
        probs = [math.exp(v) for v in seen.values() if v > -math.inf]
        residual = max(0.0, 1.0 - sum(probs))
        if token.logprob is None:
            bound = min(min(probs, default=residual), residual) if residual > 0 else min(probs, default=0.0)
            if bound <= 0:
                raise ScoringError(f"{scorer}: token {i} ({token.token!r}) has no log-probability")
            nll_sum += -math.log(bound)
            outside += 1
        else:
            nll_sum += -token.logprob
        entropy = -sum(p * math.log(p) for p in probs if p > 0)
        if residual > 0:
            entropy -= residual * math.log(residual)
        entropy_sum += entropy
    n = len(tokens)
    return LmStats(
        scorer=scorer,
        mean_nll=max(0.0, nll_sum / n),
        mean_entropy=max(0.0, entropy_sum / n),
        n_tokens=n,
        top_k=top_k,
        outside_top_k=outside,
    )


class ContinuationLogprobBackend(ModelBackend):
    """The engine's view of continuation scoring on an OpenAI-compatible backend: a request
    ``(user: context, assistant: continuation)`` is answered with the continuation's
    ``token_logprobs``."""

    prefix = "openai"

    def __init__(self, inner: OpenAICompatibleBackend, top_k: int) -> None:
        super().__init__(inner.name, inner.options)
        self.inner = inner
        self.top_k = top_k

    def identity(self) -> dict[str, Any]:
        """The server model's identity, marked as continuation scoring with its ``top_k``."""
        return {**self.inner.identity(), "scoring": SCORING_VERSION, "top_k": self.top_k}

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Score the request's final (assistant) message after its user message."""
        roles = [m.role for m in request.messages]
        if roles != ["user", "assistant"]:
            raise BackendError("client", f"a scoring request is (user, assistant) messages, got {roles}")
        context, continuation = (m.content for m in request.messages)
        return await self.inner.continuation_logprobs(context, continuation, self.top_k)


class HttpLanguageScorer:
    """A :class:`~verimod.tasks.softhate.scorers.LanguageScorer` over an OpenAI-compatible
    server (module docstring)."""

    def __init__(
        self,
        backend: ModelBackend,
        *,
        top_k: int = DEFAULT_TOP_K,
        engine: EngineConfig | None = None,
        cache: ResponseCache | None = None,
        limit: int | None = None,
    ) -> None:
        """``limit``: at most this many scoring requests in flight across all callers."""
        if not isinstance(backend, OpenAICompatibleBackend):
            raise TypeError(f"{backend.spec} is not an OpenAI-compatible (openai:) backend")
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1 (the entropy needs alternatives), got {top_k}")
        self.backend = backend
        self.top_k = top_k
        self.engine = engine or EngineConfig()
        self.cache = cache
        self.name = f"{backend.spec}/logprobs"
        adapter = ContinuationLogprobBackend(backend, top_k)
        self._adapter: ModelBackend = adapter if limit is None else BoundedBackend(adapter, limit)

    async def probe(self) -> str:
        """The server's log-probability protocol; :class:`ScoringError` (with the server's
        refusal) when it gives none, before any search starts."""
        try:
            return await self.backend.logprob_protocol()
        except BackendError as exc:
            raise ScoringError(f"{self.name}: {exc}") from None

    async def score(self, context: str, continuation: str, *, key: str | None = None) -> LmStats:
        """Mean NLL and mean entropy of ``continuation`` after ``context``; ``key`` (or a
        content hash) is the sample id."""
        request = ModelRequest(
            sample_id=key or hashed_key("lm", context, continuation),
            messages=(ChatMessage(role="user", content=context), ChatMessage(role="assistant", content=continuation)),
            params=GenerationParams(temperature=0.0, max_tokens=1),
        )
        outcomes: list[Outcome] = []
        await run_requests(self._adapter, [request], outcomes.append, self.engine, self.cache, SCORING_VERSION)
        outcome = outcomes[0]
        if outcome.response is None:
            error = outcome.error
            raise ScoringError(f"{self.name}: {error.kind if error else 'model'}: {error}")
        return stats_from_logprobs(outcome.response.token_logprobs or [], self.name, self.top_k)
