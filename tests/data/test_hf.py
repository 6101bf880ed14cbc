"""Hugging Face data sets: ``hf:`` sources, local ``datasets`` folders and Parquet files wherever
references are read, and ``verimod data export --hf`` (Parquet + dataset card). Offline: every
data set is a local folder or file."""

import json

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import rationale, reference_row, write_lines
from verimod.cli.app import app
from verimod.core.errors import InputError
from verimod.data.hf import parse_hf_source, rows_sha256, table_row
from verimod.tasks.varm.io import load_references, reference_problems
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.starter import load_starter, starter_path

datasets = pytest.importorskip("datasets", reason="the datasets extra is not installed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(autouse=True)
def _datasets_cache(tmp_path, monkeypatch):
    """Keep the datasets cache inside the test's folder."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def by_id(references):
    return {r.id: r.model_dump() for r in references}


@pytest.fixture
def exported(tmp_path):
    """The starter set exported as a hub folder."""
    folder = tmp_path / "hub"
    result = run("data", "export", starter_path(), "--hf", folder, "--license", "cc-by-4.0", "-q")
    assert result.exit_code == 0, result.stderr
    return folder


def test_parse_hf_source():
    assert parse_hf_source("hf:org/name") == ("org/name", None)
    assert parse_hf_source("hf:org/name:test") == ("org/name", "test")
    assert parse_hf_source("hf:/data/x:validation.v2") == ("/data/x", "validation.v2")
    with pytest.raises(InputError, match="give a data set after hf:"):
        parse_hf_source("hf:")


def test_table_row_nulls_are_absent_meta_json_is_decoded_split_filled():
    row = {"id": "a", "label": None, "tags": None, "meta": '{"k": [1]}', "split": None}
    assert table_row(row, "dev") == {"id": "a", "meta": {"k": [1]}, "split": "dev"}
    assert table_row({"id": "a", "split": "train"}, "dev") == {"id": "a", "split": "train"}


def test_export_writes_parquet_per_split_and_a_card_that_datasets_loads(exported):
    files = sorted(p.name for p in (exported / "data").iterdir())
    assert files == [f"{s}-00000-of-00001.parquet" for s in ("dev", "test", "train")]
    text = (exported / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["license"] == "cc-by-4.0" and front["language"] == ["zh"]
    assert {s["split"]: s["path"] for s in front["configs"][0]["data_files"]} == {
        "train": "data/train-*",
        "dev": "data/dev-*",
        "test": "data/test-*",
    }
    assert {s["name"]: s["num_examples"] for s in front["dataset_info"]["splits"]} == {
        "train": 436,
        "dev": 66,
        "test": 128,
    }
    assert "No data card was given" in text  # the generated card says so
    loaded = datasets.load_dataset(str(exported))  # what the hub would serve, read offline
    assert {name: len(part) for name, part in loaded.items()} == {"train": 436, "dev": 66, "test": 128}


def test_round_trip_through_hf_folder_gives_the_same_references(exported):
    starter = load_starter()
    assert by_id(load_references(f"hf:{exported}")) == by_id(starter)
    assert by_id(load_references(exported)) == by_id(starter)  # a bare folder works too
    test_split = load_references(f"hf:{exported}:test")
    assert by_id(test_split) == by_id(load_starter("test"))
    parquet = exported / "data" / "dev-00000-of-00001.parquet"
    assert by_id(load_references(parquet)) == by_id(load_starter("dev"))


def test_save_to_disk_folders_and_the_split_rule(tmp_path):
    other = {"label": "non_harmful", "category": "non_attack", "stance": "neutral_mention"}
    rows = [reference_row("a"), reference_row("b", **other)]
    whole = datasets.Dataset.from_list(rows)  # no split column: the split comes from the data set
    whole.save_to_disk(str(tmp_path / "single"))
    assert [r.split for r in load_references(tmp_path / "single")] == [None, None]
    datasets.DatasetDict({"validation": whole}).save_to_disk(str(tmp_path / "dict"))
    refs = load_references(f"hf:{tmp_path / 'dict'}:validation")
    assert [(r.id, r.split) for r in refs] == [("a", "validation"), ("b", "validation")]
    with pytest.raises(InputError, match="no split 'test'; it has validation"):
        load_references(f"hf:{tmp_path / 'dict'}:test")


def test_round_trip_keeps_context_lists_meta_and_partial_fields(tmp_path):
    rows = [
        {**reference_row("a"), "context": ["上文一", "上文二"], "meta": {"source": "x", "n": [1, 2]}, "tags": ["q"]},
        {"id": "b", "text": "只有标签的条目", "label": "non_harmful", "split": "dev"},
        {**reference_row("c"), "context": "一段上文", "cot": rationale()},
    ]
    source = write_lines(tmp_path / "refs.jsonl", rows)
    result = run("data", "export", source, "--hf", tmp_path / "hub", "--partial", "-q")
    assert result.exit_code == 0, result.stderr
    back = by_id(load_references(f"hf:{tmp_path / 'hub'}"))
    original = by_id(load_references(source))
    assert back["a"] == {**original["a"], "split": "test"}  # no split field: the default split
    assert back["b"] == original["b"]  # partial: the absent fields stay absent
    # a text context becomes a one-item list when another item has a list (same prompt text)
    assert back["c"] == {**original["c"], "split": "test", "context": ["一段上文"]}


def test_bad_rows_are_named_by_source_row_and_field(tmp_path):
    rows = [reference_row("a"), reference_row("b", label="harmfull"), reference_row("a")]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "bad.parquet")
    with pytest.raises(InputError) as err:
        load_references(tmp_path / "bad.parquet")
    assert str(err.value).startswith(f"{tmp_path / 'bad.parquet'}:2: field 'label': ")
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(tmp_path / "d"))
    count, problems = reference_problems(f"hf:{tmp_path / 'd'}")
    assert count == 3
    assert [(p.path, p.line, p.field) for p in problems] == [
        (f"hf:{tmp_path / 'd'}:test", 2, "label"),
        (f"hf:{tmp_path / 'd'}:test", 3, "id"),
    ]
    result = run("validate", f"hf:{tmp_path / 'd'}:test")
    assert result.exit_code == 2
    assert f"hf:{tmp_path / 'd'}:test:2: field 'label'" in result.stdout


def test_hub_names_go_to_load_dataset_and_fail_offline_in_one_line(tmp_path, monkeypatch):
    result = run("score", tmp_path / "p.jsonl", "--ref", "hf:verimod-test/absent:test")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: hf:verimod-test/absent:test: cannot load the data set: ")
    assert len(result.stderr.strip().splitlines()) == 1
    calls = []
    local = datasets.Dataset.from_list([reference_row("a")])

    def fake_load_dataset(name, split=None):
        calls.append((name, split))
        return local

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    refs = load_references("hf:org/varm-open:test")
    assert calls == [("org/varm-open", "test")] and refs[0].split == "test"


def test_missing_datasets_package_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "datasets", None)
    result = run("validate", "hf:org/name")
    assert result.exit_code == 2 and 'pip install ".[datasets]" in the verimod folder' in result.stdout


def test_score_validate_eval_and_profile_read_hf_sources(exported, tmp_path, monkeypatch):
    """The same numbers from a JSONL file and from its hub folder."""
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    test_items = load_starter("test")
    ref_file = write_lines(tmp_path / "test.jsonl", [r.model_dump(exclude_none=True) for r in test_items])
    preds = write_lines(
        tmp_path / "p.jsonl", [{"id": r.id, "output": r.cot if i % 4 else "无锚点"} for i, r in enumerate(test_items)]
    )
    from_file = run("score", preds, "--ref", ref_file, "--json", "-")
    from_hub = run("score", preds, "--ref", f"hf:{exported}:test", "--json", "-")
    assert from_file.exit_code == from_hub.exit_code == 0, from_hub.stderr
    assert json.loads(from_file.stdout) == json.loads(from_hub.stdout)
    assert run("validate", f"hf:{exported}", "--splits").exit_code == 0
    profile = run("data", "profile", f"hf:{exported}:test", "--json", "-", "-q")
    assert profile.exit_code == 0, profile.stderr
    assert json.dumps(json.loads(profile.stdout)).count('"records": 128') >= 1
    runs = tmp_path / "runs"
    result = run("eval", "--model", f"scripted:{preds}", "--data", f"hf:{exported}:test", "--runs-dir", runs, "-q")
    assert result.exit_code == 0, result.stderr
    manifest = json.loads(next(runs.glob("*/manifest.json")).read_text(encoding="utf-8"))
    assert manifest["data"]["path"] == f"hf:{exported.resolve()}:test"
    assert manifest["data"]["sha256"] == rows_sha256(r.model_dump(exclude_none=True) for r in test_items)
    scores = json.loads(next(runs.glob("*/scores.json")).read_text(encoding="utf-8"))
    assert {k: v for k, v in scores.items() if k != "run_id"} == json.loads(from_file.stdout)


def test_export_card_front_matter_overwrite_and_attach(tmp_path):
    refs = write_lines(tmp_path / "refs.jsonl", [reference_row("a", split="train"), reference_row("b", split="test")])
    (tmp_path / "DATA_CARD.md").write_text(
        "---\nlicense: apache-2.0\npretty_name: Card Name\nconfigs: [{config_name: wrong}]\n---\n"
        "# The card\n\nSources…\n",
        encoding="utf-8",
    )
    (tmp_path / "LICENSE-COLD").write_text("Apache-2.0 text", encoding="utf-8")
    out = tmp_path / "hub"
    result = run("data", "export", refs, "--hf", out, "--attach", tmp_path / "LICENSE-COLD")
    assert result.exit_code == 0, result.stderr
    assert "card from " + str(tmp_path / "DATA_CARD.md") in " ".join(result.stdout.split())
    text = (out / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["license"] == "apache-2.0" and front["pretty_name"] == "Card Name"
    assert front["configs"][0]["config_name"] == "default"  # ours: it describes the files written
    assert text.endswith("# The card\n\nSources…\n")
    assert (out / "LICENSE-COLD").read_text(encoding="utf-8") == "Apache-2.0 text"
    again = run("data", "export", refs, "--hf", out)
    assert again.exit_code == 2 and "--overwrite" in again.stderr
    (out / "data" / "dev-00000-of-00001.parquet").write_bytes(b"stale")
    assert run("data", "export", refs, "--hf", out, "--overwrite", "-q").exit_code == 0
    assert sorted(p.name for p in (out / "data").iterdir()) == [
        "test-00000-of-00001.parquet",
        "train-00000-of-00001.parquet",
    ]


def test_export_refuses_invalid_references_and_bad_split_names(tmp_path):
    bad = write_lines(tmp_path / "bad.jsonl", [reference_row("a", category="non_attack")])
    result = run("data", "export", bad, "--hf", tmp_path / "o")
    assert result.exit_code == 2 and "breaks the codebook" in result.stderr
    partial = write_lines(tmp_path / "p.jsonl", [{"id": "a", "text": "文本", "label": "harmful"}])
    assert run("data", "export", partial, "--hf", tmp_path / "o").exit_code == 2
    odd = write_lines(tmp_path / "odd.jsonl", [reference_row("a", split="hold out")])
    result = run("data", "export", odd, "--hf", tmp_path / "o2")
    assert result.exit_code == 2 and "not a Hugging Face split name" in result.stderr


def test_export_shards(tmp_path):
    refs = write_lines(tmp_path / "r.jsonl", [reference_row(f"i{k}") for k in range(5)])
    assert run("data", "export", refs, "--hf", tmp_path / "h", "--shard-rows", "2", "-q").exit_code == 0
    names = sorted(p.name for p in (tmp_path / "h" / "data").iterdir())
    assert names == [f"test-0000{i}-of-00003.parquet" for i in range(3)]
    assert [r.id for r in load_references(f"hf:{tmp_path / 'h'}:test")] == [f"i{k}" for k in range(5)]


def test_real_cold_round_trip(shared_data, tmp_path):
    """COLD test converted to partial references, exported and read back unchanged."""
    from verimod.data.adapters import convert

    converted = convert("cold", shared_data / "cold" / "test.csv").references
    source = write_lines(tmp_path / "cold.jsonl", [r.model_dump(exclude_none=True) for r in converted])
    result = run("data", "export", source, "--hf", tmp_path / "cold-hub", "--partial", "-q")
    assert result.exit_code == 0, result.stderr
    back = load_references(f"hf:{tmp_path / 'cold-hub'}")
    assert len(back) == len(converted) == 5323
    expected = [VarmReference.model_validate({**r.model_dump(), "split": r.split or "test"}) for r in converted]
    assert by_id(back) == by_id(expected)
