"""A run killed with SIGKILL mid-way resumes without repeating finished samples, and ends with
the scores of an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time

from tests.conftest import write_lines
from tests.helpers.fake_openai import FakeOpenAI, FakeOpenAIServer
from verimod.models.base import GenerationParams
from verimod.tasks.varm.evaluate import build_requests
from verimod.tasks.varm.prompts import load_prompt
from verimod.tasks.varm.starter import load_starter

ITEMS = load_starter("test")


def test_sigkill_then_resume(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    data = write_lines(tmp_path / "data.jsonl", [r.model_dump(exclude_none=True) for r in ITEMS])
    requests = build_requests(ITEMS, load_prompt("zero-shot"), [], GenerationParams())
    answers = {
        q.messages[-1].content: (r.cot if i % 3 else r.cot.replace("[L:", "[L："))
        for i, (q, r) in enumerate(zip(requests, ITEMS, strict=True))
    }
    behaviour = FakeOpenAI(answers=answers, delay_s=0.03)
    with FakeOpenAIServer(behaviour) as server:
        runs = tmp_path / "runs"
        command = [
            sys.executable,
            "-m",
            "verimod",
            "eval",
            "--model",
            "openai:m",
            "--base-url",
            server.base_url,
            "--data",
            str(data),
            "--runs-dir",
            str(runs),
            "--max-concurrency",
            "4",
            "--no-cache",
            "--quiet",
        ]
        process = subprocess.Popen(command, env={**os.environ}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        samples = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = list(runs.glob("*/samples.jsonl")) if runs.exists() else []
            if found and found[0].read_bytes().count(b"\n") >= 30:
                samples = found[0]
                break
            time.sleep(0.01)
        assert samples is not None, process.stderr.read() if process.poll() is not None else "no progress"
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        before = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines() if line.endswith("}")]
        finished_before = {x["id"] for x in before}
        assert 30 <= len(finished_before) < len(ITEMS)
        hits_before = dict(behaviour.hits)

        resumed = cli("eval", "--resume", samples.parent, "--no-cache", "--quiet", "--json", "-")
        assert resumed.exit_code == 0, resumed.stderr

        uninterrupted = cli(
            "eval",
            "--model",
            "openai:m",
            "--base-url",
            server.base_url,
            "--data",
            data,
            "--runs-dir",
            tmp_path / "other",
            "--no-cache",
            "--quiet",
            "--json",
            "-",
        )
    lines = [json.loads(x) for x in samples.read_text(encoding="utf-8").splitlines()]
    assert sorted(x["id"] for x in lines) == sorted(r.id for r in ITEMS)  # each sample exactly once
    messages = {q.sample_id: q.messages[-1].content for q in requests}
    for item_id in finished_before:  # finished samples were not requested again by the resume
        assert behaviour.hits[messages[item_id]] - hits_before.get(messages[item_id], 0) == 1  # (the other run)
    assert json.loads(resumed.stdout) == json.loads(uninterrupted.stdout)
    manifest = json.loads((samples.parent / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "completed" and manifest["counts"]["done"] == len(ITEMS)
