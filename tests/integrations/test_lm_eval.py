"""``verimod export lm-eval``: the exported tasks load through lm-eval's TaskManager, their
prompts are verimod's, and their metrics — through the exported hook module and through a whole
``simple_evaluate`` run with a scripted model — equal ``verimod score`` on the same outputs."""

import json
import math

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import write_lines
from verimod.cli.app import app
from verimod.integrations.varm_metrics import METRIC_KEYS as METRICS
from verimod.tasks.varm.corrupt import demo_outputs
from verimod.tasks.varm.evaluate import EvalSettings, prepare_run
from verimod.tasks.varm.starter import load_starter

lm_eval = pytest.importorskip("lm_eval", reason="the lm-eval extra is not installed")
datasets = pytest.importorskip("datasets")

from lm_eval import simple_evaluate  # noqa: E402
from lm_eval.api.model import LM  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

ITEMS = load_starter("test")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


class ScriptedLM(LM):
    """Answers each generation request with the output scripted for its document's id."""

    def __init__(self, outputs):
        super().__init__()
        self.outputs = outputs
        self.requests = []

    def generate_until(self, requests, disable_tqdm=False):
        self.requests.extend(requests)
        return [self.outputs[r.doc["id"]] for r in requests]

    def loglikelihood(self, requests, disable_tqdm=False):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lmeval")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", folder / "hf-cache")
        yield _setup(folder)


def _setup(folder):
    refs = write_lines(folder / "test.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS])
    demo, _ = demo_outputs(ITEMS, seed=5)
    outputs = {r.id: demo.get(r.id, "") for r in ITEMS}
    preds = write_lines(folder / "preds.jsonl", [{"id": i, "output": o} for i, o in outputs.items()])
    result = run("export", "lm-eval", folder / "tasks", "--data", refs, "--shots", "3", "-q")
    assert result.exit_code == 0, result.stderr
    scored = run("score", preds, "--ref", refs, "--json", "-")
    assert scored.exit_code == 0, scored.stderr
    manager = TaskManager(include_path=str(folder / "tasks"), include_defaults=False)
    return {"folder": folder, "refs": refs, "outputs": outputs, "scores": json.loads(scored.stdout), "tm": manager}


def assert_same(values: dict, scores: dict) -> None:
    for key in METRICS:
        if scores[key] is None:
            assert math.isnan(values[key]), key
        else:
            assert values[key] == scores[key], key  # bit-identical


def test_task_manager_indexes_the_exported_tasks(setup):
    tm = setup["tm"]
    assert {"varm_zero_shot", "varm_taxonomy", "varm_k_shot"} <= set(tm.all_subtasks)
    assert "varm" in tm.all_tags
    config = yaml.safe_load(
        (setup["folder"] / "tasks" / "varm_zero_shot.yaml").read_text(encoding="utf-8").replace("!function", "")
    )
    assert config["generation_kwargs"] == {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": 512}


@pytest.mark.parametrize("setting", ["zero-shot", "taxonomy", "k-shot"])
def test_prompts_are_verimods(setup, setting):
    task = setup["tm"].load([f"varm_{setting.replace('-', '_')}"])["tasks"][f"varm_{setting.replace('-', '_')}"]
    prepared = prepare_run(EvalSettings(setting=setting, data=str(setup["refs"]), shots=3))
    docs = list(task.test_docs())
    assert [d["id"] for d in docs] == [r.id for r in ITEMS]
    captured = []

    def chat_template(messages, add_generation_prompt=True):
        captured.append(messages)
        return "rendered"

    for doc, request in zip(docs, prepared.requests, strict=True):
        task.fewshot_context(doc, 0, apply_chat_template=True, chat_template=chat_template)
        assert captured[-1] == [{"role": m.role, "content": m.content} for m in request.messages]
    export = json.loads((setup["folder"] / "tasks" / "verimod_export.json").read_text(encoding="utf-8"))
    assert export["settings"][setting]["prompt_sha256"] == prepared.template.sha256
    assert [e["id"] for e in export["settings"][setting]["examples"]] == [e.id for e in prepared.examples]


def test_exported_hooks_score_like_verimod(setup):
    task = setup["tm"].load(["varm_k_shot"])["tasks"]["varm_k_shot"]
    per_metric: dict[str, list] = {key: [] for key in METRICS}
    for doc in task.test_docs():
        for key, value in task.process_results(doc, [setup["outputs"][doc["id"]]]).items():
            per_metric[key].append(value)
    aggregations = task.aggregation()
    values = {key: aggregations[key](items) for key, items in per_metric.items()}
    assert 0 < setup["scores"]["jrem"] < setup["scores"]["parse_rate"] < 1
    assert_same(values, setup["scores"])
    unparsed = [(pair[0], "没有锚点") for pair in per_metric["her_c"]]
    assert math.isnan(aggregations["her_c"](unparsed)) and aggregations["parse_rate"](unparsed) == 0.0


def test_simple_evaluate_with_a_scripted_model_equals_verimod_score(setup):
    model = ScriptedLM(setup["outputs"])
    results = simple_evaluate(
        model=model, tasks=["varm_zero_shot"], task_manager=setup["tm"], bootstrap_iters=0, apply_chat_template=False
    )["results"]["varm_zero_shot"]
    assert_same({key: results[f"{key},none"] for key in METRICS}, setup["scores"])
    assert len(model.requests) == len(ITEMS)
    _, gen_kwargs = model.requests[0].args
    assert gen_kwargs["until"] == [] and gen_kwargs["max_gen_toks"] == 512 and not gen_kwargs["do_sample"]


def test_hub_mode_reads_the_named_data_set(setup, tmp_path):
    hub = tmp_path / "hub"
    assert run("data", "export", setup["refs"], "--hf", hub, "-q").exit_code == 0
    out = tmp_path / "tasks"
    result = run("export", "lm-eval", out, "--data", f"hf:{hub}:test", "--hub", "--setting", "zero-shot", "-q")
    assert result.exit_code == 0, result.stderr
    config = yaml.safe_load((out / "varm_zero_shot.yaml").read_text(encoding="utf-8").replace("!function", ""))
    assert config["dataset_path"] == str(hub) and config["test_split"] == "test"
    assert not (out / "data").exists()
    task = TaskManager(include_path=str(out), include_defaults=False).load(["varm_zero_shot"])["tasks"]
    assert [d["id"] for d in task["varm_zero_shot"].test_docs()] == [r.id for r in ITEMS]


def test_bad_options_are_one_line(setup, tmp_path):
    result = run("export", "lm-eval", tmp_path / "a", "--setting", "few-shot")
    assert result.exit_code == 2 and "--setting" in result.stderr
    result = run("export", "lm-eval", setup["folder"] / "tasks")
    assert result.exit_code == 2 and "--overwrite" in result.stderr
    result = run("export", "lm-eval", tmp_path / "b", "--hub", "--data", setup["refs"])
    assert result.exit_code == 2 and "hf:NAME:SPLIT" in result.stderr
    result = run("export", "lm-eval", tmp_path / "c", "--prefix", "9bad name")
    assert result.exit_code == 2 and "--prefix" in result.stderr
