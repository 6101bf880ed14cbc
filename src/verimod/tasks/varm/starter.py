"""The bundled VARM starter set: hand-written synthetic Chinese records for demos and tests.

It is *not* VARM-Bench and not a substitute for it: a small set written by the verimod
developers (not copied or translated from any data set) that covers every field value, every
harmful category and the hard non-harmful phenomena (quotation, opposition, neutral identity
mentions, behaviour criticism, personal accounts, sarcasm, homophones).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from verimod.resources import resource_path
from verimod.tasks.varm.io import load_references
from verimod.tasks.varm.schema import VarmReference

STARTER_RESOURCE: Final = "varm_starter.jsonl"
SPLITS: Final = ("train", "dev", "test")


def starter_path() -> Path:
    """Filesystem path of the bundled starter JSONL file."""
    return resource_path(STARTER_RESOURCE)


def load_starter(split: str | None = None) -> list[VarmReference]:
    """All starter records, or those of one split (``train``, ``dev`` or ``test``)."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)}")
    records = load_references(starter_path())
    return [r for r in records if split is None or r.split == split]
