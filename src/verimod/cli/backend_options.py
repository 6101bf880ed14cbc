"""Options and helpers shared by the protocol commands that call a model through the engine
(``safeqa collect|judge|transform``, ``softhate generate|variants|evaluate``, ``toxirex predict``).

:func:`backend_from_options` turns ``--model``/``--base-url``/``--api-key-env`` into a backend
(an unknown spec or a missing extra is an input error naming ``--model``);
:func:`run_with_backend` runs one coroutine with the response cache open and closes the
backend and the cache whatever happens. The transport options (``--timeout``, ``--retries``,
``--threads``, ``--context-size``, ``--device``) gather in :class:`Transport`, which gives the
engine settings and the backend options; :func:`cpu_grammar_warning` says when a local model
will decode a JSON schema on the CPU; :func:`train_baseline_if_needed` trains the default
baseline model before a run, with a message and progress on stderr, when its first use would.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, TypeVar

import typer

from verimod.cli.common import err_console
from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig
from verimod.core.errors import InputError
from verimod.core.registry import UnknownNameError
from verimod.models.base import BackendError, BackendOptions, ModelBackend
from verimod.models.registry import create_backend

T = TypeVar("T")

BaseUrl = Annotated[list[str] | None, typer.Option("--base-url", help="OpenAI-compatible server URL (repeatable).")]
ApiKeyEnv = Annotated[str | None, typer.Option(help="Environment variable holding the API key.")]
Concurrency = Annotated[int, typer.Option(help="Requests in flight at most.")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the response cache.")]
Timeout = Annotated[float, typer.Option(help="Seconds per request attempt.")]
Retries = Annotated[int, typer.Option(help="Retries of a failed request.")]
Threads = Annotated[int | None, typer.Option(help="CPU threads (gguf, hf).")]
ContextSize = Annotated[int | None, typer.Option(help="Context size (gguf).")]
Device = Annotated[str | None, typer.Option(help="Device (gguf, hf): cpu, cuda, cuda:1 …")]


@dataclass(frozen=True)
class Transport:
    """How requests reach a model: the engine's concurrency, timeout and retries, and the local
    backends' threads, context size and device."""

    max_concurrency: int = 16
    timeout: float = 120.0
    retries: int = 6
    threads: int | None = None
    context_size: int | None = None
    device: str | None = None

    def engine(self) -> EngineConfig:
        """The engine settings (an invalid value is an input error naming its option)."""
        for option, value, least in (("--max-concurrency", self.max_concurrency, 1), ("--retries", self.retries, 0)):
            if value < least:
                raise InputError.at(option, None, None, f"must be at least {least}, got {value}")
        if not self.timeout > 0:
            raise InputError.at("--timeout", None, None, f"must be positive, got {self.timeout}")
        return EngineConfig(
            max_concurrency=self.max_concurrency, max_retries=self.retries, request_timeout_s=self.timeout
        )

    def options(self, base_url: list[str] | None, api_key_env: str | None) -> BackendOptions:
        """The backend options (an invalid value is an input error naming its option)."""
        for option, value, least in (("--threads", self.threads, 1), ("--context-size", self.context_size, 256)):
            if value is not None and value < least:
                raise InputError.at(option, None, None, f"must be at least {least}, got {value}")
        return BackendOptions(
            base_urls=tuple(base_url or ()), api_key_env=api_key_env, request_timeout_s=self.timeout,
            threads=self.threads, context_size=self.context_size, device=self.device,
        )  # fmt: skip


def backend_from_options(
    spec: str,
    base_url: list[str] | None,
    api_key_env: str | None,
    option: str = "--model",
    transport: Transport | None = None,
) -> ModelBackend:
    """The backend of ``spec`` (``openai:…``, ``gguf:…``, ``hf:…``, ``scripted:…``, …), with the
    transport's local options when given (a backend refuses those it cannot honour)."""
    if transport is not None:
        options = transport.options(base_url, api_key_env)
    else:
        options = BackendOptions(base_urls=tuple(base_url or ()), api_key_env=api_key_env)
    try:
        return create_backend(spec, options)
    except (UnknownNameError, BackendError, ImportError) as exc:
        raise InputError.at(option, None, None, str(exc)) from None


def cpu_grammar_warning(backend: ModelBackend, timeout: float) -> str | None:
    """A warning when ``backend`` is a GGUF model on the CPU asked for schema-constrained
    output: every token is checked against the grammar, so a long structured answer can take
    minutes and run into ``timeout``; None otherwise."""
    device = (backend.options.device or "cpu").lower()
    if backend.prefix != "gguf" or device.startswith(("cuda", "gpu")):
        return None
    return (
        f"warning: {backend.spec} runs on the CPU with grammar-constrained (JSON-schema) decoding, which is slow: "
        f"a long answer can take minutes and run past --timeout {timeout:g} s (then --retries repeats it). "
        "Raise --timeout, lower --max-tokens, use --device cuda (a GPU build of llama-cpp-python), "
        "or serve the model (openai: with --base-url)."
    )


def run_with_backend(
    coroutine_factory: Callable[[ResponseCache | None], Awaitable[T]],
    backends: ModelBackend | list[ModelBackend],
    use_cache: bool,
) -> T:
    """``asyncio.run`` the coroutine made with the cache (None with ``use_cache=False``); the
    backends and the cache are closed afterwards, also on error."""
    cache = ResponseCache() if use_cache else None
    closing = backends if isinstance(backends, list) else [backends]

    async def go() -> T:
        try:
            return await coroutine_factory(cache)
        finally:
            for backend in closing:
                await backend.aclose()

    try:
        return asyncio.run(go())
    finally:
        if cache is not None:
            cache.close()


def train_baseline_if_needed(backend: ModelBackend, quiet: bool) -> None:
    """Train the default ``baseline`` model now when its first use would (the shipped model files
    are missing and no starter-trained fallback is cached): a line on stderr says so and where
    it will be cached, a status line shows while it trains, and a last line the time it took.
    Other backends, the shipped model and a cached one are left alone."""
    from verimod.models.baseline.backend import BaselineBackend

    if not isinstance(backend, BaselineBackend) or not backend.needs_training:
        return
    if quiet:
        backend.model()
        return
    err_console.print(
        "training the baseline model on the starter train split (the shipped model is missing; "
        f"first use only; cached in {backend.model_cache_folder})",
        highlight=False,
        soft_wrap=True,
    )
    started = time.monotonic()
    with err_console.status("training the baseline model"):
        backend.model()
    err_console.print(f"baseline model trained in {time.monotonic() - started:.1f} s", highlight=False)
