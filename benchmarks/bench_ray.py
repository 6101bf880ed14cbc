"""``verimod data dedup --ray`` on a local Ray cluster against the single-process command (issue #24).

    nice -n 10 python benchmarks/bench_ray.py --sizes 1000000,3000000 --nodes 2
    nice -n 10 python benchmarks/bench_ray.py --sizes 10000000 --nodes 2 --object-store-mb 2048

For each size n: a seeded synthetic corpus (``verimod.distributed.synthetic``: 3,000 CJK
characters with Zipf-like frequencies, log-normal lengths with median 28, 30 % of the texts
variants of an earlier one — a copy or one or two edits) is written as JSON Lines (not timed).
Then, one after the other:

- **single**: ``verimod data dedup CORPUS --out kept.jsonl --report r.json -q`` in its own
  process — wall time and peak RSS (the process tree, sampled every 0.2 s);
- **ray**: a local cluster (``ray.cluster_utils.Cluster``: a head with no CPUs for the driver,
  and ``--nodes`` worker nodes of one CPU each, ``--object-store-mb`` each) runs the same
  command with ``--ray auto --out kept/`` from this process — wall time (cluster start not
  included), the peak memory of each node (PSS of its raylet, object store and worker
  processes, sampled every 0.5 s: shared pages counted once), the driver's peak RSS, the time of
  each stage, and the busy seconds of each kind of task (from Ray's state API).

The kept records must be identical (sha256 of the file against the concatenated parts); the
reports' pairs, dropped texts and candidates too. Last, an estimate for 100M texts on N nodes,
from the largest measured size: the task-seconds of the parallel steps (read, join, write)
scaled to 100M and divided by N, plus the merge (one task: connected components over the pairs,
linear in them) scaled by 100M/n. The parallel steps are scaled two ways: linearly (100M/n: a
lower bound, as the join's candidates grow faster than n), and, when two or more sizes ran, as
n^e with e the growth exponent of the candidates between the two largest sizes
(log(c₂/c₁)/log(n₂/n₁): a count, not a time, so the load of the machine does not enter it; an
upper bound, as reading and writing are linear).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
MB = 1 << 20


def sha256_of(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def write_corpus(path: Path, n: int, seed: int) -> None:
    """The corpus, written by a child process (its memory is given back at once)."""
    code = (
        "import sys; from verimod.distributed.synthetic import write_synthetic; "
        "write_synthetic(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))"
    )
    subprocess.run([sys.executable, "-c", code, str(path), str(n), str(seed)], check=True)


class Sampler(threading.Thread):
    """Peak memory of groups of processes (a callable returning {group: [pids]}), sampled."""

    def __init__(self, groups: Any, every: float, pss: bool) -> None:
        super().__init__(daemon=True)
        self.groups, self.every, self.pss = groups, every, pss
        self.peak: dict[str, float] = defaultdict(float)
        self.stop = threading.Event()

    def _memory(self, pid: int) -> float:
        try:
            process = psutil.Process(pid)
            return float(process.memory_full_info().pss if self.pss else process.memory_info().rss)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return 0.0

    def run(self) -> None:
        while not self.stop.wait(self.every):
            for group, pids in self.groups().items():
                self.peak[group] = max(self.peak[group], sum(map(self._memory, pids)) / MB)


def tree(pid: int) -> list[int]:
    try:
        process = psutil.Process(pid)
        return [pid, *(child.pid for child in process.children(recursive=True))]
    except psutil.NoSuchProcess:
        return []


def run_single(corpus: Path, out: Path, threshold: float) -> dict[str, Any]:
    command = [sys.executable, "-m", "verimod", "data", "dedup", str(corpus), "--threshold", str(threshold)]
    command += ["--out", str(out / "kept.jsonl"), "--report", str(out / "report.json"), "-q"]
    started = time.perf_counter()
    process = subprocess.Popen(command)
    sampler = Sampler(lambda: {"process": tree(process.pid)}, 0.2, pss=False)
    sampler.start()
    process.wait()
    seconds = time.perf_counter() - started
    sampler.stop.set()
    assert process.returncode == 0, f"single-process dedup failed ({process.returncode})"
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return {"seconds": seconds, "peak_mib": sampler.peak["process"], "report": report}


def task_seconds() -> dict[str, float]:
    """Busy seconds per task name, from Ray's state API."""
    from ray.util.state import list_tasks

    busy: dict[str, float] = defaultdict(float)
    for task in list_tasks(detail=True, limit=10_000, raise_on_missing_output=False):
        if task.start_time_ms and task.end_time_ms:
            busy[task.name] += (task.end_time_ms - task.start_time_ms) / 1000
    return dict(busy)


