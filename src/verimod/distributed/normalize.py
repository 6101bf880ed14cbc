"""``verimod data normalize --ray``: the single-machine command's outputs, computed on a Ray cluster.

Normalising a record, and every filter but one, depends on that record alone; the duplicate
filter depends on the records before it (a record is a duplicate when an *earlier record that
passed every other filter* has the same normalised text; the first copy is kept). So:

1. Each shard is normalised by its own :class:`~verimod.data.normalize.Normalizer` with the
   duplicate filter off (the other filters, rules and counts are per record). For every record
   that passes, the shard sends (global index, line, text key, label) to the key partition
   ``int(key[:8]) mod K`` — all copies of a text meet in one partition.
2. Each key partition replays the duplicate filter
   (:meth:`~verimod.data.normalize.Normalizer.duplicate_verdict`) over its records in input
   order — the global state of exact-duplicate removal, kept per text key, so the verdicts
   (kept copy, detail, conflicts) are those of one Normalizer reading the whole file in order.
3. Each shard writes its kept records and its rejects (the duplicates' verdicts merged in at
   their places) as parts of the output folders; the reports are added in shard order (counts
   summed, names in order of first appearance) and the duplicates counted in.

The conflicts file (``--conflicts``) is small — only duplicates with another label than their
kept copy — and is written as one file by the driver from the records of those groups.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verimod.core.errors import InputError, Problem, one_line
from verimod.data.normalize import DuplicateConflict, NormalizeConfig, Normalizer, NormalizeReport
from verimod.data.normalize_filters import text_key
from verimod.data.records import Format, OnError
from verimod.distributed.cluster import fetch, returns, submit, submit_parts
from verimod.distributed.read import SHARD_BYTES, Rows, ShardedInput, read_sharded
from verimod.distributed.write import prepare_folder, write_part

Stage = Callable[[str], None]
#: One record's outcome: (line, output record, removal reason or None, detail).
Outcome = tuple[int, dict[str, Any], str | None, str]


@dataclass(frozen=True)
class ShardSummary:
    """What normalising a shard tells the driver: its report (duplicates not yet filtered) and
    the problem that stopped it (``missing`` text, a field clash; ``t2s`` when OpenCC is absent)."""

    report: NormalizeReport | None
    problem: Problem | None = None
    t2s_missing: str | None = None


@dataclass(frozen=True)
class Duplicates:
    """The duplicate verdicts of one shard: global indices and details."""

    index: Any
    detail: list[str]


@dataclass(frozen=True)
class NormalizeRun:
    """The report, the conflicts with the records they involve, and the input as read."""

    report: NormalizeReport
    conflicts: list[DuplicateConflict]
    kept: list[tuple[int, dict[str, Any]]]
    removed: list[dict[str, Any]]
    sharded: ShardedInput


def _normalize_shard(
    rows: Rows, offset: int, config: NormalizeConfig, text_field: str, source: str, label_field: str | None, keys: int
) -> Any:
    """Step 1: outcomes, summary, and the passing records' (index, line, key, label) per key
    partition."""
    first_pass = config.model_copy(update={"drop_duplicates": False})
    normalizer = Normalizer(first_pass, text_field, source, label_field)
    outcomes: list[Outcome] = []
    passed: list[tuple[int, int, bytes, Any]] = []
    try:
        for k, (line, row) in enumerate(rows):
            record, rejected = normalizer.process(row, line)
            if rejected is None:
                label = row.get(label_field) if label_field else None
                passed.append((offset + k, line, text_key(record[text_field]), label))
                outcomes.append((line, record, None, ""))
            else:
                outcomes.append((line, record, rejected.reason, rejected.detail))
        summary = ShardSummary(normalizer.report)
    except InputError as exc:
        summary = ShardSummary(None, exc.problem)
    except ImportError as exc:  # OpenCC missing on this node
        summary = ShardSummary(None, None, one_line(str(exc)))
    partitions: list[list[tuple[int, int, bytes, Any]]] = [[] for _ in range(keys)]
    for item in passed:
        partitions[int.from_bytes(item[2][:8], "little") % keys].append(item)
    return returns([outcomes, summary, *partitions])


def _duplicates(
    config: NormalizeConfig, text_field: str, source: str, label_field: str | None, offsets: list[int], *pieces: Any
) -> Any:
    """Step 2 for one key partition: the verdicts cut by shard, then the partition's counts."""
    normalizer = Normalizer(config, text_field, source, label_field)
    items = sorted((item for piece in pieces for item in piece), key=lambda item: item[0])
    index, detail = [], []
    for position, line, key, label in items:
        verdict = normalizer.duplicate_verdict(key, label, line)
        if verdict is not None:
            index.append(position)
            detail.append(verdict[1])
    found = np.array(index, dtype=np.int64)
    shard = np.searchsorted(np.asarray(offsets, dtype=np.int64), found, side="right") - 1
    cut = [
        Duplicates(found[shard == k], [d for d, s in zip(detail, shard.tolist(), strict=True) if s == k])
        for k in range(len(offsets))
    ]
    counts = (len(index), normalizer.report.duplicate_conflicts, normalizer.report.conflict_groups)
    return returns([*cut, (counts, normalizer.conflicts)])


