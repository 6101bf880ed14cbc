"""One sweep cell = one normal, resumable ``verimod eval`` run directory.

:func:`run_cell` is a plain function of plain data (a :class:`SweepCell` and a folder): it is
what the local runner calls in its threads and what a distributed runner (one Ray task per
cell) calls on any node that sees the runs folder. It is idempotent:

- no directory ``<runs_root>/<cell_id>`` yet: the run is prepared (data, prompt, examples),
  created under that name — its manifest's ``provenance`` records the sweep, the cell and the
  cell's fingerprint — and run;
- a directory: the run is resumed as ``verimod eval --resume`` resumes it — only samples
  without a successful stored answer are sent, so a cell killed at any moment (its process, its
  node) loses at most the samples in flight — after checking that the cell's fingerprint is the
  one the run started with (a changed sweep file is refused, naming the cell);
- a finished run with nothing outstanding is only re-scored.

The fingerprint is the sha256 of the cell's settings without the transport options (server
URLs, key variable, concurrency, timeouts, retries), which may change between attempts as they
may for ``eval --resume``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from verimod.core.cache import ResponseCache
from verimod.core.errors import InputError
from verimod.core.registry import UnknownNameError
from verimod.core.runs import MANIFEST, RunStore
from verimod.models.base import BackendError, ModelBackend
from verimod.models.registry import create_backend
from verimod.tasks.varm.evaluate import EvalSettings, execute, prepare_run, resume_run, score_run, start_run

_TRANSPORT_OPTIONS = ("base_urls", "api_key_env", "request_timeout_s")


class SweepCell(BaseModel):
    """One cell of a sweep: its id (the run directory's name), the settings of its ``verimod
    eval`` run and the labels of its axes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell_id: str
    settings: EvalSettings
    labels: dict[str, str]

    @property
    def fingerprint(self) -> str:
        """sha256 of the settings that decide the answers (module docstring)."""
        data = self.settings.model_dump(mode="json", exclude={"engine": True})
        for option in _TRANSPORT_OPTIONS:
            data["backend_options"].pop(option, None)
        return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class CellResult(BaseModel):
    """How a cell ended."""

    model_config = ConfigDict(extra="forbid")

    cell_id: str
    directory: str
    status: str
    action: str  # "started" | "resumed" | "complete"
    requested: int
    seconds: float
    scores: dict[str, Any]


def _backend(settings: EvalSettings) -> ModelBackend:
    try:
        return create_backend(settings.model, settings.backend_options)
    except (UnknownNameError, BackendError, ImportError) as exc:
        raise InputError.at(settings.model, None, "model", " ".join(str(exc).split())) from None


def _reopen(cell: SweepCell, directory: Path, sweep: str) -> None:
    """Check that the cell's run was started by this cell, and write the cell's transport
    options into its manifest (they may change between attempts, as for eval --resume)."""
    store = RunStore.open(directory)
    try:
        provenance = store.manifest.provenance or {}
        if provenance.get("cell_sha256") != cell.fingerprint:
            raise InputError.at(
                str(directory),
                None,
                "cell",
                f"cell {cell.cell_id!r} of sweep {sweep!r} changed since its run started; "
                "restore the sweep file, or move this run directory away to start the cell again",
            )
        store.manifest.engine = cell.settings.engine.model_dump()
        store.manifest.backend_options = cell.settings.backend_options.model_dump()
        store.save_manifest()
    finally:
        store.release()


def run_cell(cell: SweepCell, runs_root: str | Path, sweep: str = "", use_cache: bool = True) -> CellResult:
    """Start, resume or re-score the cell's run directory (module docstring); return its scores.
    The run's lock is held only while the cell runs."""
    began = time.monotonic()
    root = Path(runs_root)
    directory = root / cell.cell_id
    if directory.is_dir() and not (directory / MANIFEST).is_file():
        shutil.rmtree(directory)  # killed while being created: nothing was answered in it yet
    backend: ModelBackend | None = None
    if directory.is_dir():
        _reopen(cell, directory, sweep)
        store, requests, template = resume_run(directory)
        action = "resumed" if requests else "complete"
    else:
        prepared = prepare_run(cell.settings)
        provenance = {"source": "verimod sweep", "sweep": sweep, "cell": cell.cell_id, "cell_sha256": cell.fingerprint}
        backend = _backend(cell.settings)
        store = start_run(cell.settings, prepared, backend, root, run_id=cell.cell_id, provenance=provenance)
        requests, template, action = prepared.requests, prepared.template, "started"
    try:  # the run's lock is freed when the cell ends: a Ray worker process outlives its cells
        if requests:
            asyncio.run(_send(store, backend or _backend(cell.settings), requests, template, use_cache))
        elif backend is not None:
            asyncio.run(backend.aclose())
        scores, _ = score_run(store)
    finally:
        store.release()
    return CellResult(
        cell_id=cell.cell_id,
        directory=str(directory),
        status=store.manifest.status,
        action=action,
        requested=len(requests),
        seconds=time.monotonic() - began,
        scores=scores.model_dump(),
    )


async def _send(store: RunStore, backend: ModelBackend, requests: Any, template: Any, use_cache: bool) -> None:
    cache = ResponseCache() if use_cache else None
    try:
        await execute(store, backend, requests, template, cache)
    finally:
        await backend.aclose()
        if cache is not None:
            cache.close()
