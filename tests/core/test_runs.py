import json
import os
import subprocess
import sys
import threading

import pytest

from tests.helpers.syncs import record_syncs
from verimod.core.errors import InputError
from verimod.core.runs import RunManifest, RunStore, SampleRecord, resolve_run_dir, run_ids, short_ids


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
    with pytest.raises(InputError, match="a run with this id exists already"):
        RunStore.create(tmp_path, manifest(), [])


TORN_TAILS = [b'{"id": "c", "prompt', b"{", b'{"id": "c"' + "中".encode()[:2]]


def torn_run(root, tail):
    """A run with one finished sample and ``tail``, a line torn off mid-write; returns the
    samples file and its content before the tear."""
    store = RunStore.create(root, manifest(), [])
    store.append(SampleRecord(id="a", prompt_hash="h", output="x"))
    store.close()
    path = root / "r1" / "samples.jsonl"
    good = path.read_bytes()
    with open(path, "ab") as handle:
        handle.write(tail)
    return path, good


@pytest.mark.parametrize("tail", TORN_TAILS)
def test_torn_last_line_is_cut_on_reopen(tmp_path, tail):
    path, good = torn_run(tmp_path, tail)
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


@pytest.mark.parametrize("tail", TORN_TAILS)
def test_read_only_store_skips_a_torn_line_and_never_writes(tmp_path, tail):
    path, _ = torn_run(tmp_path, tail)
    torn = path.read_bytes()
    stamp = path.stat().st_mtime_ns
    reader = RunStore.open(tmp_path / "r1", read_only=True)
    assert list(reader.samples()) == [("a", 0)]
    assert path.read_bytes() == torn and path.stat().st_mtime_ns == stamp
    for write in (reader.save_manifest, lambda: reader.append({"id": "b"}), lambda: reader.write_results({}, [])):
        with pytest.raises(RuntimeError, match="read-only"):
            write()
    assert path.read_bytes() == torn


def test_read_only_store_still_reports_a_bad_line_before_the_end(tmp_path):
    store = RunStore.create(tmp_path, manifest(), [])
    store.close()
    path = tmp_path / "r1" / "samples.jsonl"
    path.write_bytes(b'{"id": "a", "prompt_hash": "h"}\n{oops}\n{"id": "torn')
    with pytest.raises(InputError, match=r"samples.jsonl:2: invalid JSON"):
        RunStore.open(tmp_path / "r1", read_only=True).samples()


def make_runs(root, names):
    for name in names:
        RunStore.create(root, manifest(name), [])
    return root


def test_resolve_run_dir_by_path_id_prefix_and_short_id(tmp_path, monkeypatch):
    ids = ["20261201-134846-baseline-zero-shot", "20261201-134846-baseline-taxonomy", "20261202-090000-gguf-k-shot"]
    root = make_runs(tmp_path / "runs", ids)
    assert resolve_run_dir(root / ids[0], root) == root / ids[0]
    assert resolve_run_dir(ids[1], root) == root / ids[1]
    assert resolve_run_dir("20261202", root) == root / ids[2]
    assert resolve_run_dir(root / "20261202", "elsewhere") == root / ids[2]  # a prefix in a folder given as a path
    for run_id, short in short_ids(run_ids(root)).items():
        assert resolve_run_dir(short, root) == root / run_id
    monkeypatch.chdir(tmp_path)  # the default runs folder is ./runs
    assert resolve_run_dir("20261202") == root.relative_to(tmp_path) / ids[2]


def test_resolve_run_dir_errors_are_one_line(tmp_path):
    root = make_runs(tmp_path / "runs", ["20261201-134846-baseline-zero-shot", "20261201-134846-baseline-taxonomy"])
    with pytest.raises(InputError, match=r"ambiguous run id: 2 runs in .* start with it \(20261201-134846-baseline-t"):
        resolve_run_dir("20261201", root)
    with pytest.raises(InputError, match=r"did you mean '20261201-134846-baseline-taxonomy'\?"):
        resolve_run_dir("20261201-134846-baseline-taxonomi", root)
    with pytest.raises(InputError, match="holds no runs"):
        resolve_run_dir("20261201", tmp_path / "none")
    with pytest.raises(InputError, match="not a run directory"):
        resolve_run_dir(tmp_path, root)


