"""The asyncio evaluation engine: bounded, adaptive concurrency; retries; cache; no lost samples.

Contract of :func:`run_requests`:

- Every request ends in exactly one call of ``on_outcome`` — with a response, or with the
  error it finally failed with. A failed sample never stops the run.
- Cache hits are answered first, without a model call (when a cache is given).
- At most ``max_concurrency`` batches are in flight (``backend.max_concurrency`` caps it for
  in-process backends). The limit adapts: a rate-limit or overload answer (HTTP 429/503)
  halves it and pauses new requests for the server's Retry-After (or the backoff); each run of
  ``limit`` successes raises it by one, back up to the maximum (AIMD).
- Retryable errors (rate limits, server errors, timeouts, dropped connections, malformed
  bodies) are retried up to ``max_retries`` times with exponential backoff and full jitter
  (``uniform(0, min(backoff_max_s, backoff_base_s · 2^attempt))``), or after Retry-After when
  the server gives one. Other errors are final at once.
- ``request_timeout_s`` bounds each attempt of backends that call a server. In-process
  backends (``backend.in_process``: gguf, hf, hfcls, baseline, scripted) are never timed out:
  a computation in this process cannot be abandoned safely (it would keep running, and the
  model could be freed under it); they bound their own work (``max_tokens``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from verimod.core.cache import ResponseCache, cache_key
from verimod.models.base import BackendError, ModelBackend, ModelRequest, ModelResponse


class EngineConfig(BaseModel):
    """Engine settings (recorded in run manifests)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_concurrency: int = Field(32, ge=1)
    max_retries: int = Field(6, ge=0)
    backoff_base_s: float = Field(0.5, gt=0)
    backoff_max_s: float = Field(30.0, gt=0)
    request_timeout_s: float | None = Field(120.0, gt=0)
    seed: int = 0  # of the backoff jitter


@dataclass
class Outcome:
    """How one request ended."""

    request: ModelRequest
    response: ModelResponse | None
    error: BackendError | None
    latency_s: float
    attempts: int
    cache_hit: bool


@dataclass
class EngineStats:
    """Counters of one engine run."""

    done: int = 0
    errors: int = 0
    cache_hits: int = 0
    retries: int = 0
    lowest_limit: int = 0
    elapsed_s: float = 0.0
    error_kinds: dict[str, int] = field(default_factory=dict)


