"""The concurrency limit of one server (a replica): how many requests it gets at once.

A pure state machine (times are passed in, from a monotonic clock), so its rules can be
checked step by step. ``window`` is about one round trip: the smoothed latency of this
replica's answered attempts (an exponentially weighted mean, weight 1/8 as TCP's SRTT), at
least ``min_window_s``.

- **Decrease**: an overload answer (HTTP 429 or 503) multiplies the limit by ``decrease``
  (default 0.5; never below 1) — at most once per window. The requests that were already in
  flight when the server began refusing answer within about one round trip; their refusals are
  the same congestion event and must not halve the limit again (without this guard, a burst of
  refusals took a limit of 64 down to 2 in 30 ms). The window is counted from the end of any
  pause (below), since nothing is sent during a pause.
- **Increase**: after a quiet window — no overload answer for one window since the last
  change of the limit — the next success doubles the limit, up to ``maximum``: from 1 back to
  64 in six round trips (additive increase needed thousands of successes).
- **Pause**: a server's Retry-After stops new requests to this replica until it has passed
  (as sent; the engine caps it at its ``retry_after_max_s``). A later, shorter Retry-After
  never shortens a pause.
"""

from __future__ import annotations

SRTT_WEIGHT = 0.125


class AdaptiveLimit:
    """The limit of one replica (see the module docstring)."""

    def __init__(self, maximum: int, decrease: float = 0.5, min_window_s: float = 0.005) -> None:
        if maximum < 1:
            raise ValueError("maximum must be at least 1")
        if not 0.0 < decrease < 1.0:
            raise ValueError("decrease must be between 0 and 1")
        self.maximum = maximum
        self.limit = maximum
        self.lowest = maximum
        self.decrease = decrease
        self.min_window_s = min_window_s
        self.srtt: float | None = None
        self.resume_at = 0.0  # no new request before this time (a Retry-After pause)
        self.decreases = 0
        self._hold_until = 0.0  # overload answers before this time belong to the last decrease
        self._last_change = float("-inf")
        self._last_overload = float("-inf")

    @property
    def window(self) -> float:
        """About one round trip: the smoothed latency, at least ``min_window_s``."""
        return max(self.min_window_s, self.srtt or 0.0)

    def _measure(self, latency: float | None) -> None:
        if latency is None or latency < 0:
            return
        self.srtt = latency if self.srtt is None else self.srtt + SRTT_WEIGHT * (latency - self.srtt)

    def paused(self, now: float) -> bool:
        """True while a Retry-After pause lasts."""
        return now < self.resume_at

    def on_success(self, now: float, latency: float | None = None) -> bool:
        """Count an answered request; True when it doubled the limit (after a quiet window)."""
        self._measure(latency)
        window = self.window
        if (
            self.limit < self.maximum
            and now - self._last_overload >= window
            and now - self._last_change >= window
            and now >= self._hold_until
        ):
            self.limit = min(self.maximum, self.limit * 2)
            self._last_change = now
            return True
        return False

    def on_overload(self, now: float, latency: float | None = None, pause_s: float | None = None) -> bool:
        """Count an overload answer, pausing for ``pause_s`` seconds when given; True when it
        decreased the limit (the first overload answer of a window)."""
        self._measure(latency)
        self._last_overload = now
        if pause_s is not None and pause_s > 0:
            self.resume_at = max(self.resume_at, now + pause_s)
        if now < self._hold_until:
            return False
        self.limit = max(1, int(self.limit * self.decrease))
        self.lowest = min(self.lowest, self.limit)
        self.decreases += 1
        self._last_change = now
        self._hold_until = max(now, self.resume_at) + self.window
        return True