def test_short_ids_are_short_unique_and_resolve(tmp_path):
    slug = "qwen2.5-7b-instruct-q4_k_m-with-a-long-name.gguf"
    ids = [
        "20261201-134846-baseline-zero-shot",
        "20261201-134847-baseline-zero-shot",
        "20261201-134847-baseline-zero-shot-2",  # started in the same second, same model and setting
        f"20261201-134848-{slug}-zero-shot",
        f"20261201-134848-{slug}-taxonomy",
        f"20261201-134848-{slug}-k-shot",
        "my-own-name",
    ]
    root = make_runs(tmp_path / "runs", ids)
    shorts = short_ids(ids)
    assert shorts["20261201-134846-baseline-zero-shot"] == "20261201-134846"
    assert shorts["my-own-name"] == "my-own-name"
    assert len(set(shorts.values())) == len(ids)
    assert all(len(short) <= 20 for short in shorts.values())
    assert shorts[f"20261201-134848-{slug}-k-shot"].startswith("20261201-134848~")
    for run_id, short in shorts.items():
        assert resolve_run_dir(short, root) == root / run_id


# -- issue #20: runs that cannot collide -----------------------------------------------------------


def test_creations_of_one_id_at_once_each_get_their_own_folder(tmp_path):
    """Two evals in the same second chose the same id; the loser crashed (check, then create)."""
    barrier = threading.Barrier(8)
    made, failed = [], []

    def create():
        barrier.wait()
        try:
            made.append(RunStore.create(tmp_path, manifest("20261201-120000-m-zero-shot"), [{"id": "a"}], unique=True))
        except Exception as exc:
            failed.append(exc)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == []
    base = "20261201-120000-m-zero-shot"
    assert sorted(s.manifest.run_id for s in made) == sorted([base] + [f"{base}-{n}" for n in range(2, 9)])
    for store in made:
        on_disk = json.loads((store.directory / "manifest.json").read_text(encoding="utf-8"))
        assert store.directory.name == on_disk["run_id"] == store.manifest.run_id
        assert (store.directory / "references.jsonl").read_text(encoding="utf-8") == '{"id": "a"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(s.manifest.run_id for s in made)


def test_a_creation_that_dies_leaves_no_run_folder_and_leftovers_are_removed(tmp_path):
    def rows():
        yield {"id": "a"}
        raise KeyboardInterrupt  # killed while writing the references

    with pytest.raises(KeyboardInterrupt):
        RunStore.create(tmp_path, manifest(), rows())
    assert list(tmp_path.iterdir()) == []  # no orphan folder: the run never appeared
    stale = tmp_path / ".creating-killed"  # what a SIGKILL during creation leaves: unlocked, old
    stale.mkdir()
    os.utime(stale, (0, 0))
    live = tmp_path / ".creating-live"  # a creation going on (recent): left alone
    live.mkdir()
    dead_spool = tmp_path / ".references-999999999-x.jsonl.spool"  # spooled by a process that is gone
    own_spool = tmp_path / f".references-{os.getpid()}-x.jsonl.spool"
    for spool in (dead_spool, own_spool):
        spool.write_text("{}\n", encoding="utf-8")
    RunStore.create(tmp_path, manifest("r2"), [])
    assert not stale.exists() and not dead_spool.exists()
    assert live.exists() and own_spool.exists()


def test_stray_temporary_files_are_removed_when_a_run_is_reopened_for_writing(tmp_path):
    RunStore.create(tmp_path, manifest(), []).release()
    stray = tmp_path / "r1" / ".manifest.json.k3x9.tmp"  # an atomic write killed before its rename
    stray.write_text("{", encoding="utf-8")
    RunStore.open(tmp_path / "r1", read_only=True)
    assert stray.exists()  # read-only: nothing written, nothing removed
    RunStore.open(tmp_path / "r1").release()
    assert not stray.exists()


