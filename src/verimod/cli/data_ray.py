"""``--ray ADDRESS`` for ``verimod data normalize | dedup | split``: the options and the glue.

With ``--ray`` a command connects to the Ray cluster (:mod:`verimod.distributed.cluster`),
checks that every node runs this verimod and sees the input and output paths, runs the
distributed pipeline (:mod:`verimod.distributed`) and prints and writes what the single-machine
command prints and writes — except that every record output (``--out``, ``--pairs``,
``--rejects``, ``--out-dir``'s splits) is a folder of JSON Lines parts whose concatenation is the
single-machine file. Without Ray installed, ``--ray`` is a one-line error (exit code 2); a job
that fails on the cluster after Ray's retries is a one-line error with exit code 1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from verimod.cli.common import err_console
from verimod.cli.data_options import echo_skipped
from verimod.core.errors import one_line
from verimod.data.normalize_config import NormalizeConfig
from verimod.data.records import Format, OnError
from verimod.distributed.cluster import ClusterError, check_nodes, ray_session

if TYPE_CHECKING:
    from verimod.distributed.dedup import DedupRun
    from verimod.distributed.normalize import NormalizeRun
    from verimod.distributed.read import ShardedInput
    from verimod.distributed.split import SplitRun

T = TypeVar("T")

RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="Run on a Ray cluster (the ray extra): auto, HOST:PORT, ray://HOST:10001, or local; "
        "record outputs become folders of JSONL parts (same bytes once concatenated).",
        rich_help_panel="Ray",
    ),
]
ShardMbOpt = Annotated[
    float,
    typer.Option(
        "--shard-mb", min=0.001, help="With --ray: input shard size (MB of JSONL or Parquet).", rich_help_panel="Ray"
    ),
]
DEFAULT_SHARD_MB = 32.0


@contextmanager
def cluster_errors_exit() -> Iterator[None]:
    """A job that failed on the cluster: one line on stderr, exit code 1."""
    try:
        yield
    except ClusterError as exc:
        typer.echo(f"error: {one_line(str(exc), 1000)}", err=True)
        raise typer.Exit(1) from None


@dataclass(frozen=True)
class RayJob:
    """The options every ``data`` command passes to the cluster: where, what and how to read."""

    address: str
    source: Path
    fmt: Format | None
    encoding: str
    on_error: OnError
    shard_mb: float
    quiet: bool

    def reading(self) -> dict[str, Any]:
        """The reading keywords of the distributed pipelines."""
        return {
            "fmt": self.fmt,
            "encoding": self.encoding,
            "on_error": self.on_error,
            "shard_bytes": max(1, int(self.shard_mb * (1 << 20))),
            "on_stage": self._stage,
        }

    def _stage(self, name: str) -> None:
        if not self.quiet:
            err_console.print(f"ray: {name} …", highlight=False)

    def run(self, folders: Sequence[Path | None], job: Callable[[], T], sharded_of: Callable[[T], ShardedInput]) -> T:
        """Connect, check that every node sees the source and the output ``folders``, run
        ``job()``; report the skipped records as the single-machine reader does. Call inside
        ``bad_input_exits()``."""
        with cluster_errors_exit(), ray_session(self.address):
            check_nodes([self.source] if self.source.exists() else [], [f for f in folders if f is not None])
            result = job()
        sharded = sharded_of(result)
        echo_skipped(self.source, sharded.skipped, sharded.skipped_lines)
        return result


def normalize(
    job: RayJob,
    out: Path,
    config: NormalizeConfig,
    text_field: str,
    label_field: str | None,
    rejects: Path | None,
    want_conflicts: bool,
) -> NormalizeRun:
    """``data normalize --ray``."""
    from verimod.distributed.normalize import normalize_on_ray

    def work() -> NormalizeRun:
        return normalize_on_ray(
            job.source,
            out,
            config=config,
            text_field=text_field,
            label_field=label_field,
            rejects=rejects,
            want_conflicts=want_conflicts,
            **job.reading(),
        )

    return job.run([out, rejects], work, lambda run: run.sharded)


def dedup(
    job: RayJob,
    threshold: float,
    text_field: str,
    rule: str,
    out: Path | None,
    pairs_out: Path | None,
    workers: int,
) -> DedupRun:
    """``data dedup --ray`` (``workers``: RapidFuzz threads and CPUs of each join task)."""
    from verimod.distributed.dedup import dedup_on_ray
    from verimod.distributed.join import JoinSettings

    def work() -> DedupRun:
        return dedup_on_ray(
            job.source,
            threshold=threshold,
            text_field=text_field,
            rule=rule,
            out=out,
            pairs_out=pairs_out,
            settings=JoinSettings(threshold, workers=max(workers, 1)),
            **job.reading(),
        )

    return job.run([out, pairs_out], work, lambda run: run.sharded)


def split(
    job: RayJob,
    names: list[str],
    fields: list[str],
    seed: int,
    threshold: float,
    tolerance: float,
    text_field: str,
    out: Path | None,
    out_dir: Path | None,
    counts_for: Callable[[int], list[int]],
) -> SplitRun:
    """``data split --ray`` (``counts_for``: the split sizes as counts for the number of records)."""
    from verimod.distributed.join import JoinSettings
    from verimod.distributed.split import split_on_ray

    def work() -> SplitRun:
        return split_on_ray(
            job.source,
            names=names,
            stratify=fields,
            seed=seed,
            threshold=threshold,
            tolerance_pp=tolerance,
            text_field=text_field,
            out=out,
            out_dir=out_dir,
            settings=JoinSettings(threshold),
            counts_for=counts_for,
            **job.reading(),
        )

    return job.run([out, out_dir], work, lambda run: run.sharded)
