"""The engine and the ``openai:`` backend against real loopback servers with injected faults:
the serving conditions of issue #20 (dead replica, 503 replica, Retry-After 60, 5 % 429)."""

import asyncio

from tests.helpers.fake_openai import FakeOpenAI, FakeOpenAIServer, dead_base_url
from verimod.core.engine import EngineConfig, run_requests
from verimod.models.base import BackendOptions, ChatMessage, ModelRequest
from verimod.models.registry import create_backend


def requests(n):
    return [ModelRequest(sample_id=f"s{i}", messages=(ChatMessage(role="user", content=f"文本{i}"),)) for i in range(n)]


def run(urls, n, config):
    backend = create_backend("openai:m", BackendOptions(base_urls=tuple(urls)))
    outcomes = []

    async def go():
        try:
            return await run_requests(backend, requests(n), outcomes.append, config)
        finally:
            await backend.aclose()

    return outcomes, asyncio.run(go())


def test_one_dead_replica_no_failed_sample():
    """Issue #20: with one --base-url dead, 5 samples failed for good though a healthy replica
    was up ("fewest in flight" sent most traffic to the replica that fails at once)."""
    healthy = FakeOpenAI(default=lambda text: f"answer {text}")
    with FakeOpenAIServer(healthy) as server:
        config = EngineConfig(max_concurrency=8, max_retries=1, backoff_base_s=0.01, eject_after=3, eject_s=30.0)
        outcomes, stats = run([dead_base_url(), server.base_url], 120, config)
    assert stats.errors == 0 and len(outcomes) == 120
    assert all(o.response.text == f"answer {o.request.messages[0].content}" for o in outcomes)
    dead, alive = stats.replicas
    assert dead["ejections"] == 1 and dead["answered"] == 0 and set(dead["failures"]) == {"connection"}
    assert dead["attempts"] <= 3 + 8  # ejected after 3 failures (and those already in flight)
    assert alive["answered"] == 120 and sum(healthy.answered.values()) == 120
    assert "@" not in dead["replica"] and dead["replica"].startswith("http://127.0.0.1:")


def test_a_replica_answering_503_does_not_throttle_the_healthy_one():
    """Issue #20: one shared limiter let a replica with 30 % 503 throttle the healthy one."""
    sick = FakeOpenAI(fault_rates={"503": 0.3}, fault_seed=7)
    healthy = FakeOpenAI()
    with FakeOpenAIServer(sick) as first, FakeOpenAIServer(healthy) as second:
        config = EngineConfig(max_concurrency=16, max_retries=3, backoff_base_s=0.01)
        outcomes, stats = run([first.base_url, second.base_url], 300, config)
    assert stats.errors == 0 and len(outcomes) == 300
    sick_stats, healthy_stats = stats.replicas
    assert sick.injected["503"] == sick_stats["failures"]["rate_limited"] > 0
    assert sick_stats["lowest_limit"] < 16 and sick_stats["ejections"] == 0  # slowed, not ejected: it is load
    assert healthy_stats["lowest_limit"] == 16 and healthy_stats["failures"] == {}
    assert stats.retries_by_kind == {"rate_limited": sick.injected["503"]}


def test_retry_after_60_waits_the_settable_maximum_and_pauses_only_that_replica():
    """Issue #20: Retry-After 60 was cut to 30 s, without jitter, and paused every request."""
    asking = FakeOpenAI(faults={"文本0": ["429"]}, retry_after="60")
    with FakeOpenAIServer(asking) as server:
        config = EngineConfig(max_concurrency=4, max_retries=2, retry_after_max_s=0.3)
        outcomes, stats = run([server.base_url], 3, config)
    by_id = {o.request.sample_id: o for o in outcomes}
    assert stats.errors == 0 and by_id["s0"].attempts == 2
    first, second = [t for t, user in asking.arrivals if user == "文本0"]
    assert 0.3 <= second - first <= 0.3 * 1.1 + 0.2  # the capped Retry-After, plus at most 10 % jitter
    # a fleet: the replica that asked is paused, the other goes on (and takes the retries)
    asking = FakeOpenAI(fault_rates={"429": 1.0}, retry_after="60")
    other = FakeOpenAI()
    with FakeOpenAIServer(asking) as first_server, FakeOpenAIServer(other) as second_server:
        config = EngineConfig(max_concurrency=4, max_retries=2, retry_after_max_s=30.0)
        outcomes, stats = run([first_server.base_url, second_server.base_url], 40, config)
    assert stats.errors == 0 and len(outcomes) == 40 and sum(other.answered.values()) == 40
    # only the requests sent before its first refusal came back reached it: then it was paused
    assert 1 <= len(asking.arrivals) <= 4 and stats.replicas[0]["failures"] == {"rate_limited": len(asking.arrivals)}
    assert stats.replicas[1]["lowest_limit"] == 4


def test_five_percent_429_without_retry_after_loses_nothing():
    server_side = FakeOpenAI(fault_rates={"429": 0.05}, fault_seed=3, retry_after=None)
    with FakeOpenAIServer(server_side) as server:
        config = EngineConfig(max_concurrency=16, max_retries=6, backoff_base_s=0.01)
        outcomes, stats = run([server.base_url], 400, config)
    assert stats.errors == 0 and sorted(o.request.sample_id for o in outcomes) == sorted(f"s{i}" for i in range(400))
    assert stats.retries_by_kind == {"rate_limited": server_side.injected["429"]} and server_side.injected["429"] > 5
    assert stats.attempts == 400 + server_side.injected["429"]
