"""The per-replica limit, step by step with a hand-driven clock (rules in core/rate_limit.py)."""

import pytest

from verimod.core.rate_limit import AdaptiveLimit


def refusals_until_decrease(limit: AdaptiveLimit, t: float) -> int:
    """Overload answers at time ``t`` until one decreases the limit; how many it took."""
    count = 1
    while not limit.on_overload(t, latency=0.1):
        count += 1
    return count


def test_a_burst_of_refusals_within_one_round_trip_decreases_the_limit_once():
    limit = AdaptiveLimit(64)
    limit.on_success(0.0, latency=0.1)  # srtt 0.1 s: the window
    results = [limit.on_overload(1.0 + k * 0.003, latency=0.1) for k in range(30)]
    # the seventh refusal of the window is more than 10 % of the limit (6.4): halved once; the
    # others are the requests that were in flight: the same congestion event
    assert results == [False] * 6 + [True] + [False] * 23
    assert limit.limit == 32 and limit.decreases == 1
    # a new window: more than 3.2 refusals at a limit of 32
    assert [limit.on_overload(1.2 + k * 0.001, latency=0.1) for k in range(4)] == [False] * 3 + [True]
    assert limit.limit == 16 and limit.lowest == 16


def test_the_refusals_a_window_tolerates_follow_the_limit():
    limit = AdaptiveLimit(64)
    limit.on_success(0.0, latency=0.1)
    # more than 10 % of the limit: 7 of 64, 4 of 32, 2 of 16, then the first at 8 and at 4
    assert [refusals_until_decrease(limit, t) for t in (1.0, 1.2, 1.4, 1.6, 1.8)] == [7, 4, 2, 1, 1]
    assert limit.limit == 2
    strict = AdaptiveLimit(64, tolerance=0.0)  # every first refusal of a window decreases
    strict.on_success(0.0, latency=0.1)
    assert [refusals_until_decrease(strict, t) for t in (1.0, 1.2)] == [1, 1] and strict.limit == 16


def test_sparse_refusals_keep_the_limit():
    """Issue #20: with 5 % of the answers HTTP 429, each refusal halved the limit (64 → 2)."""
    limit = AdaptiveLimit(64)
    t = 0.0
    for window in range(50):  # 64 answers per 0.1 s window, 3 of them refusals (about 5 %)
        for k in range(64):
            t = window * 0.1 + k * 0.1 / 64
            if k in (5, 30, 50):
                assert limit.on_overload(t, latency=0.1) is False
            else:
                limit.on_success(t, latency=0.1)
    assert limit.limit == 64 and limit.decreases == 0


def test_quiet_windows_double_the_limit_back_to_the_maximum():
    limit = AdaptiveLimit(64)
    limit.on_success(0.0, latency=0.1)
    for t in (1.0, 1.2, 1.4, 1.6, 1.8):
        refusals_until_decrease(limit, t)
    assert limit.limit == 2
    t = 1.8
    assert limit.on_success(t + 0.05, latency=0.1) is False  # not a whole window since the decrease
    doublings = []
    while limit.limit < 64:
        t += 0.11
        doublings.append(limit.on_success(t, latency=0.1))
        limit.on_success(t + 0.01, latency=0.1)  # a success within the same window changes nothing
    assert doublings == [True] * 5 and limit.limit == 64  # 2 → 64 in five round trips
    assert limit.on_success(t + 1.0, latency=0.1) is False and limit.limit == 64  # never above the maximum


def test_retry_after_pauses_as_sent_and_is_never_shortened():
    limit = AdaptiveLimit(8)
    limit.on_overload(9.995, latency=0.01, pause_s=60.0)  # the limit is halved: 4
    assert not limit.paused(10.0)  # one refusal: only its own request waits (the engine's retry)
    limit.on_overload(10.0, latency=0.01, pause_s=60.0)  # two in a row: the server is throttling
    assert limit.paused(69.9) and not limit.paused(70.0) and limit.pauses == 1
    limit.on_overload(20.0, latency=0.01, pause_s=1.0)  # a shorter pause does not end the first early
    assert limit.paused(69.9) and limit.pauses == 1
    # the window of the decrease runs from the end of the pause: refusals of requests sent
    # just after it are the same congestion event
    assert limit.on_overload(70.005, latency=0.01) is False
    assert limit.limit == 4


def test_a_lone_refusal_among_answers_does_not_pause_the_replica():
    """A server refusing 5 % of requests with a 50 ms Retry-After: pausing the replica at each
    refusal made a run twice as slow; only refusals in a row pause it."""
    limit = AdaptiveLimit(8)
    for k in range(100):
        t = k * 0.01
        if k % 20 == 0:
            limit.on_overload(t, latency=0.01, pause_s=0.05)
        else:
            limit.on_success(t, latency=0.01)
        assert not limit.paused(t + 0.001)
    assert limit.pauses == 0 and limit.refusals_in_row == 0
    limit.on_overload(1.0, latency=0.01, pause_s=0.05)
    limit.on_overload(1.001, latency=0.01, pause_s=0.05)
    assert limit.paused(1.04) and not limit.paused(1.052) and limit.pauses == 1


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
    with pytest.raises(ValueError):
        AdaptiveLimit(4, tolerance=1.0)
