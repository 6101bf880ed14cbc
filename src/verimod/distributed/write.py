"""Output in shards: a folder of JSON Lines parts, one per input shard, written by the nodes.

``FOLDER/part-00000.jsonl``, ``part-00001.jsonl`` … in input order: concatenated in name order
(``cat FOLDER/part-*.jsonl``) they are byte for byte the file the single-machine command writes.
Each part is written atomically (temporary file, rename), so a task that is retried after its
node died rewrites its part whole; an empty shard leaves an empty part. Before a command writes,
the parts of an earlier run in the folder are removed (other files are left alone), so no stale
part joins the concatenation.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from verimod.data.jsonl import write_jsonl

PART = "part-{:05d}.jsonl"


def prepare_folder(folder: str | Path) -> Path:
    """Create ``folder`` (absolute) and remove the parts an earlier run left in it."""
    path = Path(folder).resolve()
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("part-*.jsonl"):
        old.unlink()
    return path


def write_part(folder: str | Path, number: int, rows: Iterable[Any]) -> int:
    """Write part ``number`` of ``folder``; return the number of rows written."""
    return write_jsonl(Path(folder) / PART.format(number), rows)


def parts(folder: str | Path) -> list[Path]:
    """The parts of ``folder`` in order."""
    return sorted(Path(folder).glob("part-*.jsonl"))
