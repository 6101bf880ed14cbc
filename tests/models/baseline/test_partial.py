"""Training on partial records, per-file weights, recipes and the shipped default model."""

from __future__ import annotations

import json

import pytest

from verimod.core.errors import InputError
from verimod.models.baseline import BaselineModel, train_baseline
from verimod.models.baseline.default import default_identity, has_prebuilt, prebuilt_dir
from verimod.models.baseline.recipe import Recipe, build_from_recipe, load_recipe, load_training_data
from verimod.models.baseline.training import field_counts, learns, training_data_sha256
from verimod.tasks.varm.codebook import FIELDS, codebook_violations
from verimod.tasks.varm.parser import parse_rationale
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.starter import load_starter

CODE = "喵喵怪"  # a made-up word: only the label-only records below carry it


def _label_only(n: int) -> list[VarmReference]:
    """Label-only records (as a converted real data set gives): the made-up word means harmful."""
    moods = ("烦人", "讨厌", "恶心")
    harmful = [
        VarmReference(id=f"lab-h{k}", text=f"这些{CODE}真是{moods[k % 3]}，第{k}次了", label="harmful")
        for k in range(n)
    ]
    calm = [
        VarmReference(id=f"lab-n{k}", text=f"今天去公园散步，天气第{k}次这么好", label="non_harmful") for k in range(n)
    ]
    return harmful + calm


def test_each_field_learns_from_the_records_that_carry_it():
    complete = load_starter("train")[:120]
    partial = _label_only(40)
    references = complete + partial
    counts = field_counts(references)
    assert counts["label"] == 200 and counts["stance"] == sum(r.label == "non_harmful" for r in complete)
    assert counts["category"] == sum(r.label == "harmful" for r in complete)
    assert counts["target_type"] == 120 and counts["target"] == sum(r.target != "no_clear_target" for r in complete)
    assert not learns(partial[0], "category") and not learns(partial[0], "stance")
    model = train_baseline(references, seed=0)
    assert model.summary.fields == counts and model.summary.augmented > 0
    probe = [f"那些{CODE}又来了", "今天去公园散步"]
    predictions = model.predict(probe)
    assert predictions[0].record.label == "harmful" and predictions[1].record.label == "non_harmful"
    without = train_baseline(complete, seed=0).predict(probe)
    assert without[0].probabilities["label"]["harmful"] < predictions[0].probabilities["label"]["harmful"]
    for prediction in predictions:  # the decoder still enforces the codebook
        assert not codebook_violations(prediction.record)
        assert parse_rationale(prediction.rationale).values == tuple(getattr(prediction.record, f) for f in FIELDS)


def test_weights_and_their_checks():
    references = load_starter("train")[:80]
    with pytest.raises(ValueError, match="one non-negative number per training record"):
        train_baseline(references, weights=[1.0] * 79)
    with pytest.raises(ValueError, match="no training record carries a label"):
        train_baseline([r.model_copy(update={"label": None, "category": None}) for r in references[:5]])
    first = train_baseline(references, seed=0, weights=[1.0] * 80)
    heavier = train_baseline(references, seed=0, weights=[1.0] * 40 + [3.0] * 40)
    assert first.data_sha256 == training_data_sha256(references)  # weights of 1 leave the hash as it was
    assert heavier.data_sha256 != first.data_sha256 and heavier.fingerprint != first.fingerprint


def _write(path, rows):
    path.write_text("".join(json.dumps(r.model_dump(exclude_none=True), ensure_ascii=False) + "\n" for r in rows))
    return path