def _write_shard(
    out: str | None,
    rejects: str | None,
    number: int,
    outcomes: list[Outcome],
    offset: int,
    conflict_lines: set[int],
    *found: Duplicates,
) -> tuple[list[tuple[int, dict[str, Any]]], list[dict[str, Any]]]:
    """Step 3: the shard's kept part and rejects part; returns the kept and removed records on
    ``conflict_lines`` (for the conflicts file)."""
    duplicate = {int(i) - offset: d for f in found for i, d in zip(f.index.tolist(), f.detail, strict=True)}
    kept, removed = [], []
    for k, (line, record, reason, detail) in enumerate(outcomes):
        if reason is None and k in duplicate:
            reason, detail = "duplicate", duplicate[k]
        if reason is None:
            kept.append((line, record))
        else:
            removed.append({"line": line, "reason": reason, "detail": detail, "record": record})
    if out is not None:
        write_part(out, number, (record for _, record in kept))
    if rejects is not None:
        write_part(rejects, number, removed)
    return [item for item in kept if item[0] in conflict_lines], [r for r in removed if r["line"] in conflict_lines]


def merge_reports(reports: list[NormalizeReport], config: NormalizeConfig, duplicates: int) -> NormalizeReport:
    """The shards' reports added in shard order, the duplicates counted in (module docstring)."""
    total = NormalizeReport(config=config)
    for report in reports:
        total.records_in += report.records_in
        total.records_out += report.records_out
        total.texts_changed += report.texts_changed
        for name in ("removed", "changed", "replaced", "left_alone", "spam_patterns"):
            into = getattr(total, name)
            for key, value in getattr(report, name).items():
                into[key] = into.get(key, 0) + value
    total.records_out -= duplicates
    total.removed["duplicate"] += duplicates
    return total


def normalize_on_ray(
    source: str | Path,
    out: Path,
    *,
    config: NormalizeConfig,
    text_field: str = "text",
    label_field: str | None = "label",
    rejects: Path | None = None,
    want_conflicts: bool = False,
    fmt: Format | None = None,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    shard_bytes: int = SHARD_BYTES,
    on_stage: Stage | None = None,
) -> NormalizeRun:
    """``verimod data normalize`` on the connected Ray cluster (module docstring)."""
    stage = on_stage or (lambda _: None)
    stage("read")
    sharded = read_sharded(source, fmt, encoding, on_error, shard_bytes)
    stage("normalize")
    name, shards = str(source), len(sharded.shards)
    first = [
        submit_parts(_normalize_shard, rows, offset, config, text_field, name, label_field, shards, parts=2 + shards)
        for rows, offset in zip(sharded.shards, sharded.offsets, strict=True)
    ]
    summaries: list[ShardSummary] = fetch([f[1] for f in first])
    for summary in summaries:
        if summary.t2s_missing is not None:
            raise InputError.at("--t2s", None, None, summary.t2s_missing)
        if summary.problem is not None:
            raise InputError(summary.problem)
    duplicates: list[list[Any]] = [[] for _ in range(shards)]
    conflicts: list[DuplicateConflict] = []
    counts = [0, 0, 0]
    if config.drop_duplicates:
        stage("duplicates")
        verdicts = [
            submit_parts(
                _duplicates,
                config,
                text_field,
                name,
                label_field,
                sharded.offsets,
                *(f[2 + p] for f in first),
                parts=shards + 1,
            )
            for p in range(shards)
        ]
        for verdict in verdicts:
            for k in range(shards):
                duplicates[k].append(verdict[k])
        for (found, conflicted, groups), listed in fetch([v[shards] for v in verdicts]):
            counts = [counts[0] + found, counts[1] + conflicted, counts[2] + groups]
            conflicts += listed
    conflicts.sort(key=lambda c: c.line)
    lines = {c.kept_line for c in conflicts} | {c.line for c in conflicts} if want_conflicts else set()
    stage("write")
    out_folder = str(prepare_folder(out))
    rejects_folder = str(prepare_folder(rejects)) if rejects is not None else None
    written = fetch(
        [
            submit(_write_shard, out_folder, rejects_folder, k, f[0], offset, lines, *duplicates[k])
            for k, (f, offset) in enumerate(zip(first, sharded.offsets, strict=True))
        ]
    )
    report = merge_reports([s.report for s in summaries if s.report is not None], config, counts[0])
    report.duplicate_conflicts, report.conflict_groups = counts[1], counts[2]
    report.check()
    report.complete = True
    kept = [item for k, _ in written for item in k]
    removed = [item for _, r in written for item in r]
    return NormalizeRun(report, conflicts, kept, removed, sharded)
