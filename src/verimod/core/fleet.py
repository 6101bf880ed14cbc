"""The replicas of a model (a fleet of servers): routing, per-replica limits, passive health.

Each replica has its own :class:`~verimod.core.rate_limit.AdaptiveLimit` (a rate limit or a
Retry-After from one server slows or pauses that server only) and its own count of requests
in flight. :meth:`Fleet.acquire` gives a request the available replica with the lowest
``in flight / limit`` (ties in turn). A replica is available when it is in rotation, not
paused, and below its limit.

Passive health checks (as Envoy's outlier detection): ``eject_after`` consecutive failed
attempts of a replica — refused or dropped connections, timeouts, 5xx other than 503,
malformed bodies; not rate limits, which are load, nor client errors — take it out of rotation
for ``eject_s`` seconds, doubled at each ejection in a row up to ``eject_max_s``. When that time
has passed, the replica gets one request at a time (a probe): an answer puts it back in full
rotation, a failure ejects it again, for longer. At least one replica always stays in rotation
(a fleet where every server fails still ends, through the engine's retries).

A failed attempt is retried on another replica where one is in rotation (``avoid``): the
replica that failed gets it again only when no other replica could take it (all others are
ejected or paused).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from verimod.core.rate_limit import AdaptiveLimit
from verimod.models.base import ModelBackend

#: error kinds that count against a replica's health
HEALTH_FAILURES: frozenset[str] = frozenset({"connection", "timeout", "server", "bad_response"})


@dataclass(frozen=True)
class HealthPolicy:
    """When a failing replica leaves rotation, and for how long (see the module docstring)."""

    eject_after: int = 5
    eject_s: float = 1.0
    eject_max_s: float = 30.0


@dataclass
class Replica:
    """One server of the fleet: its backend, limit, requests in flight, health and counters."""

    index: int
    label: str
    backend: ModelBackend
    limit: AdaptiveLimit
    in_flight: int = 0
    consecutive_failures: int = 0
    ejected_until: float = 0.0
    ejection_level: int = 0  # ejections in a row; > 0 and past ejected_until: probing
    attempts: int = 0
    answered: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    ejections: int = 0

    def ejected(self, now: float) -> bool:
        """Out of rotation until ``ejected_until``."""
        return now < self.ejected_until

    def capacity(self) -> int:
        """Requests it may have in flight: its limit, or one while it is being probed."""
        return 1 if self.ejection_level > 0 else self.limit.limit

    def counters(self) -> dict[str, Any]:
        """Its counters, for the run manifest."""
        return {
            "replica": self.label,
            "attempts": self.attempts,
            "answered": self.answered,
            "failures": dict(sorted(self.failures.items())),
            "ejections": self.ejections,
            "lowest_limit": self.limit.lowest,
            "limit_decreases": self.limit.decreases,
            "pauses": self.limit.pauses,
        }


class Fleet:
    """Routes attempts over replicas and keeps their limits and health (module docstring)."""

    def __init__(
        self, replicas: Sequence[tuple[str, ModelBackend]], maximum: int, health: HealthPolicy | None = None
    ) -> None:
        if not replicas:
            raise ValueError("a fleet needs at least one replica")
        self.replicas = [
            Replica(i, label, backend, AdaptiveLimit(maximum)) for i, (label, backend) in enumerate(replicas)
        ]
        self.health = health or HealthPolicy()
        self._turn = 0
        self._changed = asyncio.Condition()

    def lowest_limit(self) -> int:
        """The lowest limit any replica reached."""
        return min(r.limit.lowest for r in self.replicas)

    def other_in_rotation(self, replica: Replica | None, now: float | None = None) -> bool:
        """True when a replica other than ``replica`` is in rotation and not paused."""
        now = time.monotonic() if now is None else now
        return any(r is not replica and not r.ejected(now) and not r.limit.paused(now) for r in self.replicas)

    def _choose(self, now: float, avoid: Replica | None) -> tuple[Replica | None, float | None]:
        """The replica for the next attempt (None: wait), and when the next pause or ejection ends."""
        wake = [t for r in self.replicas for t in (r.ejected_until, r.limit.resume_at) if t > now]
        ready = [
            r for r in self.replicas if not r.ejected(now) and not r.limit.paused(now) and r.in_flight < r.capacity()
        ]
        preferred = [r for r in ready if r is not avoid]
        if not preferred and avoid in ready and not self.other_in_rotation(avoid, now):
            preferred = [avoid]  # no other replica could take it soon: the same one again
        best = None
        if preferred:
            self._turn += 1
            count = len(self.replicas)
            best = min(preferred, key=lambda r: ((r.in_flight + 1) / r.capacity(), (r.index - self._turn) % count))
        return best, (min(wake) if wake else None)

    async def acquire(self, avoid: Replica | None = None) -> Replica:
        """Wait for an available replica (see the module docstring) and count the attempt on it."""
        async with self._changed:
            while True:
                now = time.monotonic()
                replica, wake = self._choose(now, avoid)
                if replica is not None:
                    replica.in_flight += 1
                    replica.attempts += 1
                    return replica
                timeout = None if wake is None else max(0.0, wake - now) + 0.001
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), timeout)

    async def release(
        self, replica: Replica, latency: float, kinds: Sequence[str | None], retry_after: float | None = None
    ) -> None:
        """End an attempt on ``replica``: ``kinds`` holds, per request of the attempt, None for
        an answer or the error kind; ``retry_after`` (seconds, already capped) pauses the
        replica. Updates its limit and health (module docstring) and wakes waiting requests."""
        async with self._changed:
            now = time.monotonic()
            replica.in_flight -= 1
            answered = sum(1 for k in kinds if k is None)
            replica.answered += answered
            replica.failures.update(k for k in kinds if k is not None)
            if "rate_limited" in kinds:
                replica.limit.on_overload(now, latency, retry_after)
            elif answered:
                replica.limit.on_success(now, latency)
            if kinds and all(k in HEALTH_FAILURES for k in kinds):
                replica.consecutive_failures += 1
                if replica.ejected(now):
                    pass  # sent before the ejection: the same trouble, already acted on
                elif replica.ejection_level > 0 or replica.consecutive_failures >= self.health.eject_after:
                    self._eject(replica, now)
            else:  # the server answered (even a refusal or a client error): it is up
                replica.consecutive_failures = 0
                if answered or "rate_limited" in kinds:
                    replica.ejection_level = 0
            self._changed.notify_all()

    def _eject(self, replica: Replica, now: float) -> None:
        if not any(r is not replica and not r.ejected(now) for r in self.replicas):
            return  # the last replica in rotation stays
        seconds = min(self.health.eject_max_s, self.health.eject_s * 2**replica.ejection_level)
        replica.ejected_until = now + seconds
        replica.ejection_level += 1
        replica.ejections += 1
        replica.consecutive_failures = 0
