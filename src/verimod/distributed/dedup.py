"""``verimod data dedup --ray``: the single-machine command's results, computed on a Ray cluster.

The input is read in shards (:mod:`.read`), the texts joined by :mod:`.join`, the join merged by
:mod:`.components`, and the outputs written in shards (:mod:`.write`) by the nodes that hold
the records: ``--out`` and ``--pairs`` name folders of parts whose concatenation is the
single-machine file byte for byte. The report has the single-machine keys and values, except
``seconds`` (this run's wall time from the texts read to the outputs written) and ``compared``
(pairs RapidFuzz compared: a pair generated in several buckets is compared in each).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verimod.cli.data_options import texts_of
from verimod.core.errors import InputError, Problem
from verimod.data.neardup import DedupReport
from verimod.data.records import Format, OnError
from verimod.distributed.cluster import fetch, returns, submit, submit_parts
from verimod.distributed.components import (
    MergeSummary,
    copies,
    dropped_texts,
    pair_count,
    split_by_shard,
    text_components,
    text_pairs,
    unique_pairs,
)
from verimod.distributed.join import JoinOutput, JoinSettings, distributed_join, text_lengths
from verimod.distributed.read import SHARD_BYTES, Rows, ShardedInput, read_sharded
from verimod.distributed.write import prepare_folder, write_part

Stage = Callable[[str], None]


@dataclass(frozen=True)
class DedupRun:
    """What ``dedup --ray`` did: the report, the input as read, and how the join was cut."""

    report: DedupReport
    sharded: ShardedInput
    join: JoinOutput


def shard_texts(rows: Rows, path: str, field: str) -> tuple[list[str], Any, Problem | None]:
    """The texts of one shard, their length histogram, and the first record without a string
    text (as the single-machine ``texts_of`` reports it)."""
    try:
        texts = texts_of(Path(path), rows, field)
    except InputError as exc:
        return [], np.zeros(1, dtype=np.int64), exc.problem
    return texts, text_lengths(texts), None


def read_texts(sharded: ShardedInput, field: str) -> tuple[list[Any], list[Any]]:
    """Submit :func:`shard_texts` for every shard; raise the first missing text in file order.
    Returns the ObjectRefs of the texts and the histograms (fetched)."""
    refs = [submit_parts(shard_texts, rows, sharded.path, field, parts=3) for rows in sharded.shards]
    for problem in fetch([ref[2] for ref in refs]):
        if problem is not None:
            raise InputError(problem)
    return [ref[0] for ref in refs], fetch([ref[1] for ref in refs])


def _merge(rule: str, texts: int, offsets: list[int], want_pairs: bool, bands: int, *refs: Any) -> Any:
    """One task: summary, the dropped texts per shard, and (``want_pairs``) the text pairs cut
    by the shard of their second text."""
    held, lengths = copies(refs[:bands])
    pairs = unique_pairs(refs[bands:], len(lengths))
    found = text_components(held, pairs, texts)
    text_length = np.empty(texts, dtype=np.int64)
    text_length[held.index] = np.repeat(lengths, held.size)
    dropped = dropped_texts(found, text_length, rule)
    out: list[Any] = [MergeSummary(pair_count(held, pairs), found.count, len(dropped))]
    out += [part[0] for part in split_by_shard([dropped], dropped, offsets)]
    if want_pairs:
        i, j, score = text_pairs(held, pairs)
        out += split_by_shard([i, j, score], j, offsets)
    return returns(out)


def _write_kept(folder: str, number: int, rows: Rows, offset: int, dropped: Any) -> int:
    drop = set((dropped - offset).tolist())
    return write_part(folder, number, (row for k, (_, row) in enumerate(rows) if k not in drop))


def _attach_right(rows: Rows, offset: int, offsets: list[int], pairs: tuple[Any, Any, Any]) -> Any:
    """For the pairs (i, j, score) whose second text j is in this shard: j's line and id, the
    pairs then cut by the shard of their first text."""
    i, j, score = pairs
    local = (j - offset).tolist()
    lines = np.array([rows[k][0] for k in local], dtype=np.int64)
    ids = np.empty(len(local), dtype=object)
    ids[:] = [rows[k][1].get("id") for k in local]
    return returns(split_by_shard([i, j, score, lines, ids], i, offsets))


def _write_pairs(folder: str, number: int, rows: Rows, offset: int, *parts: tuple[Any, ...]) -> int:
    """The pairs whose first text is in this shard, sorted by (i, j), as ``dedup --pairs`` rows."""
    i, j, score, lines, ids = (np.concatenate(column) for column in zip(*parts, strict=True))
    order = np.lexsort((j, i))
    return write_part(
        folder,
        number,
        (
            {
                "line_a": rows[a - offset][0],
                "line_b": line,
                "id_a": rows[a - offset][1].get("id"),
                "id_b": other,
                "score": s,
            }
            for a, line, other, s in zip(
                i[order].tolist(), lines[order].tolist(), ids[order].tolist(), score[order].tolist(), strict=True
            )
        ),
    )


def write_pairs(folder: Path, sharded: ShardedInput, by_second: Sequence[Any]) -> list[Any]:
    """Submit the two steps that write the pairs' parts (their ObjectRefs, to fetch)."""
    shards = len(sharded.shards)
    attached = [
        submit_parts(_attach_right, rows, offset, sharded.offsets, part, parts=shards)
        for rows, offset, part in zip(sharded.shards, sharded.offsets, by_second, strict=True)
    ]
    return [
        submit(_write_pairs, str(folder), k, rows, offset, *(a[k] for a in attached))
        for k, (rows, offset) in enumerate(zip(sharded.shards, sharded.offsets, strict=True))
    ]


