"""verimod inside inspect_ai: the VARM tasks send verimod's prompts, the inspect metrics equal
``verimod score`` on the same outputs, ``inspect eval verimod/…`` finds the tasks through the
package's entry point, and ``verimod import inspect LOG`` makes a run that runs compare, report,
diagnose and the paired tests accept. Offline: answers come from the ``verimod-scripted`` model."""

import json
import math
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REPO, write_lines
from verimod.cli.app import app
from verimod.core.runs import RunStore
from verimod.tasks.varm.corrupt import demo_outputs
from verimod.tasks.varm.evaluate import EvalSettings, prepare_run
from verimod.tasks.varm.starter import load_starter

inspect_ai = pytest.importorskip("inspect_ai", reason="the inspect extra is not installed")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.scorer import Score  # noqa: E402

from verimod.integrations.inspect_ai import _registry  # noqa: E402, F401 - registers the model and tasks
from verimod.integrations.inspect_ai.scorer import first_epoch  # noqa: E402
from verimod.integrations.inspect_ai.tasks import varm, varm_k_shot, varm_taxonomy, varm_zero_shot  # noqa: E402
from verimod.integrations.varm_metrics import METRIC_KEYS  # noqa: E402

ITEMS = load_starter("test")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # inspect's own, from its retry helper


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def varm_score(preds: Path, refs: Path) -> dict:
    result = run("score", preds, "--ref", refs, "--json", "-")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def assert_same_metrics(inspect_metrics: dict, verimod_scores: dict) -> None:
    for key in METRIC_KEYS:
        expected = verimod_scores[key]
        if expected is None:
            assert math.isnan(inspect_metrics[key]), key
        else:
            assert inspect_metrics[key] == expected, key  # bit-identical, not approximately


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Test items, seeded demo outputs (a missing one answered with an empty text) and the
    same outputs with one model error."""
    folder = tmp_path_factory.mktemp("inspect")
    outputs, _ = demo_outputs(ITEMS, seed=3)
    rows = [{"id": r.id, "output": outputs.get(r.id, "")} for r in ITEMS]
    refs = write_lines(folder / "test.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS])
    preds = write_lines(folder / "preds.jsonl", rows)
    failing = write_lines(folder / "failing.jsonl", [{"id": ITEMS[0].id, "error": "boom"}, *rows[1:]])
    return {"folder": folder, "refs": refs, "preds": preds, "failing": failing}


@pytest.fixture(scope="module")
def zero_shot_log(files):
    logs = inspect_eval(
        varm_zero_shot(data=str(files["refs"])),
        model="verimod-scripted/demo",
        model_args={"outputs": str(files["preds"])},
        log_dir=str(files["folder"] / "logs"),
        display="none",
    )
    assert logs[0].status == "success", logs[0].error
    return logs[0]


def test_inspect_metrics_equal_verimod_score(zero_shot_log, files):
    metrics = {k: m.value for k, m in zero_shot_log.results.scores[0].metrics.items()}
    assert set(metrics) == set(METRIC_KEYS)
    scores = varm_score(files["preds"], files["refs"])
    assert 0 < scores["jrem"] < scores["parse_rate"] < 1  # a mix of right, wrong and unparseable outputs
    assert_same_metrics(metrics, scores)
    sample = zero_shot_log.samples[0]
    assert set(sample.scores["varm_scorer"].value) == {"parse", "format", "j"}


def test_samples_carry_verimod_prompts_for_every_setting(files):
    settings = {
        "zero-shot": varm_zero_shot(data=str(files["refs"])),
        "taxonomy": varm_taxonomy(data=str(files["refs"])),
        "k-shot": varm_k_shot(data=str(files["refs"]), shots=3),
    }
    for setting, task in settings.items():
        prepared = prepare_run(EvalSettings(setting=setting, data=str(files["refs"]), shots=3))
        samples = list(task.dataset)
        assert [s.id for s in samples] == [r.id for r in ITEMS]
        for sample, request in zip(samples, prepared.requests, strict=True):
            assert [(m.role, m.text) for m in sample.input] == [(m.role, m.content) for m in request.messages]
        meta = task.metadata["verimod"]
        assert meta["prompt"]["sha256"] == prepared.template.sha256
        assert meta["examples"] == [e.id for e in prepared.examples]
        assert len(meta["examples"]) == (3 if setting == "k-shot" else 0)
    generic = varm(setting="taxonomy", data=str(files["refs"]), limit=5)
    assert [s.input[-1].text for s in generic.dataset] == [s.input[-1].text for s in settings["taxonomy"].dataset][:5]


def test_first_epoch_reducer_keeps_the_first_epoch():
    reduce = first_epoch()
    second = Score(value={"j": 1}, answer="b", metadata={"epoch": 2})
    first = Score(value={"j": 0}, answer="a", metadata={"epoch": 1})
    assert reduce([second, first]) is first


def entry_point_path(tmp_path: Path) -> Path:
    """A dist-info folder declaring the package's ``inspect_ai`` entry points, read from
    pyproject.toml exactly as a build backend writes them (the checkout is not reinstalled)."""
    table = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]
    lines = ["[inspect_ai]", *(f"{name} = {target}" for name, target in table["inspect_ai"].items())]
    dist = tmp_path / "eps" / "verimod_entry_points_under_test-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: verimod-entry-points-under-test\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return dist.parent


def test_inspect_cli_finds_verimod_tasks_through_the_entry_point(files, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(entry_point_path(tmp_path)), str(REPO / "src")])}
    logs = tmp_path / "logs"
    inspect_cli = [sys.executable, "-c", "from inspect_ai._cli.main import main; main()"]
    common = ["--model", "verimod-scripted/demo", "-M", f"outputs={files['preds']}", "--log-dir", str(logs)]
    for task, args in (
        ("verimod/varm_zero_shot", ["-T", f"data={files['refs']}", "-T", "limit=40"]),
        ("verimod/varm", ["-T", "setting=taxonomy", "-T", f"data={files['refs']}", "-T", "limit=40"]),
    ):
        done = subprocess.run(
            [*inspect_cli, "eval", task, *args, *common, "--display", "none"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    first = write_lines(tmp_path / "first40.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS[:40]])
    subset = write_lines(
        tmp_path / "preds40.jsonl",
        [json.loads(line) for line in files["preds"].read_text(encoding="utf-8").splitlines()[:40]],
    )
    scores = varm_score(subset, first)
    made = sorted(logs.glob("*.eval"))
    assert len(made) == 2
    for path in made:
        log = read_eval_log(str(path))
        assert log.status == "success" and log.eval.task in ("verimod/varm_zero_shot", "verimod/varm")
        assert_same_metrics({k: m.value for k, m in log.results.scores[0].metrics.items()}, scores)


def test_import_makes_a_run_that_compares_reports_and_diagnoses(zero_shot_log, files, tmp_path, monkeypatch):
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    runs = tmp_path / "runs"
    result = run("import", "inspect", zero_shot_log.location, "--runs-dir", runs, "-q")
    assert result.exit_code == 0, result.stderr
    imported = next(runs.iterdir())
    again = run("import", "inspect", zero_shot_log.location, "--runs-dir", runs)
    assert again.exit_code == 2 and f"this log was imported already: {imported}" in again.stderr
    result = run("eval", "--model", f"scripted:{files['preds']}", "--data", files["refs"], "--runs-dir", runs, "-q")
    assert result.exit_code == 0, result.stderr
    native = next(p for p in runs.iterdir() if p != imported)
    manifest = RunStore.open(imported).manifest
    assert manifest.model == "inspect:verimod-scripted/demo" and manifest.setting == "zero-shot"
    assert manifest.provenance["source"] == "inspect_ai" and manifest.provenance["log_status"] == "success"
    assert manifest.prompt["sha256"] == RunStore.open(native).manifest.prompt["sha256"]
    assert manifest.data["sha256"] == RunStore.open(native).manifest.data["sha256"]
    # the same prompts, byte for byte: the prompt hashes of every sample agree with verimod eval's
    hashes = {k: s.prompt_hash for k, s in RunStore.open(imported).samples().items()}
    assert hashes == {k: s.prompt_hash for k, s in RunStore.open(native).samples().items()}
    a = json.loads((imported / "scores.json").read_text(encoding="utf-8"))
    b = json.loads((native / "scores.json").read_text(encoding="utf-8"))
    assert {k: v for k, v in a.items() if k != "run_id"} == {k: v for k, v in b.items() if k != "run_id"}
    paired = run("runs", "compare", native, imported, "--paired", "--format", "json", "--bootstrap", "200")
    assert paired.exit_code == 0, paired.stderr
    comparison = json.loads(paired.stdout)
    assert comparison["mcnemar"]["only_a"] == comparison["mcnemar"]["only_b"] == 0
    assert all(d["difference"] in (0, None) for d in comparison["differences"])
    table = run("runs", "compare", native, imported, "--format", "json")
    assert table.exit_code == 0 and "inspect:verimod-scripted/demo" in table.stdout
    report = tmp_path / "report.html"
    result = run("report", native, imported, "-o", report, "--bootstrap", "50", "--no-plots", "-q")
    assert result.exit_code == 0, result.stderr
    assert manifest.run_id in report.read_text(encoding="utf-8")
    assert run("diagnose", "errors", imported).exit_code == 0
    assert run("diagnose", "intervals", imported, "--bootstrap", "50").exit_code == 0
    rescored = run("score", "--run", imported, "--json", "-")
    assert json.loads(rescored.stdout) == {k: v for k, v in a.items() if k != "run_id"}


def test_errored_samples_leave_inspect_metrics_and_count_as_wrong_on_import(files, tmp_path):
    logs = inspect_eval(
        varm_zero_shot(data=str(files["refs"])),
        model="verimod-scripted/demo",
        model_args={"outputs": str(files["failing"])},
        log_dir=str(tmp_path / "logs"),
        display="none",
        fail_on_error=False,
    )
    log = logs[0]
    assert sum(1 for s in log.samples if s.error is not None) == 1
    rest = write_lines(tmp_path / "rest.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS[1:]])
    rest_preds = write_lines(
        tmp_path / "rest_preds.jsonl",
        [json.loads(line) for line in files["failing"].read_text(encoding="utf-8").splitlines()[1:]],
    )
    assert_same_metrics({k: m.value for k, m in log.results.scores[0].metrics.items()}, varm_score(rest_preds, rest))
    result = run("import", "inspect", log.location, "--runs-dir", tmp_path / "runs", "-q")
    assert result.exit_code == 0, result.stderr
    scores = json.loads(next((tmp_path / "runs").glob("*/scores.json")).read_text(encoding="utf-8"))
    assert scores["n"] == len(ITEMS) and scores["n_model_errors"] == 1
    manifest = json.loads(next((tmp_path / "runs").glob("*/manifest.json")).read_text(encoding="utf-8"))
    assert manifest["status"] == "completed_with_errors" and manifest["counts"]["errors"] == 1


def test_import_of_a_foreign_task_needs_references(files, tmp_path):
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageUser
    from inspect_ai.solver import generate

    samples = [
        Sample(id=r.id, input=[ChatMessageUser(content=r.text, metadata={"verimod_id": r.id})]) for r in ITEMS[:6]
    ]
    logs = inspect_eval(
        Task(dataset=samples, solver=generate()),
        model="verimod-scripted/demo",
        model_args={"outputs": str(files["preds"])},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    refused = run("import", "inspect", logs[0].location, "--runs-dir", tmp_path / "runs")
    assert refused.exit_code == 2 and "give --ref REFERENCES" in refused.stderr
    result = run("import", "inspect", logs[0].location, "--ref", files["refs"], "--runs-dir", tmp_path / "runs", "-q")
    assert result.exit_code == 0, result.stderr
    manifest = json.loads(next((tmp_path / "runs").glob("*/manifest.json")).read_text(encoding="utf-8"))
    assert manifest["data"]["n"] == 6 and manifest["provenance"]["references_left_out"] == len(ITEMS) - 6


def test_bad_log_is_one_line(tmp_path):
    bad = tmp_path / "x.eval"
    bad.write_bytes(b"not a zip")
    result = run("import", "inspect", bad)
    assert result.exit_code == 2 and result.stderr.startswith(f"error: {bad}: not a readable inspect log")
    assert len(result.stderr.strip().splitlines()) == 1
