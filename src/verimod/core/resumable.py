"""Append-only JSONL outputs that a command can resume: one line per finished request.

:class:`AppendLog` appends and flushes each line as it arrives, so a killed process loses at
most what was in flight. :func:`finished_keys` reads such a file back before a new start:
a torn last line (the process died mid-write) is cut off, and the keys of the lines that hold
an answer — no ``error`` — are returned, so only the rest is asked again (failed requests
are retried).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from verimod.data.jsonl import dumps_line, read_jsonl


class AppendLog:
    """Append-only JSONL output, flushed per line; use as a context manager or call close()."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(path, "ab")  # noqa: SIM115 - closed in close()

    def write(self, row: dict[str, Any]) -> None:
        """Append one row as a JSON line and flush it."""
        self._handle.write(dumps_line(row))
        self._handle.flush()

    def close(self) -> None:
        """Close the file."""
        self._handle.close()

    def __enter__(self) -> AppendLog:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def finished_keys(path: str | Path, key: Callable[[dict[str, Any]], str]) -> set[str]:
    """Keys of the lines of ``path`` that hold an answer (no ``error``); a torn last line is removed."""
    path = Path(path)
    if not path.exists():
        return set()
    text = path.read_bytes()
    if text and not text.endswith(b"\n"):
        path.write_bytes(text[: text.rfind(b"\n") + 1])
    return {key(row) for _line, row in read_jsonl(path) if not row.get("error")}