def test_cli_trains_on_several_files_with_weights_and_prints_field_counts(run, tmp_path):
    complete = _write(tmp_path / "complete.jsonl", load_starter("train")[:60] + load_starter("dev")[:10])
    labels = _write(tmp_path / "labels.jsonl", _label_only(20))
    out = tmp_path / "model"
    files = ["--data", complete, "--data", labels, "--weight", 1, "--weight", 0.5]
    result = run("train", "baseline", *files, "--out", out)
    assert result.exit_code == 0, result.output
    assert "Trained on 100 'train' records" in result.stdout and "Records that trained each field" in result.stdout
    assert "label" in result.stdout and "100" in result.stdout and "dev (n = 10)" in result.stdout
    model = BaselineModel.load(out)
    assert model.summary.fields["label"] == 100 and model.summary.fields["stance"] < 60
    assert model.leakage.texts and model.leakage.hashes.size == 0  # --leakage store (default)
    report = json.loads(run("train", "baseline", "--data", labels, "--leakage", "hash", "--json", "-").stdout)
    assert report["trained_on"]["label"] == 40 and report["trained_on"]["stance"] == 0
    assert BaselineModel.load(report["model_dir"]).leakage.hashes.size == 40
    bad = run("train", "baseline", "--data", complete, "--data", labels, "--weight", 1)
    assert bad.exit_code == 2 and "1 weight(s) for 2 --data file(s)" in bad.stderr
    both = run("train", "baseline", "--data", complete, "--recipe", "default")
    assert both.exit_code == 2 and "not both" in both.stderr


def test_recipes_resolve_sources_fields_weights_and_leakage(tmp_path):
    data = _write(tmp_path / "mine.jsonl", load_starter("train")[:50])
    recipe = Recipe.model_validate(
        {
            "name": "mine",
            "sources": [
                {"name": "mine", "file": "mine.jsonl", "fields": ["label"], "weight": 2.0, "leakage": "hash"},
                {"name": "starter", "bundled": "starter", "split": "train", "weight": 1.0},
                {"name": "later", "file": "not-yet.jsonl", "optional": True},
            ],
        }
    )
    resolved = load_training_data(recipe, None, tmp_path)
    assert len(resolved.references) == 50 + len(load_starter("train"))
    assert all(r.stance is None and r.label is not None for r in resolved.references[:50])  # fields restricted
    assert resolved.weights[:50] == [2.0] * 50 and resolved.weights[50] == 1.0
    assert resolved.notes == ["optional source 'later' is absent: skipped"]
    assert resolved.leakage.hashes.size == 50 and resolved.leakage.bundled[0].source == "starter"
    assert resolved.sources[0]["fields"]["label"] == 50 and resolved.sources[0]["fields"]["stance"] == 0
    assert len(resolved.sources[0]["files"][0]["sha256"]) == 64
    model, manifest = build_from_recipe(recipe, tmp_path, None, tmp_path / "built")
    assert BaselineModel.load(tmp_path / "built").fingerprint == model.fingerprint == manifest["fingerprint"]
    assert manifest["records"] == len(resolved.references) and set(manifest["sizes"]) == {
        "model.json",
        "vocab.json",
        "arrays.npz",
    }
    assert data.name in json.dumps(manifest["sources"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not valid JSON"),
        ('{"name": "x", "sources": [{"name": "a", "file": "f", "bundled": "starter"}]}', "exactly one of"),
        ('{"name": "x", "sources": [{"name": "a", "file": "f"}], "typo": 1}', "typo"),
        ('{"name": "x", "sources": [{"name": "a", "file": "f"}], "config": {"c": -1}}', "greater than 0"),
    ],
)
def test_bad_recipes_are_one_line_input_errors(tmp_path, content, message):
    path = tmp_path / "recipe.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message) as info:
        load_recipe(path)
    assert "\n" not in str(info.value)


def test_the_default_recipe_reads_no_held_out_split():
    recipe, _ = load_recipe("default")
    for source in recipe.sources:
        assert source.split in (None, "train")
        assert source.path is None or ("test" not in source.path and "dev" not in source.path)


def test_the_shipped_default_model_loads_and_describes_its_training():
    assert has_prebuilt(), "the default model must be shipped in resources/baseline/default"
    model = BaselineModel.load(prebuilt_dir())
    manifest = json.loads((prebuilt_dir() / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["fingerprint"] == model.fingerprint == default_identity()["fingerprint"]
    names = [s["name"] for s in manifest["sources"]]
    assert names[:2] == ["cold-train", "swsr-train"] and "starter-train" in names
    assert model.summary.fields["label"] >= 25_000 and model.leakage.hashes.size > 25_000
    assert not model.leakage.texts  # no COLD or SWSR text is shipped, not even for the leakage check
    assert sum((prebuilt_dir() / name).stat().st_size for name in manifest["sizes"]) < 8_000_000
    predictions = model.predict(["河南人都是骗子，偷井盖的", "今天天气真好，出去玩吧"])
    assert [p.record.label for p in predictions] == ["harmful", "non_harmful"]
