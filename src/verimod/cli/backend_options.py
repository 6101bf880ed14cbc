"""Options and helpers shared by the protocol commands that call a model through the engine
(``safeqa collect|judge|transform``, ``softhate generate|variants|evaluate``, ``toxirex predict``).

:func:`backend_from_options` turns ``--model``/``--base-url``/``--api-key-env`` into a backend
(an unknown spec or a missing extra is an input error naming ``--model``);
:func:`run_with_backend` runs one coroutine with the response cache open and closes the
backend and the cache whatever happens; :func:`train_baseline_if_needed` trains the default
baseline model before a run, with a message and progress on stderr, when its first use would.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import typer

from verimod.cli.common import err_console
from verimod.core.cache import ResponseCache
from verimod.core.errors import InputError
from verimod.core.registry import UnknownNameError
from verimod.models.base import BackendError, BackendOptions, ModelBackend
from verimod.models.registry import create_backend

T = TypeVar("T")

BaseUrl = Annotated[list[str] | None, typer.Option("--base-url", help="OpenAI-compatible server URL (repeatable).")]
ApiKeyEnv = Annotated[str | None, typer.Option(help="Environment variable holding the API key.")]
Concurrency = Annotated[int, typer.Option(help="Requests in flight at most.")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the response cache.")]


def backend_from_options(
    spec: str, base_url: list[str] | None, api_key_env: str | None, option: str = "--model"
) -> ModelBackend:
    """The backend of ``spec`` (``openai:…``, ``gguf:…``, ``hf:…``, ``scripted:…``, …)."""
    try:
        return create_backend(spec, BackendOptions(base_urls=tuple(base_url or ()), api_key_env=api_key_env))
    except (UnknownNameError, BackendError, ImportError) as exc:
        raise InputError.at(option, None, None, str(exc)) from None


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
    """Train the default ``baseline`` model now if it is not cached yet (first use): a line on
    stderr says so and where it will be cached, a status line shows the training stage, and a
    last line the time it took. Other backends, and a cached model, are left alone."""
    from verimod.models.baseline.backend import BaselineBackend

    if not isinstance(backend, BaselineBackend) or not backend.needs_training:
        return
    if quiet:
        backend.model()
        return
    err_console.print(
        "training the baseline model on the starter train split (first use only; "
        f"cached in {backend.model_cache_folder})",
        highlight=False,
        soft_wrap=True,
    )
    started = time.monotonic()
    with err_console.status("training the baseline model") as status:

        def on_stage(done: int, total: int, name: str) -> None:
            status.update(f"training the baseline model: {done}/{total} {name}")

        backend.model(on_stage)
    err_console.print(f"baseline model trained in {time.monotonic() - started:.1f} s", highlight=False)
