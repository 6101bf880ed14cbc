"""Run a sweep's cells on this machine, at most ``budget`` at a time.

Before any model is called, every cell that has not started is prepared once per distinct data
and prompt configuration (data read and checked, template, k-shot examples), so a bad file in
the last cell fails the sweep before the first cell runs. Then each cell runs in a worker thread
through :func:`verimod.sweep.cell.run_cell` — the same function a distributed runner calls — and
the engine spreads each cell's requests as ``verimod eval`` does. A cell that fails (a backend
that cannot load, a changed cell) is reported and the others go on; rerunning the sweep resumes
every unfinished cell. ``sweep.json`` in the runs folder lists the cells and their fingerprints.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from verimod.core.errors import InputError, MissingExtraError
from verimod.core.hashing import file_sha256
from verimod.core.runs import MANIFEST, RunStore, now
from verimod.data.jsonl import write_json
from verimod.sweep.cell import CellResult, SweepCell, run_cell
from verimod.sweep.spec import SweepPlan
from verimod.tasks.varm.evaluate import prepare_run

SWEEP_STATE = "sweep.json"
_DATA_AND_PROMPT = {"setting", "shots", "prompt_template", "data", "split", "train", "limit"}


@dataclass
class SweepOutcome:
    """What a sweep run did: results of the cells that finished, failures by cell id."""

    results: list[CellResult] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)


def select_cells(plan: SweepPlan, patterns: Sequence[str]) -> list[SweepCell]:
    """The cells whose id matches one of the glob ``patterns`` (all without patterns)."""
    if not patterns:
        return list(plan.cells)
    chosen = [c for c in plan.cells if any(fnmatch.fnmatchcase(c.cell_id, p) for p in patterns)]
    if not chosen:
        raise InputError.at("--only", None, None, f"no cell matches {', '.join(patterns)}")
    return chosen


def cell_state(plan: SweepPlan, cell: SweepCell) -> str:
    """``new``, ``done`` or ``partial d/n`` (finished samples of the cell's run)."""
    directory = Path(plan.runs_dir) / cell.cell_id
    if not (directory / MANIFEST).is_file():
        return "new"
    store = RunStore.open(directory, read_only=True)
    total = store.manifest.counts.total
    done = sum(1 for record in store.samples().values() if record.error is None)
    return "done" if done >= total and store.scores() is not None else f"partial {done}/{total}"


def check_new_cells(plan: SweepPlan, cells: Sequence[SweepCell]) -> None:
    """Prepare every distinct data and prompt configuration of the cells not yet started
    (raises :class:`InputError` on bad data, template or examples)."""
    seen: set[str] = set()
    for cell in cells:
        if (Path(plan.runs_dir) / cell.cell_id / MANIFEST).is_file():
            continue
        settings = cell.settings
        key = settings.model_dump_json(
            include={"setting", "shots", "prompt_template", "data", "split", "train", "limit"}
        )
        if key not in seen:
            seen.add(key)
            prepare_run(settings)


def write_state(plan: SweepPlan) -> None:
    """``sweep.json``: the sweep, its file's sha256 and its cells."""
    write_json(
        Path(plan.runs_dir) / SWEEP_STATE,
        {
            "name": plan.name,
            "file": plan.file,
            "file_sha256": file_sha256(plan.file),
            "updated_at": now(),
            "cells": [{"cell_id": c.cell_id, "fingerprint": c.fingerprint, "labels": c.labels} for c in plan.cells],
        },
    )


def attempt_cell(cell: SweepCell, runs_dir: str, sweep: str, use_cache: bool) -> tuple[CellResult | None, str | None]:
    """:func:`run_cell`, with a failure of the cell (bad data, a backend that cannot load, a
    changed cell) returned as one line instead of raised — what every runner reports."""
    try:
        return run_cell(cell, runs_dir, sweep, use_cache), None
    except (InputError, MissingExtraError, RuntimeError, OSError, ValueError) as exc:
        message = str(exc.problem) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
        return None, " ".join(message.split())


def run_sweep(
    plan: SweepPlan,
    cells: Sequence[SweepCell],
    *,
    budget: int | None = None,
    use_cache: bool = True,
    on_start: Callable[[SweepCell], None] | None = None,
    on_done: Callable[[SweepCell, CellResult | None, str | None], None] | None = None,
) -> SweepOutcome:
    """Run ``cells`` (module docstring); ``on_start`` / ``on_done`` are called from the workers."""
    Path(plan.runs_dir).mkdir(parents=True, exist_ok=True)
    check_new_cells(plan, cells)
    write_state(plan)
    outcome = SweepOutcome()

    def work(cell: SweepCell) -> tuple[CellResult | None, str | None]:
        if on_start is not None:
            on_start(cell)
        result, failure = attempt_cell(cell, plan.runs_dir, plan.name, use_cache)
        if on_done is not None:
            on_done(cell, result, failure)
        return result, failure

    with ThreadPoolExecutor(max_workers=budget or plan.budget, thread_name_prefix="verimod-cell") as pool:
        futures = {pool.submit(work, cell): cell for cell in cells}
        for future in as_completed(futures):
            result, failure = future.result()
            if failure is not None:
                outcome.failures[futures[future].cell_id] = failure
            elif result is not None:
                outcome.results.append(result)
    order = {c.cell_id: i for i, c in enumerate(cells)}
    outcome.results.sort(key=lambda r: order[r.cell_id])
    return outcome
