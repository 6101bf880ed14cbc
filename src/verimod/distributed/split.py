"""``verimod data split --ray``: the single-machine split, computed on a Ray cluster.

The near-duplicate components come from the distributed join (:mod:`.join`, merged exactly by
:mod:`.components`); the placement is :func:`verimod.data.split.assign_splits` itself, fed the
same components (same order) and strata, so the same seed gives the same split. The placement
is one sequential, seeded pass over all records (a shuffle of the components, then of each
stratum's singletons): it runs in one task, which holds one stratum reference per record and
the components (integers) — not the texts or the records. The records are written, with their
split, as parts by the nodes that hold them (``--out`` and every ``--out-dir`` split a folder
of parts).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verimod.data.records import Format, OnError
from verimod.data.split import SplitReport, Stratum, assign_splits, strata_of
from verimod.distributed.cluster import fetch, returns, submit, submit_parts
from verimod.distributed.components import TextComponents, copies, text_components, unique_pairs
from verimod.distributed.dedup import Stage, read_texts
from verimod.distributed.join import JoinOutput, JoinSettings, distributed_join
from verimod.distributed.read import SHARD_BYTES, Rows, ShardedInput, read_sharded
from verimod.distributed.write import prepare_folder, write_part


@dataclass(frozen=True)
class SplitRun:
    """The report, the input as read, how the join was cut and its wall time (s)."""

    report: SplitReport
    sharded: ShardedInput
    join: JoinOutput
    seconds: float


def _shard_strata(rows: Rows, fields: list[str]) -> tuple[list[Stratum], Any]:
    """The shard's distinct strata and each record's stratum id."""
    table: dict[Stratum, int] = {}
    ids = [table.setdefault(s, len(table)) for s in strata_of([row for _, row in rows], fields)]
    return list(table), np.array(ids, dtype=np.int64)


def _components(texts: int, bands: int, *refs: Any) -> TextComponents:
    held, lengths = copies(refs[:bands])
    return text_components(held, unique_pairs(refs[bands:], len(lengths)), texts)


def _place(
    counts: list[int],
    names: list[str],
    seed: int,
    threshold: float,
    tolerance_pp: float,
    fields: list[str],
    offsets: list[int],
    found: TextComponents,
    *strata: tuple[list[Stratum], Any],
) -> Any:
    """The placement (module docstring): the report, then each shard's split numbers."""
    interned: dict[Stratum, Stratum] = {}
    every: list[Stratum] = []
    for table, ids in strata:
        shared = [interned.setdefault(s, s) for s in table]
        every += [shared[i] for i in ids.tolist()]
    assigned, report = assign_splits(found.lists(), every, counts, names, seed, threshold, tolerance_pp, fields)
    number = {name: k for k, name in enumerate(names)}
    splits = np.array([number[a] for a in assigned], dtype=np.int16)
    bounds = [*offsets, len(splits)]
    return returns([report, *(splits[a:b] for a, b in itertools.pairwise(bounds))])


def _write_split(
    out: str | None, folders: list[str] | None, names: list[str], number: int, rows: Rows, splits: Any
) -> int:
    records = [{**row, "split": names[s]} for (_, row), s in zip(rows, splits.tolist(), strict=True)]
    if out is not None:
        write_part(out, number, records)
    if folders is not None:
        for name, folder in zip(names, folders, strict=True):
            write_part(folder, number, (r for r in records if r["split"] == name))
    return len(records)


def split_on_ray(
    source: str | Path,
    *,
    names: Sequence[str],
    stratify: Sequence[str],
    seed: int,
    threshold: float,
    tolerance_pp: float,
    text_field: str = "text",
    out: Path | None = None,
    out_dir: Path | None = None,
    fmt: Format | None = None,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    shard_bytes: int = SHARD_BYTES,
    settings: JoinSettings | None = None,
    counts_for: Callable[[int], list[int]],
    on_stage: Stage | None = None,
) -> SplitRun:
    """``verimod data split`` on the connected Ray cluster (module docstring). ``counts_for``
    turns the number of records into the split sizes as counts (``verimod.data.split.resolve_sizes``
    with the sizes given), raising for sizes that do not fit."""
    stage = on_stage or (lambda _: None)
    stage("read")
    sharded = read_sharded(source, fmt, encoding, on_error, shard_bytes)
    texts, histograms = read_texts(sharded, text_field)
    resolved = counts_for(sharded.n)
    started = time.perf_counter()
    fields = list(stratify)
    strata = [submit(_shard_strata, rows, fields) for rows in sharded.shards]
    stage("join")
    join = distributed_join(texts, sharded.offsets, histograms, settings or JoinSettings(threshold))
    stage("place")
    bands = len(join.band_index)
    found = submit(_components, sharded.n, bands, *join.band_index, *join.pairs)
    placed = submit_parts(
        _place, resolved, list(names), seed, threshold, tolerance_pp, fields, sharded.offsets, found, *strata,
        parts=1 + len(sharded.shards),
    )  # fmt: skip
    report: SplitReport = fetch(placed[0])
    stage("write")
    out_folder = str(prepare_folder(out)) if out is not None else None
    folders = [str(prepare_folder(out_dir / name)) for name in names] if out_dir is not None else None
    fetch(
        [
            submit(_write_split, out_folder, folders, list(names), k, rows, splits)
            for k, (rows, splits) in enumerate(zip(sharded.shards, placed[1:], strict=True))
        ]
    )
    return SplitRun(report, sharded, join, time.perf_counter() - started)
