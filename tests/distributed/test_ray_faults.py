"""A worker node killed mid-job: the distributed dedup and the Ray sweep still complete, with the
results of an uninterrupted run. The cluster's head runs no tasks (0 CPUs: the driver and the
sweep's ledger live there), so every task runs on one of two worker nodes; a node running a
task of the job is killed without warning, and a fresh node joins."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.conftest import write_lines
from tests.distributed.conftest import LocalCluster, cat
from tests.helpers.fake_openai import FakeOpenAI, FakeOpenAIServer
from tests.sweep.test_sweep import ITEMS, answers_for
from verimod.core.runs import RunStore
from verimod.data.jsonl import dumps_line
from verimod.data.neardup import deduplicate
from verimod.data.records import read_table
from verimod.distributed.dedup import dedup_on_ray
from verimod.distributed.join import JoinSettings
from verimod.distributed.sweep import run_sweep_on_ray, start_ledger
from verimod.distributed.synthetic import write_synthetic
from verimod.sweep import load_sweep
from verimod.sweep.runner import run_sweep

pytestmark = pytest.mark.slow

JOIN_TASKS = {"_route_lengths", "_distinct_band", "_band_classes", "_route_buckets", "_bucket_join"}


@pytest.fixture(scope="module")
def cluster():
    # The dashboard serves the state API. Nodes report task events every 100 ms (Ray's default is
    # 1 s), so a join task of a fraction of a second, on a quiet machine, is still seen running.
    started = LocalCluster(
        workers=2, head_cpus=0, dashboard=True, system_config={"task_events_report_interval_ms": 100}
    )
    yield started
    started.close()


def running_on_workers(cluster, names):
    """(task name, node) of the tasks named ``names`` now running on a worker node."""
    from ray.util.state import list_tasks

    workers = {node.node_id for node in cluster.workers}
    tasks = list_tasks(filters=[("state", "=", "RUNNING")], detail=True, raise_on_missing_output=False)
    return [(t.name, t.node_id) for t in tasks if t.name in names and t.node_id in workers]


def retried_tasks():
    from ray.util.state import list_tasks

    return [t.name for t in list_tasks(detail=True, limit=10_000, raise_on_missing_output=False) if t.attempt_number]


def test_a_worker_killed_mid_join_and_the_dedup_is_still_exact(cluster, tmp_path):
    source = tmp_path / "corpus.jsonl"
    write_synthetic(source, 30_000, seed=21)
    join_started = threading.Event()
    outcome = {}

    def job():
        try:
            outcome["run"] = dedup_on_ray(
                source,
                threshold=90,
                out=tmp_path / "kept",
                pairs_out=tmp_path / "pairs",
                shard_bytes=200_000,
                settings=JoinSettings(90, band_texts=6000, buckets=4),
                on_stage=lambda stage: stage == "join" and join_started.set(),
            )
        except BaseException as exc:  # reported by the assertion below
            outcome["error"] = exc

    worker = threading.Thread(target=job)
    worker.start()
    assert join_started.wait(300)
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and worker.is_alive() and time.monotonic() < deadline:
        running = running_on_workers(cluster, JOIN_TASKS)
        victim = running[0] if running else None
        time.sleep(0.05)
    assert victim is not None, "no join task was seen running on a worker node"
    cluster.kill(victim[1])  # mid-join: a task of the join was running there
    worker.join(600)
    assert "error" not in outcome, outcome.get("error")
    assert retried_tasks()  # work lost with the node was done again
    rows = read_table(source).rows
    single = deduplicate([row["text"] for _, row in rows], 90)
    kept = b"".join(dumps_line(row) for (_, row), keep in zip(rows, single.keep, strict=True) if keep)
    assert cat(tmp_path / "kept") == kept
    pairs = [
        {"line_a": rows[i][0], "line_b": rows[j][0], "id_a": rows[i][1]["id"], "id_b": rows[j][1]["id"], "score": s}
        for i, j, s in single.pairs
    ]
    assert cat(tmp_path / "pairs") == b"".join(map(dumps_line, pairs))
    report = outcome["run"].report
    assert (report.pairs, report.dropped, report.candidates) == (
        single.report.pairs,
        single.report.dropped,
        single.report.candidates,
    )


GRID = """name: {name}
models:
  - {{model: "openai:a", base_url: "{url}", max_concurrency: 4}}
settings: [zero-shot, taxonomy]
data: [test.jsonl]
"""


def sample_ids(path):
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.endswith("}")]
    return [r["id"] for r in rows]


def test_a_worker_killed_mid_sweep_and_its_cell_resumes_on_another_node(cluster, tmp_path):
    import ray

    write_lines(tmp_path / "test.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS])
    behaviour = FakeOpenAI(answers=answers_for(["zero-shot", "taxonomy"]), delay_s=0.05)
    with FakeOpenAIServer(behaviour) as server:
        path = tmp_path / "sweep.yaml"
        path.write_text(GRID.format(name="killed", url=server.base_url), encoding="utf-8")
        plan = load_sweep(path)
        runs_dir = tmp_path / "sweeps" / "killed"
        ledger = start_ledger(lease_s=6.0)
        outcome = {}
        worker = threading.Thread(
            target=lambda: outcome.update(
                result=run_sweep_on_ray(plan, plan.cells, budget=1, use_cache=False, lease_s=6.0, ledger=ledger)
            )
        )
        worker.start()  # one cell at a time: the requests seen while the first cell runs are all its own
        target = plan.cells[0]
        samples = runs_dir / target.cell_id / "samples.jsonl"
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not (samples.is_file() and len(sample_ids(samples)) >= 30):
            time.sleep(0.02)
        node = ray.get(ledger.holder_node.remote(target.cell_id))
        before = set(sample_ids(samples))
        assert node is not None and 30 <= len(before) < len(ITEMS)
        cluster.kill(node)
        worker.join(300)
        sweep = outcome["result"]
        assert not sweep.failures, sweep.failures
        local_plan = plan.model_copy(update={"runs_dir": str(tmp_path / "local")})
        hits_before_local = sum(behaviour.hits.values())
        local = run_sweep(local_plan, local_plan.cells, use_cache=False)
    actions = {r.cell_id: r.action for r in sweep.results}
    assert actions[target.cell_id] == "resumed"  # its second attempt resumed the run directory
    ids = sample_ids(samples)
    assert sorted(ids) == sorted(r.id for r in ITEMS)  # each sample exactly once
    assert before <= set(ids)
    # finished samples were not asked again: over both attempts the killed cell asked each
    # sample once, plus at most its requests in flight (max_concurrency) when the node died (the
    # second cell asked each of its samples once; a restart from scratch would ask 30 or more again)
    killed_cell_requests = hits_before_local - len(ITEMS)
    assert len(ITEMS) <= killed_cell_requests <= len(ITEMS) + 4
    assert [r.cell_id for r in local.results] == [r.cell_id for r in sweep.results]
    for cell in plan.cells:
        ray_scores = RunStore.open(runs_dir / cell.cell_id).scores()
        local_scores = RunStore.open(tmp_path / "local" / cell.cell_id).scores()
        assert {k: v for k, v in ray_scores.items() if k != "run_id"} == {
            k: v for k, v in local_scores.items() if k != "run_id"
        }
