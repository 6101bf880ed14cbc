"""The VARM reference sets bundled with verimod, usable by name wherever a reference source is read.

- ``varm-open``: the open reference set — real COLD / SWSR comments with complete records and
  anchored rationales, the sources' labels kept as gold (``resources/varm_open/DATA_CARD.md``);
  splits train, dev, test.
- ``starter``: the hand-written teaching / k-shot / demo set written by the verimod developers;
  splits train, dev, test.

``--data varm-open`` (or ``starter``) reads the bundled file — unless a file or folder of that
name exists in the working directory, which then wins (as a path always does).
:data:`DEFAULT_DATA` / :data:`DEFAULT_SPLIT` are what ``verimod eval`` evaluates with no ``--data``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from verimod.resources import resource_path
from verimod.tasks.varm.schema import VarmReference

#: Bundled set name → resource file.
BUNDLED: Final = {"varm-open": "varm_open/varm_open.jsonl", "starter": "varm_starter.jsonl"}
DEFAULT_DATA: Final = "varm-open"
DEFAULT_SPLIT: Final = "test"
SPLITS: Final = ("train", "dev", "test")


def bundled_path(source: str | Path) -> Path | None:
    """The file of a bundled set named by ``source``, or None when ``source`` names none (or names
    an existing path, which wins)."""
    name = str(source)
    if name not in BUNDLED or Path(name).exists():
        return None
    return resource_path(BUNDLED[name])


def resolve_source(source: str | Path) -> str | Path:
    """``source`` with a bundled set name replaced by its file (other sources unchanged)."""
    path = bundled_path(source)
    return source if path is None else path


def load_bundled(name: str, split: str | None = None) -> list[VarmReference]:
    """All records of a bundled set, or those of one split (``train``, ``dev`` or ``test``)."""
    from verimod.tasks.varm.io import load_references  # io resolves names through this module

    if name not in BUNDLED:
        raise ValueError(f"unknown bundled set {name!r}: choose one of {', '.join(BUNDLED)}")
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)}")
    return [r for r in load_references(name) if split is None or r.split == split]
