"""``verimod train baseline`` on a throwaway Typer app."""

from __future__ import annotations

import json

import pytest

from verimod.models.baseline import BaselineModel
from verimod.tasks.varm.starter import load_starter


@pytest.fixture
def small_file(tmp_path):
    """60 train and 12 dev records of the starter set."""
    rows = load_starter("train")[:60] + load_starter("dev")[:12]
    path = tmp_path / "small.jsonl"
    path.write_text(
        "".join(json.dumps(r.model_dump(exclude_none=True), ensure_ascii=False) + "\n" for r in rows),
        encoding="utf-8",
    )
    return path


def test_train_baseline_saves_a_model_and_scores_the_dev_split(run, small_file, tmp_path):
    out = tmp_path / "model"
    result = run("train", "baseline", "--data", small_file, "--out", out, "--seed", 1)
    assert result.exit_code == 0, result.stderr
    assert "Trained on 60 'train' records" in result.stdout and "dev (n = 12)" in result.stdout
    assert "JREM" in result.stdout and "test (n" not in result.stdout
    model = BaselineModel.load(out)
    assert model.n_train == 60 and model.seed == 1


def test_train_baseline_json_and_default_folder_in_the_cache(run, small_file):
    result = run("train", "baseline", "--data", small_file, "--json", "-")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["n_train"] == 60 and set(report["scores"]) == {"dev"}
    assert report["spec"] == f"baseline:{report['model_dir']}"
    assert 0 <= report["scores"]["dev"]["jrem"] <= 1 and report["scores"]["dev"]["format_rate"] == 1.0
    BaselineModel.load(report["model_dir"])


def test_bad_input_is_one_line_and_exit_2(run, small_file, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(small_file.read_text(encoding="utf-8") + '{"id": "x", "text": "t", "label": "harmfull"}\n')
    result = run("train", "baseline", "--data", bad)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and "bad.jsonl:73" in result.stderr
    missing = run("train", "baseline", "--data", tmp_path / "nope.jsonl")
    assert missing.exit_code == 2 and missing.stderr.count("\n") == 1
    no_split = run("train", "baseline", "--data", small_file, "--split", "test")
    assert no_split.exit_code == 2 and "no records with split 'test'" in no_split.stderr


def test_help_has_an_example(run):
    result = run("train", "baseline", "--help")
    assert result.exit_code == 0 and "Example:" in result.stdout


def test_partial_references_train_the_fields_they_carry(run, tmp_path):
    data = tmp_path / "partial.jsonl"
    data.write_text(
        '{"id": "a", "text": "一条足够长的评论文本内容。", "label": "harmful"}\n'
        '{"id": "b", "text": "今天天气很好，出去走走。", "label": "non_harmful"}\n',
        encoding="utf-8",
    )
    result = run("train", "baseline", "--data", data, "--json", "-")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["trained_on"] == {
        "target": 0,
        "target_type": 0,
        "target_explicitness": 0,
        "stance": 0,
        "label": 2,
        "category": 0,
    }
