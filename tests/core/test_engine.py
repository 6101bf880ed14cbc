"""The engine with an in-memory backend: retries, adaptation, errors, cache — nothing lost."""

import asyncio
import time
from collections import Counter

import pytest

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, run_requests
from verimod.models.base import BackendError, BackendOptions, ChatMessage, ModelBackend, ModelRequest, ModelResponse

FAST = EngineConfig(max_concurrency=8, max_retries=3, backoff_base_s=0.001, backoff_max_s=0.01)


class Flaky(ModelBackend):
    """Fails each sample according to a script of error kinds, then answers."""

    prefix = "flaky"

    def __init__(self, script=None, batch_size=1, max_concurrency=None, crash=()):
        super().__init__("m", BackendOptions())
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.calls = Counter()
        self.batch_size = batch_size
        self.max_concurrency = max_concurrency
        self.in_flight = 0
        self.peak = 0
        self.crash = set(crash)

    async def generate(self, request):
        self.calls[request.sample_id] += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0.001)
            if request.sample_id in self.crash:
                raise RuntimeError("backend bug")
            steps = self.script.get(request.sample_id)
            if steps:
                kind = steps.pop(0)
                raise BackendError(kind, f"injected {kind}", retry_after=0.001 if kind == "rate_limited" else None)
            return ModelResponse(text=f"answer {request.sample_id}")
        finally:
            self.in_flight -= 1


def requests(n, prefix="s"):
    return [
        ModelRequest(sample_id=f"{prefix}{i}", messages=(ChatMessage(role="user", content=f"文本{i}"),))
        for i in range(n)
    ]


def run(backend, reqs, config=FAST, cache=None):
    outcomes = []
    stats = asyncio.run(run_requests(backend, reqs, outcomes.append, config, cache, prompt_version="p1"))
    return outcomes, stats


def test_every_request_ends_exactly_once():
    script = {"s1": ["server", "server"], "s2": ["rate_limited"], "s3": ["client"], "s4": ["timeout"] * 10}
    backend = Flaky(script, crash={"s5"})
    outcomes, stats = run(backend, requests(40))
    assert sorted(o.request.sample_id for o in outcomes) == sorted(f"s{i}" for i in range(40))
    by_id = {o.request.sample_id: o for o in outcomes}
    assert by_id["s1"].response.text == "answer s1" and by_id["s1"].attempts == 3
    assert by_id["s2"].response is not None
    assert by_id["s3"].error.kind == "client" and backend.calls["s3"] == 1  # not retried
    assert by_id["s4"].error.kind == "timeout" and backend.calls["s4"] == FAST.max_retries + 1
    assert by_id["s5"].error.kind == "model" and "backend bug" in str(by_id["s5"].error)
    assert stats.done == 40 and stats.errors == 3 and stats.error_kinds == {"client": 1, "timeout": 1, "model": 1}


def test_concurrency_is_bounded_and_capped_by_the_backend():
    backend = Flaky()
    run(backend, requests(100), EngineConfig(max_concurrency=5))
    assert backend.peak <= 5
    backend = Flaky(max_concurrency=1)
    run(backend, requests(20), EngineConfig(max_concurrency=16))
    assert backend.peak == 1


def test_batches_respect_batch_size():
    seen = []

    class Batched(Flaky):
        async def generate_batch(self, batch):
            seen.append(len(batch))
            return await super().generate_batch(batch)

    outcomes, _ = run(Batched(batch_size=7, max_concurrency=1), requests(30))
    assert len(outcomes) == 30 and max(seen) == 7 and sum(seen) == 30


def test_rate_limits_shrink_the_limit_then_it_recovers():
    script = {f"s{i}": ["rate_limited"] for i in range(10)}
    backend = Flaky(script)
    _, stats = run(backend, requests(200), EngineConfig(max_concurrency=16, backoff_base_s=0.001, backoff_max_s=0.01))
    assert stats.lowest_limit < 16 and stats.errors == 0
    assert stats.retries_by_kind == {"rate_limited": 10} and stats.attempts == 210


