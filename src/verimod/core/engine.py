"""The asyncio evaluation engine: bounded, adaptive concurrency over a fleet of replicas;
retries; cache; no lost samples; memory that does not grow with the number of requests.

Contract of :func:`run_requests`:

- ``requests`` is any iterable, read lazily: besides the batches in flight (at most
  ``max_concurrency``) only retries waiting for their turn are held (at most
  :data:`RETRY_BUFFER` × ``max_concurrency`` batches; beyond that no new request is read until
  they are sent). A million requests need no more memory than a hundred.
- Every request ends in exactly one call of ``on_outcome`` — with a response, or with the
  error it finally failed with. A failed sample never stops the run.
- Cache hits (when a cache is given) are answered as they are read, without a model call.
- At most ``max_concurrency`` batches are in flight (``backend.max_concurrency`` caps it for
  in-process backends), spread over the backend's replicas (:meth:`ModelBackend.replicas`:
  the servers of a fleet), each with its own adaptive limit and Retry-After pause
  (:mod:`verimod.core.rate_limit`) and passive health checks (:mod:`verimod.core.fleet`): a
  rate limit or a dead server slows or removes that replica only.
- Retryable errors (rate limits, server errors, timeouts, dropped connections, malformed
  bodies) are retried up to ``max_retries`` times. A request's first retry goes at once to
  another replica when one is in rotation. Otherwise it waits for the server's Retry-After as
  sent (capped at ``retry_after_max_s``) times a jitter factor ``uniform(1, 1 + RETRY_AFTER_JITTER)``,
  or, without Retry-After, an exponential backoff with full jitter
  ``uniform(0, min(backoff_max_s, backoff_base_s · 2^(attempt − 1)))``. A waiting retry holds
  no slot. Other errors are final at once.
- ``Outcome.latency_s`` runs from the start of a request's first attempt to the end of its last
  (the waits between attempts included).
- ``request_timeout_s`` bounds each attempt of backends that call a server. In-process
  backends (``backend.in_process``: gguf, hf, hfcls, baseline, scripted) are never timed out:
  a computation in this process cannot be abandoned safely (it would keep running, and the
  model could be freed under it); they bound their own work (``max_tokens``).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verimod.core.cache import ResponseCache, cache_key
from verimod.core.fleet import Fleet, HealthPolicy, Replica
from verimod.models.base import BackendError, ModelBackend, ModelRequest, ModelResponse

#: retries waiting for their turn, at most, in batches per slot of ``max_concurrency``
RETRY_BUFFER = 4
#: a Retry-After wait is stretched by up to this fraction, so retries do not all arrive at once
RETRY_AFTER_JITTER = 0.1


class EngineConfig(BaseModel):
    """Engine settings (recorded in run manifests)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_concurrency: int = Field(32, ge=1)
    max_retries: int = Field(6, ge=0)
    backoff_base_s: float = Field(0.5, gt=0)
    backoff_max_s: float = Field(30.0, gt=0)
    retry_after_max_s: float = Field(120.0, gt=0)  # a longer Retry-After is cut to this
    request_timeout_s: float | None = Field(120.0, gt=0)
    eject_after: int = Field(5, ge=1)  # consecutive failed attempts that take a replica out of rotation
    eject_s: float = Field(1.0, gt=0)  # first ejection; doubled at each ejection in a row
    eject_max_s: float = Field(30.0, gt=0)
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
    attempts: int = 0
    retries: int = 0
    retries_by_kind: dict[str, int] = field(default_factory=dict)
    lowest_limit: int = 0
    elapsed_s: float = 0.0
    error_kinds: dict[str, int] = field(default_factory=dict)
    replicas: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The counters as a run manifest records them."""
        return {
            "elapsed_s": round(self.elapsed_s, 3),
            "requests": self.done,
            "cache_hits": self.cache_hits,
            "attempts": self.attempts,
            "retries": dict(sorted(self.retries_by_kind.items())),
            "errors": dict(sorted(self.error_kinds.items())),
            "lowest_limit": self.lowest_limit,
            "replicas": self.replicas,
        }


@dataclass
class _Job:
    """A batch on its way: its cache keys, attempts so far, when it was first sent, when it
    may be sent again and the replica to avoid."""

    batch: list[ModelRequest]
    keys: list[str]
    attempts: int = 0
    started: float | None = None
    ready_at: float = 0.0
    avoid: Replica | None = None


class _Run:
    """The state of one :func:`run_requests` call (see the module docstring)."""

    def __init__(
        self,
        backend: ModelBackend,
        requests: Iterable[ModelRequest],
        on_outcome: Callable[[Outcome], None],
        config: EngineConfig,
        cache: ResponseCache | None,
        prompt_version: str,
    ) -> None:
        self.backend = backend
        self.config = config
        self.cache = cache
        self.prompt_version = prompt_version
        self.identity = backend.identity()
        self.on_outcome = on_outcome
        self.stats = EngineStats()
        self.source: Iterator[ModelRequest] = iter(requests)
        self.exhausted = False
        self.size = max(1, backend.batch_size)
        self.maximum = min(config.max_concurrency, backend.max_concurrency or config.max_concurrency)
        health = HealthPolicy(config.eject_after, config.eject_s, config.eject_max_s)
        self.fleet = Fleet(backend.replicas(), self.maximum, health)
        self.timeout = None if backend.in_process else config.request_timeout_s
        self.rng = random.Random(config.seed)
        self.waiting: list[tuple[float, int, _Job]] = []  # retries, by the time they may go
        self.order = 0
        self.active = 0  # jobs handed to a worker and not settled yet
        self.changed = asyncio.Condition()
        self.retry_kinds: Counter[str] = Counter()
        self.error_kinds: Counter[str] = Counter()

    def finish(self, outcome: Outcome) -> None:
        self.stats.done += 1
        self.stats.cache_hits += outcome.cache_hit
        if outcome.error is not None:
            self.stats.errors += 1
            self.error_kinds[outcome.error.kind] += 1
        self.on_outcome(outcome)

    def _fresh(self) -> _Job | None:
        """The next batch read from ``requests`` (cache hits answered on the way); None at the end."""
        batch: list[ModelRequest] = []
        keys: list[str] = []
        while len(batch) < self.size:
            request = next(self.source, None)
            if request is None:
                self.exhausted = True
                break
            key = cache_key(self.identity, request, self.prompt_version) if self.cache is not None else ""
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is not None:
                self.finish(Outcome(request, hit, None, 0.0, 0, True))
                continue
            batch.append(request)
            keys.append(key)
        return _Job(batch, keys) if batch else None

    async def next_job(self) -> _Job | None:
        """A retry whose time has come, else a new batch (unless too many retries wait), else
        wait; None when everything has ended."""
        async with self.changed:
            while True:
                now = time.monotonic()
                job: _Job | None = None
                if self.waiting and self.waiting[0][0] <= now:
                    job = heapq.heappop(self.waiting)[2]
                elif not self.exhausted and len(self.waiting) < RETRY_BUFFER * self.maximum:
                    job = self._fresh()
                    if job is None:
                        continue
                if job is not None:
                    self.active += 1
                    return job
                if self.exhausted and not self.waiting and self.active == 0:
                    self.changed.notify_all()
                    return None
                timeout = max(0.0, self.waiting[0][0] - now) if self.waiting else None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), timeout)

    async def call(self, replica: Replica, batch: list[ModelRequest]) -> list[ModelResponse | BackendError]:
        """One attempt of ``batch`` on ``replica``; every failure becomes a :class:`BackendError`."""
        try:
            call = replica.backend.generate_batch(batch)
            return await (asyncio.wait_for(call, self.timeout) if self.timeout else call)
        except TimeoutError:
            return [BackendError("timeout", f"no answer within {self.timeout} s")] * len(batch)
        except BackendError as exc:
            return [exc] * len(batch)
        except Exception as exc:  # a backend bug must not lose the samples
            return [BackendError("model", f"{type(exc).__name__}: {exc}")] * len(batch)

    async def attempt(self, job: _Job) -> _Job | None:
        """Send ``job`` once; finish what ended; return the retry of the rest (or None)."""
        replica = await self.fleet.acquire(job.avoid)
        began = time.monotonic()
        started = job.started = began if job.started is None else job.started
        job.attempts += 1
        self.stats.attempts += 1
        results = await self.call(replica, job.batch)
        now = time.monotonic()
        kinds = [None if isinstance(r, ModelResponse) else r.kind for r in results]
        hints = [r.retry_after for r in results if isinstance(r, BackendError) and r.retry_after is not None]
        pause = min(max(hints), self.config.retry_after_max_s) if hints else None
        await self.fleet.release(replica, now - began, kinds, pause)
        retry = _Job([], [], job.attempts, started, avoid=replica)
        for request, key, result in zip(job.batch, job.keys, results, strict=True):
            if isinstance(result, ModelResponse):
                if self.cache is not None:
                    self.cache.put(key, result, self.identity)
                self.finish(Outcome(request, result, None, now - started, job.attempts, False))
            elif result.retryable and job.attempts <= self.config.max_retries:
                retry.batch.append(request)
                retry.keys.append(key)
                self.retry_kinds[result.kind] += 1
            else:
                self.finish(Outcome(request, None, result, now - started, job.attempts, False))
        if not retry.batch:
            return None
        self.stats.retries += len(retry.batch)
        retry.ready_at = now + self._delay(job.attempts, replica, pause)
        return retry

    def _delay(self, attempts: int, replica: Replica, retry_after: float | None) -> float:
        """How long a retry waits (module docstring)."""
        if attempts == 1 and self.fleet.other_in_rotation(replica):
            return 0.0
        if retry_after is not None:
            return retry_after * self.rng.uniform(1.0, 1.0 + RETRY_AFTER_JITTER)
        return self.rng.uniform(0, min(self.config.backoff_max_s, self.config.backoff_base_s * 2 ** (attempts - 1)))

    async def worker(self) -> None:
        while (job := await self.next_job()) is not None:
            retry = await self.attempt(job)
            async with self.changed:
                if retry is not None:
                    self.order += 1
                    heapq.heappush(self.waiting, (retry.ready_at, self.order, retry))
                self.active -= 1
                self.changed.notify_all()


async def run_requests(
    backend: ModelBackend,
    requests: Iterable[ModelRequest],
    on_outcome: Callable[[Outcome], None],
    config: EngineConfig | None = None,
    cache: ResponseCache | None = None,
    prompt_version: str = "",
) -> EngineStats:
    """Answer every request (see the module docstring); returns the run's counters."""
    run = _Run(backend, requests, on_outcome, config or EngineConfig(), cache, prompt_version)
    started = time.monotonic()
    workers = [asyncio.create_task(run.worker()) for _ in range(run.maximum)]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        if cache is not None:
            cache.flush()
    stats = run.stats
    stats.retries_by_kind = dict(run.retry_kinds)
    stats.error_kinds = dict(run.error_kinds)
    stats.lowest_limit = run.fleet.lowest_limit()
    stats.replicas = [r.counters() for r in run.fleet.replicas]
    stats.elapsed_s = time.monotonic() - started
    return stats
