"""``verimod sweep SWEEP.yaml --ray auto`` on a local three-node Ray cluster: the cells are the
run directories, the Table-1 and the printed summary of the same sweep run on one machine, and a
second invocation finds every cell done."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.conftest import write_lines
from verimod.cli.app import app
from verimod.core.runs import RunStore
from verimod.sweep import load_sweep
from verimod.tasks.varm.corrupt import demo_outputs
from verimod.tasks.varm.starter import load_starter

pytestmark = pytest.mark.slow

ITEMS = load_starter("test")
GRID = """name: {name}
budget: 3
models: [scripted:m1.jsonl, {{model: "scripted:m2.jsonl", label: two}}]
settings: [zero-shot, taxonomy]
data: [test.jsonl, {{source: test.jsonl, label: head, limit: 30}}]
"""


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_sweep_on_ray_gives_the_single_machine_cells_and_table(ray_cluster, tmp_path):
    write_lines(tmp_path / "test.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS])
    for seed in (1, 2):
        outputs, _ = demo_outputs(ITEMS, seed=seed)
        write_lines(tmp_path / f"m{seed}.jsonl", [{"id": r.id, "output": outputs.get(r.id, "")} for r in ITEMS])
    files = {}
    for name in ("local", "cluster"):
        files[name] = tmp_path / f"{name}.yaml"
        files[name].write_text(GRID.format(name=name), encoding="utf-8")
    common = ("--no-cache", "--no-report", "--format", "json")
    local = run("sweep", files["local"], *common)
    on_ray = run("sweep", files["cluster"], *common, "--ray", "auto")
    assert local.exit_code == 0 and on_ray.exit_code == 0, on_ray.stderr
    ids = [cell.cell_id for cell in load_sweep(files["cluster"]).cells]
    assert len(ids) == 8
    rows_local, rows_ray = json.loads(local.stdout), json.loads(on_ray.stdout)
    assert [row["run"] for row in rows_ray] == ids  # every cell, in the sweep's order
    assert rows_ray == rows_local
    for cell_id in ids:
        cell = RunStore.open(tmp_path / "sweeps" / "cluster" / cell_id, read_only=True)
        alone = RunStore.open(tmp_path / "sweeps" / "local" / cell_id, read_only=True)
        assert cell.manifest.status == "completed" and cell.manifest.provenance["cell"] == cell_id
        assert {k: v for k, v in cell.scores().items() if k != "run_id"} == {
            k: v for k, v in alone.scores().items() if k != "run_id"
        }
    table = (tmp_path / "sweeps" / "cluster" / "table1.md").read_text(encoding="utf-8")
    assert table == (tmp_path / "sweeps" / "local" / "table1.md").read_text(encoding="utf-8")
    samples = {i: (tmp_path / "sweeps" / "cluster" / i / "samples.jsonl").read_bytes() for i in ids}
    again = run("sweep", files["cluster"], "--no-report", "-q", "--ray", "auto")
    assert again.exit_code == 0, again.stderr
    assert {i: (tmp_path / "sweeps" / "cluster" / i / "samples.jsonl").read_bytes() for i in ids} == samples
    assert run("sweep", files["cluster"], "--dry-run").stdout.count("done") >= len(ids)
