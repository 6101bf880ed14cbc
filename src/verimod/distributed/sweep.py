"""``verimod sweep SWEEP.yaml --ray ADDRESS``: one Ray task per cell, at most one live attempt per cell.

Each cell runs :func:`verimod.sweep.runner.attempt_cell` — :func:`verimod.sweep.run_cell` —
in a Ray task on any node that sees the runs folder (shared storage): a normal resumable run
directory, ``runs_dir/<cell id>``. When the node (or the worker) running a cell dies, Ray runs
the task again on another node (``max_retries``), and ``run_cell`` *resumes* the directory: only
samples without a stored answer are sent, so finished samples are not repeated.

**One live attempt per cell.** Two attempts of one cell would append to the same
``samples.jsonl``. The runner guards the cells itself (it does not rely on any lock in the run
directory):

- the driver submits each cell once, and at most ``budget`` at a time; a retry exists only
  because Ray declared the previous attempt dead;
- every attempt must hold the cell's *lease* in :class:`CellLedger`, an actor on the driver's
  node, before it opens the run directory. A lease is granted when the cell has no holder, or
  its holder's node is dead (as Ray's cluster state says), or the holder has not renewed it for
  ``lease_s`` seconds. The holder renews it every ``lease_s / 4`` s from a thread; an attempt
  whose renewal is refused (the lease went to another attempt) or that could not renew for
  ``lease_s / 2`` s ends its own process at once (``os._exit``) — before any other attempt can
  be granted the lease. So even an attempt cut off from the cluster but still running (a network
  partition, where Ray starts a retry elsewhere) stops appending before its successor starts.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from verimod.distributed.cluster import fetch, require_ray, submit
from verimod.sweep.cell import CellResult, SweepCell
from verimod.sweep.runner import SweepOutcome, attempt_cell, check_new_cells, write_state
from verimod.sweep.spec import SweepPlan

#: Seconds without renewal after which a cell's lease may go to another attempt.
LEASE_S = 30.0
#: How often a waiting attempt asks for the lease again (s).
POLL_S = 0.5


@dataclass
class _Holder:
    token: str
    node: str
    renewed: float


class CellLedger:
    """Who holds each cell's lease (a Ray actor; module docstring)."""

    def __init__(self, lease_s: float) -> None:
        self.lease_s = lease_s
        self.holders: dict[str, _Holder] = {}

    def acquire(self, cell_id: str, token: str, node: str) -> bool:
        """Grant the lease to attempt ``token`` on ``node`` when the cell is free."""
        holder = self.holders.get(cell_id)
        if holder is not None and holder.token != token and not self._gone(holder):
            return False
        self.holders[cell_id] = _Holder(token, node, time.monotonic())
        return True

    def renew(self, cell_id: str, token: str) -> bool:
        """Renew the lease of its holder; False for an attempt that no longer holds it."""
        holder = self.holders.get(cell_id)
        if holder is None or holder.token != token:
            return False
        holder.renewed = time.monotonic()
        return True

    def release(self, cell_id: str, token: str) -> None:
        holder = self.holders.get(cell_id)
        if holder is not None and holder.token == token:
            del self.holders[cell_id]

    def holder_node(self, cell_id: str) -> str | None:
        """The node of the cell's current holder (None when free)."""
        holder = self.holders.get(cell_id)
        return holder.node if holder is not None else None

    def _gone(self, holder: _Holder) -> bool:
        if time.monotonic() - holder.renewed > self.lease_s:
            return True
        alive = {node["NodeID"] for node in require_ray().nodes() if node.get("Alive")}
        return holder.node not in alive


def _keep_lease(ledger: Any, cell_id: str, token: str, lease_s: float, done: threading.Event) -> None:
    """Renew the lease until ``done``; end this process when it is lost or cannot be renewed."""
    ray = require_ray()
    renewed = time.monotonic()
    while not done.wait(lease_s / 4):
        try:
            held = ray.get(ledger.renew.remote(cell_id, token), timeout=lease_s / 4)
        except Exception:  # the ledger unreachable: keep trying until the deadline
            held = None
        if held:
            renewed = time.monotonic()
        elif held is False or time.monotonic() - renewed > lease_s / 2:
            os._exit(75)  # another attempt may be granted the cell: stop appending now


def run_cell_task(
    cell: SweepCell, runs_dir: str, sweep: str, use_cache: bool, ledger: Any, lease_s: float
) -> tuple[CellResult | None, str | None]:
    """One attempt of one cell (a Ray task): hold the lease, then run the cell."""
    ray = require_ray()
    token, node = uuid.uuid4().hex, ray.get_runtime_context().get_node_id()
    while not ray.get(ledger.acquire.remote(cell.cell_id, token, node)):
        time.sleep(POLL_S)
    done = threading.Event()
    keeper = threading.Thread(target=_keep_lease, args=(ledger, cell.cell_id, token, lease_s, done), daemon=True)
    keeper.start()
    try:
        return attempt_cell(cell, runs_dir, sweep, use_cache)
    finally:
        done.set()
        keeper.join()
        ray.get(ledger.release.remote(cell.cell_id, token))


def start_ledger(lease_s: float = LEASE_S) -> Any:
    """The :class:`CellLedger` actor, on this (the driver's) node."""
    ray = require_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    actor = ray.remote(CellLedger).options(
        num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)
    )
    return actor.remote(lease_s)


def run_sweep_on_ray(
    plan: SweepPlan,
    cells: Sequence[SweepCell],
    *,
    budget: int | None = None,
    use_cache: bool = True,
    lease_s: float = LEASE_S,
    on_start: Callable[[SweepCell], None] | None = None,
    on_done: Callable[[SweepCell, CellResult | None, str | None], None] | None = None,
    ledger: Any = None,
) -> SweepOutcome:
    """Run ``cells`` on the connected Ray cluster, at most ``budget`` at once (module docstring);
    the same outcome as :func:`verimod.sweep.runner.run_sweep`. ``ledger``: an existing
    :class:`CellLedger` actor (default: one started here)."""
    ray = require_ray()
    os.makedirs(plan.runs_dir, exist_ok=True)
    check_new_cells(plan, cells)
    write_state(plan)
    ledger = ledger if ledger is not None else start_ledger(lease_s)
    waiting, running = list(cells), dict[Any, SweepCell]()
    outcome = SweepOutcome()
    limit = budget or plan.budget
    while waiting or running:
        while waiting and len(running) < limit:
            cell = waiting.pop(0)
            if on_start is not None:
                on_start(cell)
            ref = submit(run_cell_task, cell, plan.runs_dir, plan.name, use_cache, ledger, lease_s)
            running[ref] = cell
        ready, _ = ray.wait(list(running), num_returns=1)
        cell = running.pop(ready[0])
        try:
            result, failure = fetch(ready[0])
        except RuntimeError as exc:  # ClusterError: the cell's attempts all died
            result, failure = None, str(exc)
        if failure is not None:
            outcome.failures[cell.cell_id] = failure
        elif result is not None:
            outcome.results.append(result)
        if on_done is not None:
            on_done(cell, result, failure)
    order = {c.cell_id: i for i, c in enumerate(cells)}
    outcome.results.sort(key=lambda r: order[r.cell_id])
    return outcome
