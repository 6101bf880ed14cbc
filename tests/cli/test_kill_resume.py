"""Runs stopped from outside: SIGKILL or SIGTERM mid-way, a second process resuming a live run.
A stopped run resumes without repeating finished samples and ends with the scores of an
uninterrupted run; a live run cannot be written by a second process."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import write_lines
from tests.helpers.fake_openai import FakeOpenAI, FakeOpenAIServer
from verimod.models.base import GenerationParams
from verimod.tasks.varm.evaluate import build_requests
from verimod.tasks.varm.prompts import load_prompt
from verimod.tasks.varm.starter import load_starter

ITEMS = load_starter("test")
REQUESTS = build_requests(ITEMS, load_prompt("zero-shot"), [], GenerationParams())
MESSAGES = {q.sample_id: q.messages[-1].content for q in REQUESTS}


def behaviour(delay_s=0.03):
    answers = {
        q.messages[-1].content: (r.cot if i % 3 else r.cot.replace("[L:", "[L："))
        for i, (q, r) in enumerate(zip(REQUESTS, ITEMS, strict=True))
    }
    return FakeOpenAI(answers=answers, delay_s=delay_s)


def start_eval(server, data, runs, *extra):
    """``verimod eval`` in its own process; returns it once it has written 30 samples, and the
    samples file."""
    command = [sys.executable, "-m", "verimod", "eval", "--model", "openai:m", "--base-url", server.base_url]
    command += ["--data", str(data), "--runs-dir", str(runs), "--max-concurrency", "4", "--no-cache", "--quiet"]
    process = subprocess.Popen([*command, *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = list(runs.glob("*/samples.jsonl")) if runs.exists() else []
        if found and found[0].read_bytes().count(b"\n") >= 30:
            return process, found[0]
        if process.poll() is not None:
            break
        time.sleep(0.01)
    process.kill()
    raise AssertionError(process.stderr.read().decode() if process.poll() is not None else "no progress")


def finished_ids(samples: Path) -> set[str]:
    lines = samples.read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["id"] for line in lines if line.endswith("}")}


def uninterrupted(cli, server, data, runs):
    args = ["eval", "--model", "openai:m", "--base-url", server.base_url, "--data", data, "--runs-dir", runs]
    return cli(*args, "--no-cache", "--quiet", "--json", "-")


def assert_resumed_like_uninterrupted(samples, resumed, reference, hits_before, server_side):
    lines = [json.loads(x) for x in samples.read_text(encoding="utf-8").splitlines()]
    assert sorted(x["id"] for x in lines) == sorted(r.id for r in ITEMS)  # each sample exactly once
    assert json.loads(resumed.stdout) == json.loads(reference.stdout)
    manifest = json.loads((samples.parent / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "completed" and manifest["counts"]["done"] == len(ITEMS)
    assert not list(samples.parent.glob("*.tmp")) and not list(samples.parent.parent.glob(".creating-*"))
    for item_id, before in hits_before.items():  # finished samples were not requested again by the resume
        assert server_side.hits[MESSAGES[item_id]] - before == 1  # (only by the uninterrupted run)


def test_sigkill_then_resume(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    data = write_lines(tmp_path / "data.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS])
    server_side = behaviour()
    with FakeOpenAIServer(server_side) as server:
        process, samples = start_eval(server, data, tmp_path / "runs")
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        done = finished_ids(samples)
        assert 30 <= len(done) < len(ITEMS)
        hits_before = {i: server_side.hits[MESSAGES[i]] for i in done}
        listed = cli("runs", "list", "--runs-dir", tmp_path / "runs", "--format", "json")
        assert [row["status"] for row in json.loads(listed.stdout)] == ["interrupted (resumable)"]
        resumed = cli("eval", "--resume", samples.parent, "--no-cache", "--quiet", "--json", "-")
        assert resumed.exit_code == 0, resumed.stderr
        reference = uninterrupted(cli, server, data, tmp_path / "other")
    assert_resumed_like_uninterrupted(samples, resumed, reference, hits_before, server_side)


def test_sigterm_stops_like_ctrl_c_and_resumes(tmp_path, cli, monkeypatch):
    """Issue #20: SIGTERM left the manifest ``running`` forever and .tmp files behind."""
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    data = write_lines(tmp_path / "data.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS])
    server_side = behaviour()
    with FakeOpenAIServer(server_side) as server:
        process, samples = start_eval(server, data, tmp_path / "runs")
        process.send_signal(signal.SIGTERM)  # while requests are in flight, in request tasks
        assert process.wait(30) == 143
        stderr = process.stderr.read().decode()
        assert f"terminated; resume with: verimod eval --resume {samples.parent}" in stderr
        assert "Traceback" not in stderr
        manifest = json.loads((samples.parent / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["status"] == "interrupted"
        assert not list(samples.parent.glob("*.tmp")) and samples.read_bytes().endswith(b"\n")
        done = finished_ids(samples)
        hits_before = {i: server_side.hits[MESSAGES[i]] for i in done}
        resumed = cli("eval", "--resume", samples.parent, "--no-cache", "--quiet", "--json", "-")
        assert resumed.exit_code == 0, resumed.stderr
        reference = uninterrupted(cli, server, data, tmp_path / "other")
    assert_resumed_like_uninterrupted(samples, resumed, reference, hits_before, server_side)


def test_a_live_run_cannot_be_resumed_by_a_second_process(tmp_path, cli, monkeypatch):
    """Issue #20: ``--resume`` on a running run sent 1,016 duplicate requests (no lock)."""
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    data = write_lines(tmp_path / "data.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS])
    server_side = behaviour(delay_s=0.5)  # the other 98 samples take 12 s: the run is live meanwhile
    with FakeOpenAIServer(server_side) as server:
        process, samples = start_eval(server, data, tmp_path / "runs")
        try:
            second = cli("eval", "--resume", samples.parent, "--no-cache", "--quiet")
            rescore = cli("score", "--run", samples.parent)
            listed = cli("runs", "list", "--runs-dir", tmp_path / "runs", "--format", "json")
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(10)
        assert second.exit_code == 2 and rescore.exit_code == 2
        for result in (second, rescore):
            (line,) = result.stderr.strip().splitlines()
            assert line.startswith(f"error: {samples.parent}: the run is in use by process {process.pid} since ")
        assert [row["status"] for row in json.loads(listed.stdout)] == [f"running (pid {process.pid})"]
        # its lock died with it: the run can be resumed now, and no sample is answered twice
        resumed = cli("eval", "--resume", samples.parent, "--no-cache", "--quiet")
        assert resumed.exit_code == 0, resumed.stderr
    lines = [json.loads(x) for x in samples.read_text(encoding="utf-8").splitlines()]
    assert sorted(x["id"] for x in lines) == sorted(r.id for r in ITEMS)


FROZEN_CLOCK = """
import datetime, sys
import verimod.tasks.varm.evaluate as evaluate

class Frozen(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=tz)

evaluate.datetime = Frozen  # every run id gets the same time stamp
from verimod.cli.app import main
sys.argv = ["verimod", *sys.argv[1:]]
main()
"""


def test_runs_started_at_once_in_the_same_second_get_their_own_ids(tmp_path):
    """Issue #20: two evals in the same second with the same model and setting: FileExistsError
    (the id was checked, then created). Four processes whose clocks read the same second."""
    outputs = write_lines(tmp_path / "out.jsonl", [{"id": r.id, "output": r.cot} for r in ITEMS[:5]])
    data = write_lines(tmp_path / "data.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS[:5]])
    script = tmp_path / "frozen_clock.py"
    script.write_text(FROZEN_CLOCK, encoding="utf-8")
    command = [sys.executable, str(script), "eval", "--model", f"scripted:{outputs}", "--data", str(data)]
    command += ["--runs-dir", str(tmp_path / "runs"), "--quiet"]
    env = {**os.environ, "VERIMOD_CACHE_DIR": str(tmp_path / "cache")}
    processes = [subprocess.Popen(command, env=env, stderr=subprocess.PIPE) for _ in range(4)]
    for process in processes:
        assert process.wait(120) == 0, process.stderr.read().decode()
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    base = "20261201-120000-out.jsonl-zero-shot"
    assert runs == sorted([base, f"{base}-2", f"{base}-3", f"{base}-4"])
    for run in runs:
        manifest = json.loads((tmp_path / "runs" / run / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["run_id"] == run and manifest["status"] == "completed"
        assert (tmp_path / "runs" / run / "references.jsonl").read_bytes().count(b"\n") == 5
