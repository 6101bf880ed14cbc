"""A Rich progress bar for model runs: done/total, samples/s, ETA, errors, cache hits."""

from __future__ import annotations

from types import TracebackType

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

from verimod.cli.common import err_console
from verimod.core.engine import Outcome


class RunProgress:
    """Context manager; call :meth:`advance` once per finished sample. Disabled when quiet."""

    def __init__(self, total: int, description: str, quiet: bool = False) -> None:
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            TextColumn("errors {task.fields[errors]}  cache {task.fields[hits]}"),
            console=err_console,
            disable=quiet,
            transient=False,
        )
        self._task = self._progress.add_task(description, total=total, errors=0, hits=0, rate="")
        self._errors = 0
        self._hits = 0

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._progress.stop()

    def advance(self, outcome: Outcome) -> None:
        """Count one finished sample."""
        self._errors += outcome.error is not None
        self._hits += outcome.cache_hit
        task = self._progress.tasks[0]
        speed = task.speed or 0.0
        self._progress.update(
            self._task, advance=1, errors=self._errors, hits=self._hits, rate=f"{speed:.1f} samples/s"
        )
