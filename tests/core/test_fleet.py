"""Routing and passive health checks of a fleet of replicas (core/fleet.py)."""

import asyncio
import time

from verimod.core.fleet import Fleet, HealthPolicy
from verimod.models.base import BackendOptions, ModelBackend


class Nothing(ModelBackend):
    prefix = "nothing"

    async def generate(self, request):
        raise AssertionError("not called")


def fleet(n=2, maximum=4, **policy):
    replicas = [(f"r{i}", Nothing(f"r{i}", BackendOptions())) for i in range(n)]
    return Fleet(replicas, maximum, HealthPolicy(**policy))


def test_requests_go_to_the_least_loaded_replica_in_turn():
    async def scenario():
        f = fleet(2, maximum=4)
        order = [(await f.acquire()).label for _ in range(6)]
        assert sorted(order[:2]) == ["r0", "r1"] and order.count("r0") == order.count("r1") == 3
        a, b = f.replicas
        for replica in (a, b):
            for _ in range(replica.in_flight):
                await f.release(replica, 0.01, [None])
        b.limit.limit = 1  # b is slower: it gets its share of its own (smaller) limit
        picks = [(await f.acquire()).label for _ in range(5)]
        assert picks.count("r0") == 4 and picks.count("r1") == 1

    asyncio.run(scenario())


def test_consecutive_failures_eject_then_a_probe_decides():
    async def scenario():
        f = fleet(2, maximum=8, eject_after=3, eject_s=0.05, eject_max_s=1.0)
        dead, alive = f.replicas
        for _ in range(3):
            dead.in_flight += 1
            await f.release(dead, 0.001, ["connection"])
        assert dead.ejected(time.monotonic()) and dead.ejections == 1
        assert {(await f.acquire()).label for _ in range(5)} == {"r1"}  # only the healthy one
        for _ in range(5):
            await f.release(alive, 0.01, [None])
        await asyncio.sleep(0.06)
        assert dead.capacity() == 1  # past its ejection: probed one request at a time
        probe = await f.acquire(avoid=alive)
        assert probe is dead
        await f.release(dead, 0.001, ["connection"])  # the probe fails: out again, twice as long
        assert dead.ejections == 2 and dead.ejected_until - time.monotonic() > 0.06
        await asyncio.sleep(0.11)
        probe = await f.acquire(avoid=alive)
        await f.release(probe, 0.01, [None])  # an answer: back in full rotation
        assert probe is dead and dead.capacity() == dead.limit.limit == 8

    asyncio.run(scenario())


def test_the_last_replica_in_rotation_is_never_ejected():
    async def scenario():
        f = fleet(2, maximum=2, eject_after=2, eject_s=10.0)
        a, b = f.replicas
        for replica in (a, a, b, b, b):
            replica.in_flight += 1
            await f.release(replica, 0.001, ["timeout"])
        now = time.monotonic()
        assert a.ejected(now) and not b.ejected(now) and b.ejections == 0
        assert (await f.acquire()) is b  # the fleet keeps answering (through retries)

    asyncio.run(scenario())


def test_rate_limits_slow_and_pause_only_the_replica_that_asked():
    async def scenario():
        f = fleet(2, maximum=8, eject_after=1)
        a, b = f.replicas
        a.in_flight += 2
        await f.release(a, 0.01, ["rate_limited"], retry_after=0.2)
        assert a.limit.limit == 4 and b.limit.limit == 8  # per-replica limits
        assert not a.limit.paused(time.monotonic())  # a lone refusal delays only its own request
        await f.release(a, 0.01, ["rate_limited"], retry_after=0.2)  # refusals in a row: paused
        assert a.consecutive_failures == 0 and a.ejections == 0  # a rate limit is load, not ill health
        assert {(await f.acquire()).label for _ in range(6)} == {"r1"}  # r0 is paused
        assert (await f.acquire(avoid=b)) is b  # even a retry that would rather avoid r1
        await asyncio.sleep(0.21)
        assert (await f.acquire(avoid=b)) is a

    asyncio.run(scenario())


def test_a_retry_avoids_the_replica_that_failed():
    async def scenario():
        f = fleet(3, maximum=4)
        a = f.replicas[0]
        picks = [await f.acquire(avoid=a) for _ in range(8)]
        assert a not in picks

    asyncio.run(scenario())
