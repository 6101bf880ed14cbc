"""``verimod sweep``: the YAML file checked with one-line errors, the grid expanded in Table-1
order, each cell a normal resumable run, cells concurrent up to the budget, a SIGKILLed sweep
resumed without repeating finished samples, one Table-1 and one HTML report."""

import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import write_lines
from tests.helpers.fake_openai import FakeOpenAI, FakeOpenAIServer
from verimod.cli.app import app
from verimod.core.runlock import lock_holder
from verimod.core.runs import RunStore
from verimod.models.base import GenerationParams
from verimod.sweep import cell as cell_module
from verimod.sweep import load_sweep, run_cell
from verimod.sweep.runner import run_sweep
from verimod.tasks.varm.corrupt import demo_outputs
from verimod.tasks.varm.evaluate import build_requests, score_run
from verimod.tasks.varm.prompts import load_prompt
from verimod.tasks.varm.starter import load_starter

ITEMS = load_starter("test")


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def folder(tmp_path):
    """test.jsonl and two scripted models' outputs (seeded demo corruptions)."""
    write_lines(tmp_path / "test.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS])
    for seed in (1, 2):
        outputs, _ = demo_outputs(ITEMS, seed=seed)
        write_lines(tmp_path / f"m{seed}.jsonl", [{"id": r.id, "output": outputs.get(r.id, "")} for r in ITEMS])
    return tmp_path


def sweep_file(folder, text, name="sweep.yaml"):
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


BAD_FILES = [
    ("modles: [baseline]\n", 1, "modles", "unknown field (did you mean 'models'?)"),
    ("models:\n  - baseline\n  - model: openai:m\n    base_url: 5\n", 4, "models[1].base_url", "must be"),
    ("models: [baseline]\nsettings:\n  - zero-shot\n  - few-shot\n", 4, "settings[1]", "is not one of"),
    ("models: [baseline]\nbudget: 0\n", 2, "budget", "greater than or equal to 1"),
    ("models: [baseline]\nbudget: 2\nbudget: 3\n", 3, "budget", "duplicate key (first on line 2)"),
    ("models: [baseline]\ndata:\n  - source: a.jsonl\n    limt: 3\n", 4, "data[0].limt", "unknown field"),
    ("models:\n  - opnai:qwen\n", 2, "models[0].model", "unknown model backend 'opnai'"),
    ("models: [baseline]\nconstraints:\n  - none\n  - name: json\n", 4, "constraints[1]", "needs a json_schema"),
    ("models: [baseline]\nconstraints:\n  - {name: anchors, regex: a}\n", 3, "constraints[0]", "takes no json_schema"),
    ("models: [baseline]\ngeneration:\n  temprature: 1\n", 3, "generation.temprature", "unknown field"),
    ("settings: [zero-shot]\n", 1, "models", "missing required field"),
    ("models: [baseline\nsettings: x\n", 2, None, "not valid YAML"),
    ("- baseline\n", 1, None, "must be a YAML mapping"),
]


@pytest.mark.parametrize(("text", "line", "field", "message"), BAD_FILES)
def test_bad_sweep_files_are_one_line_naming_file_line_and_field(folder, text, line, field, message):
    path = sweep_file(folder, text)
    result = run("sweep", path, "--dry-run")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    where = f"error: {path}:{line}: " + (f"field '{field}': " if field else "")
    assert lines[0].startswith(where), lines[0]
    assert message in lines[0]


def test_expansion_order_labels_paths_and_fingerprints(folder):
    (folder / "sft").mkdir()
    path = sweep_file(
        folder,
        """name: grid
models:
  - scripted:m1.jsonl
  - {model: "hf:Qwen/Qwen2.5-0.5B-Instruct", label: qwen, adapters: [null, sft], base_url: http://x/v1}
settings: [zero-shot, k-shot]
data: [test.jsonl]
constraints:
  - none
  - {name: json, json_schema: {type: object}}
train: test.jsonl
""",
    )
    plan = load_sweep(path)
    ids = [c.cell_id for c in plan.cells]
    assert len(ids) == 3 * 2 * 1 * 2
    assert ids[:4] == ["m1__zero-shot__test", "m1__zero-shot__test__json", "m1__k-shot__test", "m1__k-shot__test__json"]
    assert ids[4] == "qwen__zero-shot__test" and ids[8] == "qwen+sft__zero-shot__test"
    first, json_cell, adapted = plan.cells[0], plan.cells[1], plan.cells[8]
    assert first.settings.model == f"scripted:{folder / 'm1.jsonl'}"  # a path beside the file
    assert plan.cells[4].settings.model == "hf:Qwen/Qwen2.5-0.5B-Instruct"  # a hub id stays
    assert first.settings.data == str(folder / "test.jsonl") and first.settings.train == str(folder / "test.jsonl")
    assert json_cell.settings.params.structured.json_schema == {"type": "object"}
    assert adapted.settings.backend_options.adapter == str(folder / "sft")
    assert plan.runs_dir == str(folder / "sweeps" / "grid")
    # transport options do not change a cell's identity; anything that changes answers does
    moved = plan.cells[4].model_copy(
        update={"settings": plan.cells[4].settings.model_copy(update={"engine": first.settings.engine})}
    )
    assert moved.fingerprint == plan.cells[4].fingerprint
    hotter = first.settings.model_copy(update={"params": GenerationParams(temperature=0.7)})
    assert first.model_copy(update={"settings": hotter}).fingerprint != first.fingerprint
    assert pickle.loads(pickle.dumps(first)) == first  # a cell travels to another process as it is


def test_same_labels_and_ids_are_refused(folder):
    result = run("sweep", sweep_file(folder, "models: [scripted:m1.jsonl, scripted:sub/m1.jsonl]\n"), "--dry-run")
    assert result.exit_code == 2 and "share the label 'm1': give one a label" in result.stderr


def scores_of(preds, refs):
    result = run("score", preds, "--ref", refs, "--json", "-")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_sweep_cells_are_normal_runs_with_one_table_and_one_report(folder):
    path = sweep_file(
        folder,
        """name: demo
budget: 2
models: [scripted:m1.jsonl, {model: "scripted:m2.jsonl", label: two}]
settings: [zero-shot, taxonomy]
data: [test.jsonl, {source: test.jsonl, label: head, limit: 30}]
""",
    )
    result = run("sweep", path, "--bootstrap", "20", "--format", "json")
    assert result.exit_code == 0, result.stderr
    runs_dir = folder / "sweeps" / "demo"
    ids = [c.cell_id for c in load_sweep(path).cells]
    assert [row["run"] for row in json.loads(result.stdout)] == ids
    table = (runs_dir / "table1.md").read_text(encoding="utf-8")
    assert [line.split(" | ")[0].lstrip("| ") for line in table.splitlines()[2:]] == ids
    head = write_lines(folder / "head.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS[:30]])
    for cell_id in ids:
        store = RunStore.open(runs_dir / cell_id)
        refs = head if cell_id.endswith("__head") else folder / "test.jsonl"
        preds = folder / ("m1.jsonl" if cell_id.startswith("m1") else "m2.jsonl")
        expected = scores_of(preds, refs) if refs == folder / "test.jsonl" else None
        stored = {k: v for k, v in store.scores().items() if k != "run_id"}
        if expected is not None:
            assert stored == expected
        assert store.manifest.status == "completed" and store.manifest.provenance["cell"] == cell_id
    report = (runs_dir / "report.html").read_text(encoding="utf-8")
    assert all(cell_id in report for cell_id in ids)
    compared = run("runs", "compare", runs_dir / ids[0], runs_dir / ids[2], "--paired", "--format", "json")
    assert compared.exit_code == 0  # cells are ordinary run directories
    lines_before = {i: (runs_dir / i / "samples.jsonl").read_bytes() for i in ids}
    again = run("sweep", path, "--no-report", "-q")
    assert again.exit_code == 0, again.stderr
    assert {i: (runs_dir / i / "samples.jsonl").read_bytes() for i in ids} == lines_before  # nothing re-asked
    assert "done" in run("sweep", path, "--dry-run").stdout


def test_a_changed_cell_is_refused_and_a_failing_cell_does_not_stop_the_others(folder):
    text = "name: s\nmodels: [scripted:m1.jsonl, scripted:missing.jsonl]\ndata: [test.jsonl]\n"
    path = sweep_file(folder, text)
    result = run("sweep", path, "--no-report")
    assert result.exit_code == 1
    assert "✗" in result.stderr and "missing.jsonl: file not found" in result.stderr
    assert (folder / "sweeps" / "s" / "m1__zero-shot__test" / "scores.json").is_file()
    sweep_file(folder, text.replace("models:", "generation: {temperature: 0.5}\nmodels:"))
    result = run("sweep", path, "--no-report", "--only", "m1*")
    assert result.exit_code == 1 and "changed since its run started" in result.stderr


def test_bad_data_fails_before_any_cell_runs(folder):
    write_lines(folder / "bad.jsonl", [{"id": "a", "text": "x", "label": "harmfull"}])
    path = sweep_file(folder, "name: b\nmodels: [scripted:m1.jsonl]\ndata: [test.jsonl, bad.jsonl]\n")
    result = run("sweep", path)
    assert result.exit_code == 2 and "bad.jsonl:1: field 'label'" in result.stderr
    assert not (folder / "sweeps" / "b" / "m1__zero-shot__test").exists()


def test_run_cell_is_idempotent_and_replaces_a_half_created_directory(folder, monkeypatch):
    path = sweep_file(folder, "name: c\nmodels: [scripted:m1.jsonl]\ndata: [{source: test.jsonl, limit: 10}]\n")
    cell = load_sweep(path).cells[0]
    root = folder / "cells"
    (root / cell.cell_id).mkdir(parents=True)  # as left by a kill between mkdir and the manifest
    stores = []  # keeps each cell's store alive after the cell, as a lingering reference in a Ray worker does

    def scoring(store, **options):
        stores.append(store)
        return score_run(store, **options)

    monkeypatch.setattr(cell_module, "score_run", scoring)
    first = run_cell(cell, root, "c")
    assert lock_holder(root / cell.cell_id) is None  # the lock is freed when the cell ends, not at garbage collection
    second = run_cell(cell, root, "c")
    assert lock_holder(root / cell.cell_id) is None and len(stores) == 2
    assert (first.action, first.requested) == ("started", 10)
    assert (second.action, second.requested) == ("complete", 0) and second.scores == first.scores


def answers_for(settings):
    """Answers keyed by user message, for every setting's prompts: reference rationales, every
    third with a lenient anchor, so scores are not trivially perfect."""
    answers = {}
    for setting in settings:
        requests = build_requests(ITEMS, load_prompt(setting), [], GenerationParams())
        for i, (request, item) in enumerate(zip(requests, ITEMS, strict=True)):
            answers[request.messages[-1].content] = item.cot if i % 3 else item.cot.replace("[L:", "[L：")
    return answers


GRID = """name: {name}
budget: 2
models:
  - {{model: "openai:a", base_url: "{url}", max_concurrency: 4}}
  - {{model: "openai:b", base_url: "{url}", max_concurrency: 4}}
settings: [zero-shot, taxonomy]
data: [test.jsonl]
"""


def test_budget_bounds_the_cells_running_at_once(folder):
    with FakeOpenAIServer(FakeOpenAI(answers=answers_for(["zero-shot", "taxonomy"]), delay_s=0.01)) as server:
        path = sweep_file(folder, GRID.format(name="budget", url=server.base_url))
        plan = load_sweep(path)
        running, peak, lock = [0], [0], threading.Lock()

        def on_start(cell):
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])

        def on_done(cell, result, failure):
            with lock:
                running[0] -= 1

        outcome = run_sweep(plan, plan.cells, use_cache=False, on_start=on_start, on_done=on_done)
    assert not outcome.failures and len(outcome.results) == 4
    assert peak[0] == 2  # concurrent, and never more than the budget


