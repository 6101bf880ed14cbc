"""The per-replica limit, step by step with a hand-driven clock (rules in core/rate_limit.py)."""

import pytest

from verimod.core.rate_limit import AdaptiveLimit


def test_a_burst_of_refusals_within_one_round_trip_halves_the_limit_once():
    limit = AdaptiveLimit(64)
    limit.on_success(0.0, latency=0.1)  # srtt 0.1 s: the window
    assert limit.on_overload(1.0, latency=0.1) is True and limit.limit == 32
    for k in range(1, 30):  # the other requests in flight answer within the same round trip
        assert limit.on_overload(1.0 + k * 0.003, latency=0.1) is False
    assert limit.limit == 32 and limit.decreases == 1
    assert limit.on_overload(1.2, latency=0.1) is True and limit.limit == 16  # a new window
    assert limit.lowest == 16


def test_quiet_windows_double_the_limit_back_to_the_maximum():
    limit = AdaptiveLimit(64)
    limit.on_success(0.0, latency=0.1)
    for t in (1.0, 1.2, 1.4, 1.6, 1.8):
        limit.on_overload(t, latency=0.1)
    assert limit.limit == 2
    t = 1.8
    assert limit.on_success(t + 0.05, latency=0.1) is False  # not quiet for a whole window yet
    doublings = []
    while limit.limit < 64:
        t += 0.11
        doublings.append(limit.on_success(t, latency=0.1))
        limit.on_success(t + 0.01, latency=0.1)  # a success within the same window changes nothing
    assert doublings == [True] * 5 and limit.limit == 64  # 2 → 64 in five round trips
    assert limit.on_success(t + 1.0, latency=0.1) is False and limit.limit == 64  # never above the maximum


def test_retry_after_pauses_as_sent_and_is_never_shortened():
    limit = AdaptiveLimit(8)
    limit.on_overload(10.0, latency=0.01, pause_s=60.0)
    assert limit.paused(69.9) and not limit.paused(70.0)
    limit.on_overload(20.0, latency=0.01, pause_s=1.0)  # a shorter pause does not end the first early
    assert limit.paused(69.9)
    # the window of the decrease runs from the end of the pause: refusals of requests sent
    # just after it are the same congestion event
    assert limit.on_overload(70.005, latency=0.01) is False
    assert limit.limit == 4


def test_the_window_follows_the_round_trip_time():
    limit = AdaptiveLimit(4, min_window_s=0.005)
    assert limit.window == 0.005  # nothing measured yet
    limit.on_success(0.0, latency=0.2)
    assert limit.window == pytest.approx(0.2)
    limit.on_success(0.0, latency=1.0)
    assert limit.window == pytest.approx(0.2 + 0.125 * 0.8)  # EWMA, weight 1/8
    limit.on_success(0.0, latency=0.0001)
    assert limit.window > 0.005


def test_never_below_one_and_checked_arguments():
    limit = AdaptiveLimit(3)
    for t in range(10):
        limit.on_overload(float(t))
    assert limit.limit == 1 and limit.lowest == 1
    with pytest.raises(ValueError):
        AdaptiveLimit(0)
    with pytest.raises(ValueError):
        AdaptiveLimit(4, decrease=1.0)
