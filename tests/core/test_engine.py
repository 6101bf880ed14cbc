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


def test_limiter_halves_and_grows_back():
    async def scenario():
        limiter = AdaptiveLimiter(8)
        await limiter.overload(0.0)
        assert limiter.limit == 4
        await limiter.overload(0.0)
        assert limiter.limit == 2
        for _ in range(2):
            await limiter.success()
        assert limiter.limit == 3
        for _ in range(100):
            await limiter.success()
        assert limiter.limit == 8

    asyncio.run(scenario())


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