HOLD = (
    "import sys, time; from verimod.core.runs import RunStore; s = RunStore.open(sys.argv[1]); "
    "print('held', flush=True); time.sleep(60)"
)
OPEN = "import sys; from verimod.core.runs import RunStore; RunStore.open(sys.argv[1])"


def test_the_lock_excludes_other_processes_and_is_shared_within_one(tmp_path):
    store = RunStore.create(tmp_path, manifest(), [])
    again = RunStore.open(tmp_path / "r1")  # this process holds it: shared
    assert store.holder()["pid"] == os.getpid() and store.shown_status() == f"running (pid {os.getpid()})"
    other = subprocess.run([sys.executable, "-c", OPEN, str(tmp_path / "r1")], capture_output=True, text=True)
    assert other.returncode != 0 and f"the run is in use by process {os.getpid()} since " in other.stderr
    store.release()
    assert store.holder() is not None  # still held by the second share
    again.release()
    assert store.holder() is None and store.shown_status() == "interrupted (resumable)"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "r1")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(InputError, match=f"in use by process {holder.pid} since"):
            RunStore.open(tmp_path / "r1")
        assert RunStore.open(tmp_path / "r1", read_only=True).shown_status() == f"running (pid {holder.pid})"
    finally:
        holder.kill()
        holder.wait(10)
    RunStore.open(tmp_path / "r1").release()  # the kernel freed the killed holder's lock


def test_sample_index_and_finished_keys_read_ids_exactly(tmp_path):
    store = RunStore.create(tmp_path, manifest(), [])
    odd = ['a"b', "c\\d", "中文", 'e, "repeat": 9,']
    for item_id in odd:
        store.append(SampleRecord(id=item_id, prompt_hash="h", output='x", "error": null, "error_kind": "y'))
    store.append(SampleRecord(id="f", repeat=1, prompt_hash="h", error="boom", error_kind="server"))
    store.append(SampleRecord(id="f", repeat=2, prompt_hash="h", output="fine"))
    store.append(SampleRecord(id="g", prompt_hash="h", output="first"))
    store.append(SampleRecord(id="g", prompt_hash="h", error="later failure", error_kind="timeout"))
    store.close()
    with open(tmp_path / "r1" / "samples.jsonl", "a", encoding="utf-8") as handle:  # another tool's key order
        handle.write(json.dumps({"prompt_hash": "h", "repeat": 3, "id": "f", "output": "z"}) + "\n")
    assert store.finished_keys() == {(i, 0) for i in odd} | {("f", 2), ("f", 3)}
    index = store.sample_index()
    assert set(index) == {0, 1, 2, 3} and set(index[0]) == {*odd, "g"}
    with store.sample_reader() as read:
        assert read(index[0]["g"]).error == "later failure"  # the latest line
        assert read(index[3]["f"]).output == "z"
        assert {read(index[0][i]).id for i in odd} == set(odd)
    assert store.samples().keys() == {(i, r) for r, ids in index.items() for i in ids}


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to name the synced files")
def test_the_files_a_run_promises_are_synced_before_they_replace_the_old_ones(tmp_path, monkeypatch):
    store = RunStore.create(tmp_path, manifest(), [{"id": "a"}])
    events = record_syncs(monkeypatch)
    store.save_manifest()
    store.write_results({"n": 1}, [{"id": "a"}])
    store.release()
    replaced = [name for kind, name in events if kind == "replace"]
    assert replaced == ["manifest.json", "items.jsonl", "scores.json"]
    for name in replaced:  # each one: its temporary file synced, replaced, the folder synced
        at = events.index(("replace", name))
        assert events[at - 1][0] == "fsync" and events[at - 1][1].startswith(f".{name}.")
        assert events[at + 1] == ("fsync", "folder")
