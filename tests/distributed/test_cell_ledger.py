"""The Ray sweep's guard against two live attempts of one cell, without a cluster: the ledger's
lease rules, and an attempt that loses its lease ending its own process."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from verimod.distributed import sweep as ray_sweep
from verimod.distributed.sweep import CellLedger


@pytest.fixture
def cluster_state(monkeypatch):
    """Which nodes Ray reports alive (the ledger asks ``ray.nodes()``)."""
    alive = {"n1", "n2"}
    fake = SimpleNamespace(nodes=lambda: [{"NodeID": node, "Alive": True} for node in sorted(alive)])
    monkeypatch.setattr(ray_sweep, "require_ray", lambda: fake)
    return alive


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(ray_sweep.time, "monotonic", lambda: now[0])
    return now


def test_a_held_lease_is_refused_to_another_attempt_until_it_lapses(cluster_state, clock):
    ledger = CellLedger(lease_s=10)
    assert ledger.acquire("cell", "a", "n1")
    assert ledger.acquire("cell", "a", "n1")  # the holder again
    assert not ledger.acquire("cell", "b", "n2")
    clock[0] += 9
    assert ledger.renew("cell", "a")
    clock[0] += 9
    assert not ledger.acquire("cell", "b", "n2")  # renewed 9 s ago: still held
    clock[0] += 2
    assert ledger.acquire("cell", "b", "n2")  # 11 s without renewal: lapsed
    assert not ledger.renew("cell", "a")  # the old attempt learns it lost the cell
    assert ledger.holder_node("cell") == "n2"
    ledger.release("cell", "a")  # a stale release changes nothing
    assert ledger.holder_node("cell") == "n2"
    ledger.release("cell", "b")
    assert ledger.holder_node("cell") is None and ledger.acquire("cell", "c", "n1")


def test_a_lease_whose_node_died_goes_at_once(cluster_state, clock):
    ledger = CellLedger(lease_s=10)
    assert ledger.acquire("cell", "a", "n1")
    assert ledger.acquire("other", "x", "n2")
    cluster_state.discard("n1")
    assert ledger.acquire("cell", "b", "n2")
    assert not ledger.acquire("other", "y", "n2")  # cells are leased independently


class _Renewals:
    """A ledger handle whose renewals answer from a script."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.renew = SimpleNamespace(remote=lambda *_: self.answers.pop(0) if self.answers else True)


@pytest.mark.parametrize(
    ("answers", "why"),
    [([True, False], "refused: another attempt holds the cell"), ([True, None, None, None], "could not renew")],
)
def test_an_attempt_that_loses_its_lease_ends_its_process(monkeypatch, answers, why):
    def get(value, timeout=None):
        if value is None:
            raise TimeoutError("the ledger did not answer")
        return value

    monkeypatch.setattr(ray_sweep, "require_ray", lambda: SimpleNamespace(get=get))
    exits = []

    def fake_exit(code):
        exits.append(code)
        raise SystemExit(code)

    monkeypatch.setattr(ray_sweep.os, "_exit", fake_exit)
    done = threading.Event()
    with pytest.raises(SystemExit):
        ray_sweep._keep_lease(_Renewals(answers), "cell", "token", 0.2, done)
    assert exits == [75], why


def test_an_attempt_that_keeps_its_lease_runs_until_done(monkeypatch):
    monkeypatch.setattr(ray_sweep, "require_ray", lambda: SimpleNamespace(get=lambda value, timeout=None: value))
    monkeypatch.setattr(ray_sweep.os, "_exit", lambda code: pytest.fail("ended a healthy attempt"))
    done = threading.Event()
    keeper = threading.Thread(target=ray_sweep._keep_lease, args=(_Renewals([]), "cell", "t", 0.2, done))
    keeper.start()
    threading.Timer(0.5, done.set).start()
    keeper.join(5)
    assert not keeper.is_alive()