class AdaptiveLimiter:
    """Concurrency limit with multiplicative decrease and additive increase (see module)."""

    def __init__(self, maximum: int) -> None:
        self.maximum = maximum
        self.limit = maximum
        self.lowest = maximum
        self._active = 0
        self._successes = 0
        self._resume_at = 0.0
        self._changed = asyncio.Condition()

    async def acquire(self) -> None:
        """Wait for a free slot and for any rate-limit pause to end."""
        async with self._changed:
            while True:
                pause = self._resume_at - time.monotonic()
                if pause > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), timeout=pause)
                    continue
                if self._active < self.limit:
                    self._active += 1
                    return
                await self._changed.wait()

    async def release(self) -> None:
        """Free a slot (and wake one waiter for it)."""
        async with self._changed:
            self._active -= 1
            self._changed.notify()

    async def success(self) -> None:
        """Count a success; after ``limit`` of them in a row, allow one more request in flight."""
        async with self._changed:
            self._successes += 1
            if self._successes >= self.limit and self.limit < self.maximum:
                self.limit += 1
                self._successes = 0
                self._changed.notify()

    async def overload(self, pause_s: float) -> None:
        """Halve the limit and pause new requests for ``pause_s`` seconds."""
        async with self._changed:
            self.limit = max(1, self.limit // 2)
            self.lowest = min(self.lowest, self.limit)
            self._successes = 0
            self._resume_at = max(self._resume_at, time.monotonic() + pause_s)
            self._changed.notify_all()


def _backoff(config: EngineConfig, attempt: int, rng: random.Random, retry_after: float | None) -> float:
    if retry_after is not None:
        return min(max(retry_after, 0.0), config.backoff_max_s)
    return rng.uniform(0, min(config.backoff_max_s, config.backoff_base_s * 2**attempt))


async def run_requests(
    backend: ModelBackend,
    requests: Sequence[ModelRequest],
    on_outcome: Callable[[Outcome], None],
    config: EngineConfig | None = None,
    cache: ResponseCache | None = None,
    prompt_version: str = "",
) -> EngineStats:
    """Answer every request (see the module docstring); returns the run's counters."""
    config = config or EngineConfig()
    stats = EngineStats()
    started = time.monotonic()
    identity = backend.identity()
    keys = {id(r): cache_key(identity, r, prompt_version) for r in requests} if cache is not None else {}

    def finish(outcome: Outcome) -> None:
        stats.done += 1
        stats.cache_hits += outcome.cache_hit
        if outcome.error is not None:
            stats.errors += 1
            stats.error_kinds[outcome.error.kind] = stats.error_kinds.get(outcome.error.kind, 0) + 1
        on_outcome(outcome)

    pending: list[ModelRequest] = []
    for request in requests:
        hit = cache.get(keys[id(request)]) if cache is not None else None
        if hit is not None:
            finish(Outcome(request, hit, None, 0.0, 0, True))
        else:
            pending.append(request)

    size = max(1, backend.batch_size)
    queue: asyncio.Queue[list[ModelRequest]] = asyncio.Queue()
    for start in range(0, len(pending), size):
        queue.put_nowait(pending[start : start + size])
    maximum = min(config.max_concurrency, backend.max_concurrency or config.max_concurrency)
    limiter = AdaptiveLimiter(maximum)
    rng = random.Random(config.seed)
    timeout = None if backend.in_process else config.request_timeout_s

    async def attempt(batch: list[ModelRequest]) -> list[ModelResponse | BackendError]:
        await limiter.acquire()
        try:
            call = backend.generate_batch(batch)
            return await (asyncio.wait_for(call, timeout) if timeout else call)
        except TimeoutError:
            return [BackendError("timeout", f"no answer within {timeout} s")] * len(batch)
        except BackendError as exc:
            return [exc] * len(batch)
        except Exception as exc:  # a backend bug must not lose the samples
            return [BackendError("model", f"{type(exc).__name__}: {exc}")] * len(batch)
        finally:
            await limiter.release()

    async def worker() -> None:
        while not queue.empty():
            batch = queue.get_nowait()
            attempts = 0
            while batch:
                attempts += 1
                t0 = time.monotonic()
                results = await attempt(batch)
                latency = time.monotonic() - t0
                retry: list[ModelRequest] = []
                retry_after: float | None = None
                overloaded = False
                for request, result in zip(batch, results, strict=True):
                    if isinstance(result, ModelResponse):
                        if cache is not None:
                            cache.put(keys[id(request)], result, identity)
                        finish(Outcome(request, result, None, latency, attempts, False))
                        await limiter.success()
                    elif result.retryable and attempts <= config.max_retries:
                        retry.append(request)
                        overloaded |= result.kind == "rate_limited"
                        if result.retry_after is not None:
                            retry_after = max(retry_after or 0.0, result.retry_after)
                    else:
                        finish(Outcome(request, None, result, latency, attempts, False))
                if retry:
                    stats.retries += len(retry)
                    delay = _backoff(config, attempts - 1, rng, retry_after)
                    if overloaded:
                        await limiter.overload(delay)
                    await asyncio.sleep(delay)
                batch = retry

    workers = [asyncio.create_task(worker()) for _ in range(min(maximum, queue.qsize()))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        if cache is not None:
            cache.flush()
    stats.lowest_limit = limiter.lowest
    stats.elapsed_s = time.monotonic() - started
    return stats