def test_cache_serves_identical_requests_only(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite3")
    backend = Flaky()
    first, _ = run(backend, requests(10), cache=cache)
    assert not any(o.cache_hit for o in first)
    second, stats = run(Flaky(), requests(10), cache=cache)
    assert all(o.cache_hit for o in second) and stats.cache_hits == 10
    assert [o.response.text for o in second] == [o.response.text for o in first]
    changed = [r.model_copy(update={"repeat": 1}) for r in requests(10)]
    third, _ = run(Flaky(), changed, cache=cache)
    assert not any(o.cache_hit for o in third)
    cache.close()


def test_errors_are_not_cached(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite3")
    run(Flaky({"s0": ["client"]}), requests(1), cache=cache)
    again, _ = run(Flaky(), requests(1), cache=cache)
    assert not again[0].cache_hit and again[0].response is not None
    cache.close()


@pytest.mark.parametrize("timeout", [0.05])
def test_request_timeout_bounds_each_attempt(timeout):
    class Slow(Flaky):
        async def generate(self, request):
            await asyncio.sleep(1)
            return ModelResponse(text="late")

    outcomes, _ = run(Slow(), requests(2), EngineConfig(request_timeout_s=timeout, max_retries=1, backoff_base_s=0.001))
    assert all(o.error is not None and o.error.kind == "timeout" and o.attempts == 2 for o in outcomes)


@pytest.mark.parametrize("batch_size", [1, 4])
def test_server_backends_are_timed_out_whatever_their_batch_size(batch_size):
    class Slow(Flaky):
        async def generate(self, request):
            await asyncio.sleep(1)
            return ModelResponse(text="late")

    config = EngineConfig(request_timeout_s=0.05, max_retries=0)
    outcomes, _ = run(Slow(batch_size=batch_size), requests(2), config)
    assert [o.error.kind if o.error else None for o in outcomes] == ["timeout", "timeout"]


@pytest.mark.parametrize("batch_size", [1, 4])
def test_in_process_backends_are_never_timed_out(batch_size):
    """Abandoning a computation in this process would not stop it (issue #14: a gguf model
    freed under a running decode crashed the process): in-process backends run to the end."""

    class LocalModel(Flaky):
        in_process = True

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.finished = 0

        async def generate(self, request):
            await asyncio.to_thread(time.sleep, 0.3)  # longer than the timeout
            self.finished += 1
            return ModelResponse(text=f"answer {request.sample_id}")

    backend = LocalModel(batch_size=batch_size, max_concurrency=1)
    outcomes, stats = run(backend, requests(2), EngineConfig(request_timeout_s=0.05, max_retries=0))
    answers = {o.request.sample_id: o.response.text if o.response else o.error for o in outcomes}
    assert answers == {"s0": "answer s0", "s1": "answer s1"}
    assert stats.errors == 0 and backend.finished == 2
    assert all(o.latency_s >= 0.05 for o in outcomes)


class Replicated(Flaky):
    """A fleet: one Flaky backend per replica, each failing with its own script of kinds."""

    def __init__(self, *replicas):
        super().__init__()
        self.members = list(replicas)

    def replicas(self):
        return [(f"replica-{i}", member) for i, member in enumerate(self.members)]


class Dead(Flaky):
    async def generate(self, request):
        self.calls[request.sample_id] += 1
        raise BackendError("connection", "connection refused")


def test_a_dead_replica_costs_no_sample_and_is_ejected():
    dead, healthy = Dead(), Flaky()
    config = EngineConfig(max_concurrency=8, max_retries=1, backoff_base_s=0.001, eject_after=3, eject_s=10.0)
    outcomes, stats = run(Replicated(dead, healthy), requests(200), config)
    assert stats.errors == 0 and all(o.response is not None for o in outcomes)  # one retry was enough
    assert sum(healthy.calls.values()) == 200
    dead_stats, healthy_stats = stats.replicas
    assert dead_stats["ejections"] == 1 and dead_stats["failures"] == {"connection": dead_stats["attempts"]}
    assert dead_stats["attempts"] <= 3 + 8  # the failures that eject it, and those already in flight
    assert healthy_stats["answered"] == 200 and healthy_stats["replica"] == "replica-1"


def test_an_overloaded_replica_does_not_throttle_the_healthy_one():
    script = {f"s{i}": ["rate_limited"] for i in range(0, 200, 3)}
    busy, healthy = Flaky(script), Flaky()
    _, stats = run(Replicated(busy, healthy), requests(200), EngineConfig(max_concurrency=8, max_retries=2))
    assert stats.errors == 0
    busy_stats, healthy_stats = stats.replicas
    assert busy_stats["lowest_limit"] < 8 and healthy_stats["lowest_limit"] == 8


def test_retry_after_is_honoured_as_sent_beyond_the_backoff_maximum():
    """Issue #20: Retry-After was cut to backoff_max_s (30 s: a 60 s hint was not honoured)."""

    class Asks(Flaky):
        async def generate(self, request):
            self.calls[request.sample_id] += 1
            if self.calls[request.sample_id] == 1:
                raise BackendError("rate_limited", "slow down", retry_after=0.3)
            return ModelResponse(text="ok")

    config = EngineConfig(max_retries=2, backoff_base_s=0.001, backoff_max_s=0.01)
    outcomes, stats = run(Asks(), requests(1), config)
    assert outcomes[0].attempts == 2 and stats.retries_by_kind == {"rate_limited": 1}
    assert 0.3 <= outcomes[0].latency_s < 0.3 * 1.1 + 0.2  # waited as asked, plus at most 10 % jitter
    capped = EngineConfig(max_retries=2, backoff_base_s=0.001, retry_after_max_s=0.05)
    outcomes, _ = run(Asks(), requests(1), capped)
    assert 0.05 <= outcomes[0].latency_s < 0.25  # the settable maximum


def test_latency_covers_every_attempt():
    class SlowThenOk(Flaky):
        async def generate(self, request):
            self.calls[request.sample_id] += 1
            await asyncio.sleep(0.05)
            if self.calls[request.sample_id] < 3:
                raise BackendError("server", "try again")
            return ModelResponse(text="ok")

    outcomes, _ = run(SlowThenOk(), requests(1), EngineConfig(max_retries=3, backoff_base_s=0.001))
    assert outcomes[0].attempts == 3 and outcomes[0].latency_s >= 3 * 0.05


def test_requests_are_read_lazily():
    """Memory must not grow with the number of requests: the engine reads the iterable only as
    far as it has room in flight (issue #20)."""
    read = 0
    outcomes = []

    def source():
        nonlocal read
        for request in requests(1000):
            read += 1
            yield request

    reads_at_outcome = []

    def on_outcome(outcome):
        outcomes.append(outcome)
        reads_at_outcome.append(read)

    stats = asyncio.run(run_requests(Flaky(), source(), on_outcome, EngineConfig(max_concurrency=4)))
    assert stats.done == 1000 and len(outcomes) == 1000
    assert max(r - i for i, r in enumerate(reads_at_outcome, start=1)) <= 4 + 1  # in flight, plus one read ahead


def test_the_summary_is_what_a_manifest_records():
    script = {"s1": ["server"], "s2": ["client"]}
    _, stats = run(Flaky(script), requests(5))
    summary = stats.summary()
    assert summary["requests"] == 5 and summary["attempts"] == 6 and summary["retries"] == {"server": 1}
    assert summary["errors"] == {"client": 1} and summary["lowest_limit"] == FAST.max_concurrency
    assert summary["elapsed_s"] >= 0 and [r["replica"] for r in summary["replicas"]] == ["flaky:m"]
