import json

import pytest

from verimod.core.errors import InputError
from verimod.core.runs import RunManifest, RunStore, SampleRecord


def manifest(run_id="r1"):
    return RunManifest(
        run_id=run_id,
        model="scripted:x",
        backend={"backend": "scripted"},
        setting="zero-shot",
        prompt={},
        params={},
        engine={},
        data={"n": 2},
        verimod_version="0",
        parser_version="p",
    )


def test_create_append_reopen(tmp_path):
    store = RunStore.create(tmp_path, manifest(), [{"id": "a"}, {"id": "b"}])
    store.append(SampleRecord(id="a", prompt_hash="h", output="x"))
    store.append(SampleRecord(id="b", prompt_hash="h", error="boom", error_kind="server"))
    store.append(SampleRecord(id="b", prompt_hash="h", output="y"))  # a retry supersedes
    store.close()
    reopened = RunStore.open(tmp_path / "r1")
    samples = reopened.samples()
    assert samples[("a", 0)].output == "x" and samples[("b", 0)].output == "y"
    assert reopened.manifest.model == "scripted:x"
    with pytest.raises(FileExistsError):
        RunStore.create(tmp_path, manifest(), [])


@pytest.mark.parametrize("tail", [b'{"id": "c", "prompt', b"{", b'{"id": "c"' + "中".encode()[:2]])
def test_torn_last_line_is_cut_on_reopen(tmp_path, tail):
    store = RunStore.create(tmp_path, manifest(), [])
    store.append(SampleRecord(id="a", prompt_hash="h", output="x"))
    store.close()
    path = tmp_path / "r1" / "samples.jsonl"
    good = path.read_bytes()
    with open(path, "ab") as handle:
        handle.write(tail)
    reopened = RunStore.open(tmp_path / "r1")
    assert path.read_bytes() == good
    assert list(reopened.samples()) == [("a", 0)]


def test_torn_only_line_and_long_lines(tmp_path):
    store = RunStore.create(tmp_path, manifest(), [])
    store.append(SampleRecord(id="a", prompt_hash="h", output="长" * 200_000))
    store.close()
    path = tmp_path / "r1" / "samples.jsonl"
    with open(path, "ab") as handle:
        handle.write(b'{"id": "b", "output": "' + "字".encode() * 100_000)
    assert RunStore.open(tmp_path / "r1").samples()[("a", 0)].output == "长" * 200_000
    path.write_bytes(b'{"id": "torn')
    RunStore.open(tmp_path / "r1")
    assert path.read_bytes() == b""


def test_not_a_run_directory(tmp_path):
    with pytest.raises(InputError, match="not a run directory"):
        RunStore.open(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"run_id": 1}), encoding="utf-8")
    with pytest.raises(InputError, match="unreadable manifest"):
        RunStore.open(tmp_path)


def test_model_label_names_the_adapter():
    plain = manifest("r1")
    assert plain.model_label == "scripted:x"
    tuned = plain.model_copy(update={"model": "hf:/m", "backend_options": {"adapter": "sft/adapter"}})
    assert tuned.model_label == "hf:/m + LoRA sft/adapter"
