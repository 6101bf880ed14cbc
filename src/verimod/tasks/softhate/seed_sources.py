"""Chinese (and any tabular) seed sources of SoftHateBench, read through verimod's data adapters.

``cold`` (:func:`verimod.data.adapters.cold.convert_cold`), ``swsr``
(:func:`verimod.data.adapters.swsr.convert_swsr`) and ``generic`` (any CSV / JSON / Parquet
file through a column map, :func:`verimod.data.adapters.generic.convert_generic`) give
:class:`~verimod.tasks.varm.schema.VarmReference` s; each becomes a
:class:`~verimod.tasks.softhate.seeds.SeedItem`:

- **label**: ``harmful`` → ``hate``, ``non_harmful`` → ``non_hate`` (COLD's offensive label,
  SWSR's sexist label, the mapped label of a generic file); a reference without a label is
  skipped (``no label``);
- **attacks on an individual** (COLD test file fine-grained 1, SWSR target ``I``, a generic
  ``target_type`` of ``single``): hate speech targets groups, so these harmful items follow
  ``individual``: ``drop`` (default; counted as ``attack on an individual``), ``hate`` or
  ``non_hate``;
- **group**: the reference's ``target`` when the source names one (a generic file with a
  ``target`` column), else None — COLD and SWSR name no target (the LLM extraction of
  ``softhate standpoints`` finds it);
- **original**: the adapter's ``meta.original`` (COLD's topic, SWSR's category …), the
  reference's split, target type and category, unchanged.

Counts keep the seed contract: ``converted + Σ skipped == read``, where ``read`` is the
adapter's candidate records and ``skipped`` adds the adapter's own reasons. Invalid rows fail
(``on_error="fail"``) or are counted (``"skip"``) with file, line and field, as the adapter
reports them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

from verimod.data.adapters.base import ConversionResult
from verimod.data.adapters.cold import convert_cold
from verimod.data.adapters.generic import convert_generic
from verimod.data.adapters.swsr import convert_swsr
from verimod.data.records import OnError
from verimod.tasks.softhate.seeds import SeedItem, SeedLabel, SeedRead
from verimod.tasks.varm.schema import VarmReference

AdapterSource = Literal["cold", "swsr", "generic"]
ADAPTER_SOURCES: Final[tuple[str, ...]] = ("cold", "swsr", "generic")
IndividualPolicy = Literal["drop", "hate", "non_hate"]
INDIVIDUAL_DROPPED: Final = "attack on an individual"
_LABELS: Final[dict[str, SeedLabel]] = {"harmful": "hate", "non_harmful": "non_hate"}


def _convert(
    path: str | Path,
    source: AdapterSource,
    column_map: str | Sequence[str] | None,
    encoding: str | None,
    on_error: OnError,
) -> ConversionResult:
    if source == "cold":
        return convert_cold(path, encoding=encoding, on_error=on_error, derive_category=False)
    if source == "swsr":
        return convert_swsr(path, encoding=encoding, on_error=on_error)
    if source == "generic":
        return convert_generic(path, column_map=column_map, encoding=encoding, on_error=on_error)
    raise ValueError(f"unknown adapter seed source {source!r}; choose from {', '.join(ADAPTER_SOURCES)}")


def seed_from_reference(reference: VarmReference, source: str, individual: IndividualPolicy = "drop") -> SeedItem | str:
    """The seed of one reference, or the reason it is skipped (module docstring)."""
    if reference.label is None:
        return "no label"
    label = _LABELS[reference.label]
    if label == "hate" and reference.target_type == "single":
        if individual == "drop":
            return INDIVIDUAL_DROPPED
        label = individual
    meta = reference.meta or {}
    original: dict[str, Any] = dict(meta.get("original") or {})
    original |= {"split": reference.split, "target_type": reference.target_type, "category": reference.category}
    group = reference.target if reference.target and reference.target != "no_clear_target" else None
    return SeedItem(reference.id, reference.text, label, source, group, original)


def read_adapter_seeds(
    path: str | Path,
    source: AdapterSource,
    *,
    individual: IndividualPolicy = "drop",
    column_map: str | Sequence[str] | None = None,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
) -> SeedRead:
    """Read one file of a Chinese or generic seed source (module docstring)."""
    if individual not in ("drop", "hate", "non_hate"):
        raise ValueError(f"individual must be drop, hate or non_hate, got {individual!r}")
    result = _convert(path, source, column_map, encoding, on_error)
    read = SeedRead(source, str(path), read=result.candidates, skipped=Counter(result.skipped))
    read.problems.extend(result.problems)
    for reference in result.references:
        item = seed_from_reference(reference, source, individual)
        if isinstance(item, str):
            read.skipped[item] += 1
        else:
            read.items.append(item)
    return read