def run_ray(corpus: Path, out: Path, threshold: float, nodes: int, store_mb: int, shard_mb: float) -> dict[str, Any]:
    import ray
    from ray.cluster_utils import Cluster

    from verimod.distributed.dedup import dedup_on_ray
    from verimod.distributed.join import JoinSettings

    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "object_store_memory": 256 * MB, "include_dashboard": True},
    )
    workers = [cluster.add_node(num_cpus=1, object_store_memory=store_mb * MB) for _ in range(nodes)]
    ray.init(address=cluster.address, log_to_driver=False)

    def groups() -> dict[str, list[int]]:
        found = {}
        for k, node in enumerate(workers):
            pids = [p.process.pid for handles in node.all_processes.values() for p in handles]
            found[f"node {k + 1}"] = [pid for root in pids for pid in tree(root)]
        found["driver"] = [os.getpid()]
        return found

    sampler = Sampler(groups, 0.5, pss=True)
    sampler.start()
    stages: dict[str, float] = {}
    clock = time.perf_counter()

    def stage(name: str) -> None:
        stages[name] = time.perf_counter() - clock

    try:
        run = dedup_on_ray(
            corpus,
            threshold=threshold,
            out=out / "kept",
            shard_bytes=int(shard_mb * MB),
            settings=JoinSettings(threshold),
            on_stage=stage,
        )
        seconds = time.perf_counter() - clock
        busy = task_seconds()
    finally:
        sampler.stop.set()
        ray.shutdown()
        cluster.shutdown()
    marks = [*sorted(stages.items(), key=lambda item: item[1]), ("end", seconds)]
    durations = {name: round(marks[k + 1][1] - at, 2) for k, (name, at) in enumerate(marks[:-1])}
    return {
        "seconds": seconds,
        "stages": durations,
        "task_seconds": {k: round(v, 2) for k, v in sorted(busy.items())},
        "peak_mib": {k: round(v) for k, v in sampler.peak.items()},
        "report": run.report.__dict__,
        "shards": len(run.sharded.shards),
        "bands": len(run.join.band_index),
        "buckets": run.join.buckets,
        "replication": round(run.join.replication, 2),
    }


STAGES = {  # the task kinds of each step, for the estimate
    "read": ("_scan_range", "_read_jsonl_range", "shard_texts"),
    "join": ("_route_lengths", "_distinct_band", "_char_ranking", "_band_classes", "_full_ranking",
             "_route_buckets", "_bucket_join"),
    "merge": ("_merge",),
    "write": ("_write_kept",),
}  # fmt: skip


def step_seconds(measured: dict[str, Any]) -> tuple[float, float]:
    """Task-seconds of the parallel steps (read, join, write) and of the merge."""
    busy = measured["task_seconds"]
    parallel = sum(busy.get(name, 0.0) for key in ("read", "join", "write") for name in STAGES[key])
    return parallel, sum(busy.get(name, 0.0) for name in STAGES["merge"])


def estimate(results: list[dict[str, Any]], target: int, nodes: list[int]) -> list[str]:
    """Wall time for ``target`` texts on N nodes from the task-seconds measured (module docstring)."""
    n = results[-1]["n"]
    parallel, serial = step_seconds(results[-1]["ray"])
    merge = serial * target / n
    scalings = [("linear", 1.0)]
    if len(results) > 1:
        n_before = results[-2]["n"]
        candidates = results[-1]["ray"]["report"]["candidates"] / results[-2]["ray"]["report"]["candidates"]
        scalings.append(("as the candidates grew", math.log(candidates) / math.log(n / n_before)))
    lines = []
    for name, exponent in scalings:
        work = parallel * (target / n) ** exponent
        lines.append(
            f"estimate for {target:,} texts from n = {n:,}, {name} (task-s as n^{exponent:.2f}): "
            f"{work:,.0f} task-s in parallel steps, {merge:,.0f} s in the merge (one task)"
        )
        lines += [f"  {count:>4} nodes (1 CPU each): about {(work / count + merge) / 60:,.1f} min" for count in nodes]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000000", help="comma-separated corpus sizes")
    parser.add_argument("--threshold", type=float, default=95.0)
    parser.add_argument("--nodes", type=int, default=2, help="worker nodes of the local cluster (1 CPU each)")
    parser.add_argument("--object-store-mb", type=int, default=1024, help="object store of each worker node")
    parser.add_argument("--shard-mb", type=float, default=32.0)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--skip-single", action="store_true", help="only the cluster (when one process cannot)")
    parser.add_argument("--workdir", type=Path, default=None, help="where corpora and outputs go (default: a temp dir)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_ray_"))
    results = []
    for n in (int(size) for size in args.sizes.split(",")):
        corpus = workdir / f"synthetic-{n}-{args.seed}.jsonl"
        if not corpus.is_file():
            write_corpus(corpus, n, args.seed)
        single_out, ray_out = workdir / f"single-{n}", workdir / f"ray-{n}"
        single_out.mkdir(exist_ok=True)
        single = None if args.skip_single else run_single(corpus, single_out, args.threshold)
        on_ray = run_ray(corpus, ray_out, args.threshold, args.nodes, args.object_store_mb, args.shard_mb)
        row: dict[str, Any] = {"n": n, "corpus_mib": round(corpus.stat().st_size / MB), "ray": on_ray}
        if single is not None:
            row["single"] = single
            parts = sorted((ray_out / "kept").glob("part-*.jsonl"))
            row["identical_kept"] = sha256_of([single_out / "kept.jsonl"]) == sha256_of(parts)
            same = ("pairs", "dropped", "candidates", "distinct")
            row["identical_counts"] = all(single["report"][k] == on_ray["report"][k] for k in same)
        results.append(row)
        print(json.dumps(row, indent=1), flush=True)
    for line in estimate(results, 100_000_000, [8, 32, 128]):
        print(line)


if __name__ == "__main__":
    main()
