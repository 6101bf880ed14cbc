"""Disputed references: how items whose annotators disagree with the source are scored.

An annotated set that keeps a public source's labels as gold (``varm-open``) marks the items
where its annotators' reading of the codebook differs from the source in ``meta.disputed``:
``{"reading": {field: value, …}, "reason": …}``. The record itself keeps the source's value.
``--disputed`` chooses what scoring sees:

- ``keep`` (default): every item, scored against the source's gold record;
- ``drop``: items without a dispute only (the figures then cover fewer items: the table says n);
- ``reading``: every item, a disputed one scored against the annotators' reading (its
  ``reading`` fields replace the record's; the rationale is dropped: it argues for the gold).

References without ``meta.disputed`` are the same under every mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import ValidationError

from verimod.core.errors import InputError
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.schema import VarmReference

DisputedMode = Literal["keep", "drop", "reading"]
MODES: tuple[DisputedMode, ...] = ("keep", "drop", "reading")


def dispute_of(reference: VarmReference) -> dict[str, Any] | None:
    """The ``meta.disputed`` entry of a reference, or None."""
    disputed = (reference.meta or {}).get("disputed")
    return disputed if isinstance(disputed, dict) else None


def apply_disputes(references: Sequence[VarmReference], mode: DisputedMode, source: str) -> list[VarmReference]:
    """The references as ``mode`` scores them (see the module docstring). A malformed dispute
    (no ``reading`` mapping of record fields) is an :class:`InputError` naming the item."""
    if mode not in MODES:
        raise InputError.at("--disputed", None, None, f"must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "keep":
        return list(references)
    out: list[VarmReference] = []
    for reference in references:
        disputed = dispute_of(reference)
        if disputed is None:
            out.append(reference)
            continue
        if mode == "drop":
            continue
        reading = disputed.get("reading")
        if not isinstance(reading, dict) or not set(reading) <= set(FIELDS):
            raise InputError.at(source, None, "meta.disputed", f"item {reference.id}: reading must map record fields")
        try:
            out.append(VarmReference.model_validate({**reference.model_dump(), **reading, "cot": None}))
        except ValidationError as exc:
            message = f"item {reference.id}: reading {reading} is not a valid record ({exc.errors()[0]['msg']})"
            raise InputError.at(source, None, "meta.disputed", message) from None
    return out
