"""The one interface every model backend implements.

A backend turns :class:`ModelRequest` objects (chat messages + generation parameters) into
:class:`ModelResponse` objects. Generative backends return ``text``; classifier-style backends
(guard models, encoder classifiers) return ``label_probs`` over the request's candidate
``labels`` (and may also return text). The engine calls :meth:`ModelBackend.generate_batch`
with at most :attr:`ModelBackend.batch_size` requests at a time and at most
``max_concurrency`` batches in flight; HTTP backends keep ``batch_size = 1`` and let the engine
run many requests concurrently, in-process backends (gguf, hf, baseline) set a larger batch
and ``max_concurrency = 1``.

Errors: a backend raises :class:`BackendError` with a ``kind``; ``retryable`` kinds (rate
limits, server errors, timeouts, dropped connections, malformed bodies) are retried by the engine
with backoff, the others are recorded on the sample at once. A backend never logs or returns secrets:
:meth:`ModelBackend.identity` (which enters cache keys and run manifests) must not contain
API keys.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from verimod.models.grammar import TextGrammar

Role = Literal["system", "user", "assistant"]
ErrorKind = Literal["rate_limited", "server", "timeout", "connection", "bad_response", "client", "model"]
RETRYABLE: frozenset[str] = frozenset({"rate_limited", "server", "timeout", "connection", "bad_response"})


class ChatMessage(BaseModel):
    """One chat message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    content: str


class StructuredOutput(BaseModel):
    """Constrained decoding, where the backend supports it: a JSON schema, a regular expression,
    or a :class:`~verimod.models.grammar.TextGrammar` (which each backend renders its own way;
    it excludes the other two)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    json_schema: dict[str, Any] | None = None
    regex: str | None = None
    grammar: TextGrammar | None = None

    @model_validator(mode="after")
    def _grammar_alone(self) -> StructuredOutput:
        if self.grammar is not None and (self.json_schema is not None or self.regex is not None):
            raise ValueError("a grammar constraint cannot be combined with a JSON schema or a regex")
        return self


class GenerationParams(BaseModel):
    """Every parameter that can change a model's output (all of them enter the cache key).

    Defaults give deterministic decoding: temperature 0 and a fixed seed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(0.0, ge=0.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    max_tokens: int = Field(512, ge=1)
    seed: int | None = 0
    stop: tuple[str, ...] = ()
    structured: StructuredOutput | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)


class ModelRequest(BaseModel):
    """One request: a sample (and repeat index) with its messages and parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sample_id: str
    messages: tuple[ChatMessage, ...]
    params: GenerationParams = GenerationParams()
    repeat: int = 0
    labels: tuple[str, ...] | None = None  # candidate labels, for classifier-style backends
    input_text: str | None = None  # the raw text under moderation, for backends that read it directly
    input_pair: tuple[str, str] | None = None  # two segments (NLI premise, hypothesis) for pair classifiers


class TopLogprob(BaseModel):
    """One alternative at a token position: the token, its id when the server gives it, and
    its log-probability (nats)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str
    token_id: int | None = None
    logprob: float


class TokenLogprob(BaseModel):
    """One scored token: the token, its id when known, its log-probability (nats; None where
    the server gives none, e.g. the first prompt token) and the server's top alternatives at
    that position (as many as it returned, the token itself possibly among them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str
    token_id: int | None = None
    logprob: float | None = None
    top: tuple[TopLogprob, ...] = ()


class ModelResponse(BaseModel):
    """What a backend returned for one request.

    ``token_logprobs`` (optional): per-token log-probabilities, when the request asked for them
    and the backend can give them — of the generated tokens, or of the scored continuation of a
    log-probability request (see :mod:`verimod.models.openai_compat`).
    """

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    label_probs: dict[str, float] | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model: str | None = None  # the model name the server reports
    token_logprobs: list[TokenLogprob] | None = None


class BackendError(Exception):
    """A failed request. ``retryable`` kinds are retried by the engine; ``retry_after`` (seconds)
    is the server's own hint (HTTP Retry-After)."""

    def __init__(self, kind: ErrorKind, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """True for rate limits, server errors, timeouts, dropped connections and malformed bodies."""
        return self.kind in RETRYABLE


class BackendOptions(BaseModel):
    """Options for creating a backend; each backend reads the ones that apply to it and
    rejects the ones it cannot honour (see its docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_urls: tuple[str, ...] = ()
    api_key_env: str | None = None
    request_timeout_s: float = Field(120.0, gt=0)
    adapter: str | None = None
    threads: int | None = Field(None, ge=1)
    context_size: int | None = Field(None, ge=256)
    batch_size: int | None = Field(None, ge=1)
    device: str | None = None


class ModelBackend(ABC):
    """Base class of model backends (see the module docstring for the contract)."""

    #: registry prefix, e.g. "openai"
    prefix: ClassVar[str] = ""
    #: "generative" returns text; "classifier" returns label probabilities
    kind: ClassVar[Literal["generative", "classifier"]] = "generative"
    #: computes in this process (a model in memory, a file): the engine never times it out,
    #: since abandoning a running computation would not stop it (see ``core.engine``)
    in_process: ClassVar[bool] = False
    #: requests per generate_batch call
    batch_size: int = 1
    #: batches in flight at once (None: the engine's --max-concurrency)
    max_concurrency: int | None = None

    def __init__(self, name: str, options: BackendOptions) -> None:
        self.name = name
        self.options = options

    @property
    def spec(self) -> str:
        """The model spec as the user writes it: ``prefix:name`` (or the bare prefix)."""
        return f"{self.prefix}:{self.name}" if self.name else self.prefix

    def identity(self) -> dict[str, Any]:
        """What identifies this model's outputs, for cache keys and manifests. Never secrets."""
        return {"backend": self.prefix, "model": self.name}

    def replicas(self) -> Sequence[tuple[str, ModelBackend]]:
        """The servers this backend can send a request to, each as (label, a backend that
        answers on that server alone): the engine keeps limits and health per replica
        (``verimod.core.fleet``). Labels name a server in run manifests: never secrets.
        Default: this backend alone."""
        return ((self.spec, self),)

    @abstractmethod
    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Answer one request or raise :class:`BackendError`."""

    async def generate_batch(self, requests: Sequence[ModelRequest]) -> list[ModelResponse | BackendError]:
        """Answer several requests; one failure does not fail the others."""
        results = await asyncio.gather(*(self.generate(r) for r in requests), return_exceptions=True)
        out: list[ModelResponse | BackendError] = []
        for result in results:
            if isinstance(result, BackendError | ModelResponse):
                out.append(result)
            elif isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result
            else:
                out.append(BackendError("model", f"{type(result).__name__}: {result}"))
        return out

    async def generate_via_batch(self, request: ModelRequest) -> ModelResponse:
        """:meth:`generate` for backends that implement :meth:`generate_batch` (in-process
        models): one request as a batch of one, its error raised."""
        (result,) = await self.generate_batch([request])
        if isinstance(result, BackendError):
            raise result
        return result

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release connections, threads or model memory."""