def dedup_on_ray(
    source: str | Path,
    *,
    threshold: float,
    text_field: str = "text",
    rule: str = "first",
    out: Path | None = None,
    pairs_out: Path | None = None,
    fmt: Format | None = None,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    shard_bytes: int = SHARD_BYTES,
    settings: JoinSettings | None = None,
    on_stage: Stage | None = None,
) -> DedupRun:
    """``verimod data dedup`` on the connected Ray cluster (module docstring)."""
    stage = on_stage or (lambda _: None)
    stage("read")
    sharded = read_sharded(source, fmt, encoding, on_error, shard_bytes)
    texts, histograms = read_texts(sharded, text_field)
    started = time.perf_counter()
    stage("join")
    join = distributed_join(texts, sharded.offsets, histograms, settings or JoinSettings(threshold))
    stage("merge")
    shards = len(sharded.shards)
    bands = len(join.band_index)
    merged = submit_parts(
        _merge,
        rule,
        sharded.n,
        sharded.offsets,
        pairs_out is not None,
        bands,
        *join.band_index,
        *join.pairs,
        parts=1 + shards + (shards if pairs_out is not None else 0),
    )
    summary: MergeSummary = fetch(merged[0])
    stage("write")
    writes: list[Any] = []
    if out is not None:
        folder = prepare_folder(out)
        writes += [
            submit(_write_kept, str(folder), k, rows, offset, dropped)
            for k, (rows, offset, dropped) in enumerate(
                zip(sharded.shards, sharded.offsets, merged[1 : 1 + shards], strict=True)
            )
        ]
    if pairs_out is not None:
        writes += write_pairs(prepare_folder(pairs_out), sharded, merged[1 + shards :])
    fetch(writes)
    report = DedupReport(
        texts=sharded.n,
        distinct=join.shape.distinct,
        pairs=summary.pairs,
        components=summary.components,
        dropped=summary.dropped,
        candidates=join.candidates,
        compared=join.compared,
        threshold=join.shape.threshold,
        rule=rule,
        seconds=time.perf_counter() - started,
    )
    return DedupRun(report, sharded, join)