def stored_lines(samples: Path) -> int:
    """Lines of a run's samples file; 0 when the run is being created (its folder is renamed)."""
    try:
        return samples.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_a_killed_sweep_resumes_without_repeating_finished_samples(folder):
    behaviour = FakeOpenAI(answers=answers_for(["zero-shot", "taxonomy"]), delay_s=0.03)
    with FakeOpenAIServer(behaviour) as server:
        path = sweep_file(folder, GRID.format(name="killed", url=server.base_url))
        runs_dir = folder / "sweeps" / "killed"
        command = [sys.executable, "-m", "verimod", "sweep", str(path), "--no-cache", "--no-report", "-q"]
        process = subprocess.Popen(command, env={**os.environ}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            lines = sum(stored_lines(p) for p in runs_dir.glob("[!.]*/samples.jsonl")) if runs_dir.exists() else 0
            if lines >= 60:
                break
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        assert lines >= 60, process.stderr.read()
        finished_before = {}
        for samples in runs_dir.glob("[!.]*/samples.jsonl"):  # not a cell's staging folder (.creating-…)
            rows = [json.loads(x) for x in samples.read_text(encoding="utf-8").splitlines() if x.endswith("}")]
            finished_before[samples.parent.name] = {r["id"] for r in rows}
        total_before = sum(len(v) for v in finished_before.values())
        assert 60 <= total_before < 4 * len(ITEMS)  # killed mid-way
        hits_before = sum(behaviour.hits.values())

        resumed = run("sweep", path, "--no-cache", "--no-report", "--format", "json")
        assert resumed.exit_code == 0, resumed.stderr
        resent = sum(behaviour.hits.values()) - hits_before
        in_flight = 2 * 4  # at most budget × max_concurrency samples were lost with the process
        assert 4 * len(ITEMS) - total_before <= resent <= 4 * len(ITEMS) - total_before + in_flight

        uninterrupted = run(
            "sweep", path, "--no-cache", "--no-report", "--format", "json", "--runs-dir", folder / "other"
        )
        assert uninterrupted.exit_code == 0, uninterrupted.stderr
    for cell_id, before in finished_before.items():
        rows = [json.loads(x) for x in (runs_dir / cell_id / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
        assert sorted(r["id"] for r in rows) == sorted(r.id for r in ITEMS)  # each sample exactly once
        assert before <= {r["id"] for r in rows}
        same_scores = [
            {k: v for k, v in RunStore.open(folder / where / cell_id).scores().items()}
            for where in ("sweeps/killed", "other")
            for cell_id in sorted(finished_before)
        ]
    half = len(same_scores) // 2
    assert same_scores[:half] == same_scores[half:]  # the resumed sweep scores as an uninterrupted one
    assert json.loads(resumed.stdout) == json.loads(uninterrupted.stdout)  # and prints the same Table-1


def test_the_anchor_constraint_makes_constrained_cells(folder):
    from verimod.tasks.varm.evaluate import constrained_params
    from verimod.tasks.varm.grammar import structured_output

    path = sweep_file(folder, "models: [baseline]\nsettings: [zero-shot]\nconstraints: [none, anchors]\n")
    plain, anchored = load_sweep(path).cells
    assert anchored.cell_id == plain.cell_id + "__anchors"
    assert (plain.settings.constrain, anchored.settings.constrain) == ("none", "anchors")
    assert constrained_params(anchored.settings).structured == structured_output("anchors")
    assert plain.fingerprint != anchored.fingerprint
