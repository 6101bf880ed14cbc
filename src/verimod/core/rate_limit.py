"""The concurrency limit of one server (a replica): how many requests it gets at once.

A pure state machine (times are passed in, from a monotonic clock), so its rules can be
checked step by step. ``window`` is about one round trip: the smoothed latency of this
replica's answered attempts (an exponentially weighted mean, weight 1/8 as TCP's SRTT), at
least ``min_window_s``. In one window the replica answers about ``limit`` requests.

- **Decrease**: overload answers (HTTP 429 or 503) multiply the limit by ``decrease`` (default
  0.5; never below 1) when, within one window, more than ``tolerance`` × ``limit`` of them
  came (default 10 %: at a limit of 64 the seventh refusal of a window, at a limit below 10
  the first) — at most once per window. A server that is throttling refuses most requests;
  a few refusals per window are noise (a server refusing 5 % of requests at random, with
  every refusal halving the limit, kept it near 4 and a run at a fixed latency 2× slower).
  The requests already in flight when the limit was decreased answer within about one round
  trip: their refusals belong to the same congestion event and are not counted (without
  this guard, a burst of refusals took a limit of 64 down to 2 in 30 ms). That guard runs
  from the end of any pause (below), since nothing is sent during a pause.
- **Increase**: one window after the last change of the limit without a decrease, the next
  success doubles the limit, up to ``maximum``: from 1 back to 64 in six round trips
  (additive increase needed thousands of successes).
- **Pause**: when the replica refuses :data:`PAUSE_AFTER_REFUSALS` answers in a row (no answer
  between them), the Retry-After of the refusal stops new requests to this replica until it
  has passed (as sent; the engine caps it at its ``retry_after_max_s``). A throttling server
  refuses everything, so the second refusal comes within one round trip and few requests are
  wasted; a lone refusal among answers delays only its own request, by its Retry-After (the
  engine's retry), not the whole replica — pausing the replica for each of 5 % refusals with
  a 50 ms Retry-After made a run twice as slow. A later, shorter Retry-After never shortens a
  pause.
"""

from __future__ import annotations

SRTT_WEIGHT = 0.125
#: refusals in a row after which a Retry-After pauses the replica (module docstring)
PAUSE_AFTER_REFUSALS = 2


class AdaptiveLimit:
    """The limit of one replica (see the module docstring)."""

    def __init__(
        self, maximum: int, decrease: float = 0.5, min_window_s: float = 0.005, tolerance: float = 0.1
    ) -> None:
        if maximum < 1:
            raise ValueError("maximum must be at least 1")
        if not 0.0 < decrease < 1.0:
            raise ValueError("decrease must be between 0 and 1")
        if not 0.0 <= tolerance < 1.0:
            raise ValueError("tolerance must be at least 0 and below 1")
        self.maximum = maximum
        self.limit = maximum
        self.lowest = maximum
        self.decrease = decrease
        self.min_window_s = min_window_s
        self.tolerance = tolerance
        self.srtt: float | None = None
        self.resume_at = 0.0  # no new request before this time (a Retry-After pause)
        self.decreases = 0
        self.pauses = 0
        self.refusals_in_row = 0
        self._hold_until = 0.0  # overload answers before this time belong to the last decrease
        self._last_change = float("-inf")
        self._window_start = float("-inf")  # of the window whose refusals are counted
        self._refusals = 0  # counted in that window

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
        """Count an answered request; True when it doubled the limit (one window after the last
        change)."""
        self._measure(latency)
        self.refusals_in_row = 0
        if self.limit < self.maximum and now - self._last_change >= self.window and now >= self._hold_until:
            self.limit = min(self.maximum, self.limit * 2)
            self._changed(now, now)
            return True
        return False

    def on_overload(self, now: float, latency: float | None = None, pause_s: float | None = None) -> bool:
        """Count an overload answer; ``pause_s`` (its Retry-After, seconds) pauses the replica
        when it is the :data:`PAUSE_AFTER_REFUSALS`-th refusal in a row. True when it decreased
        the limit (module docstring)."""
        self._measure(latency)
        self.refusals_in_row += 1
        if pause_s is not None and pause_s > 0 and self.refusals_in_row >= PAUSE_AFTER_REFUSALS:
            self.pauses += now + pause_s > self.resume_at
            self.resume_at = max(self.resume_at, now + pause_s)
            if now < self._hold_until:  # the decrease of this congestion event is made: the
                self._hold_until = max(self._hold_until, self.resume_at + self.window)  # guard follows the pause
        if now < self._hold_until:
            return False
        if now - self._window_start >= self.window:
            self._window_start, self._refusals = now, 0
        self._refusals += 1
        if self._refusals <= self.tolerance * self.limit:
            return False
        self.limit = max(1, int(self.limit * self.decrease))
        self.lowest = min(self.lowest, self.limit)
        self.decreases += 1
        self._changed(now, max(now, self.resume_at) + self.window)
        return True

    def _changed(self, now: float, hold_until: float) -> None:
        """The limit changed at ``now``: refusals are counted afresh from ``hold_until``."""
        self._last_change = now
        self._hold_until = max(self._hold_until, hold_until)
        self._window_start, self._refusals = hold_until, 0
