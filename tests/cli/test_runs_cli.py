"""Runs from the command line, as a new user meets them (issue #14): ``runs list`` readable at
80 columns with the ids commands take, run ids accepted wherever a run directory is, and
read-only commands that never write into a run folder."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_lines
from verimod.core.runs import run_ids, short_ids
from verimod.tasks.varm.corrupt import demo_outputs
from verimod.tasks.varm.starter import load_starter

TEST = load_starter("test")[:40]
LONG_NAME = "a-rather-long-prediction-file-name-from-another-tool"


@pytest.fixture(autouse=True)
def private_cache_and_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "80")


@pytest.fixture
def runs(cli: Any, tmp_path: Path) -> Path:
    """Three scripted runs in one folder: two of the same second and model, one other setting."""
    data = write_lines(tmp_path / "data.jsonl", [r.model_dump(exclude_none=True) for r in TEST])
    folder = tmp_path / "runs"
    for seed, setting in ((1, "zero-shot"), (2, "zero-shot"), (3, "taxonomy")):
        outputs, _ = demo_outputs(TEST, seed=seed)
        answers = write_lines(
            tmp_path / f"{LONG_NAME}-{seed}.jsonl", [{"id": k, "output": v} for k, v in outputs.items()]
        )
        args = ["eval", "--model", f"scripted:{answers}", "--data", data, "--setting", setting]
        result = cli(*args, "--runs-dir", folder, "--quiet")
        # demo outputs leave some items without an output: failed samples, exit code 3
        assert result.exit_code == (3 if len(outputs) < len(TEST) else 0), result.stderr
    return folder


# -- runs list -----------------------------------------------------------------------------------


def test_runs_list_fits_80_columns_and_shows_ids_that_commands_take(cli: Any, runs: Path) -> None:
    result = cli("runs", "list", "--runs-dir", runs)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    shorts = short_ids(run_ids(runs))
    rows = [line for line in lines if line[:8].isdigit()]
    assert len(rows) == 3
    for run_id, short in shorts.items():
        assert len(short) < len(run_id)
        (row,) = [line for line in rows if line.split()[0] == short]
        scores = json.loads((runs / run_id / "scores.json").read_text(encoding="utf-8"))
        assert f"{100 * scores['jrem']:.2f}" in row and f"{100 * scores['label_macro_f1']:.2f}" in row
        shown = cli("runs", "show", short, "--runs-dir", runs)  # the id as listed names the run
        assert shown.exit_code == 0 and f"run {run_id}" in shown.stdout.replace("\n", "")
    assert "…" in result.stdout  # the long model names are cut, the ids and numbers are not
    # newest first
    assert [line.split()[0] for line in rows] == [shorts[i] for i in sorted(shorts, reverse=True)]


def test_runs_list_wide_has_every_metric_and_the_full_ids(cli: Any, runs: Path) -> None:
    result = cli("runs", "list", "--runs-dir", runs, "--wide")
    assert result.exit_code == 0, result.stderr
    for run_id in run_ids(runs):
        assert run_id in result.stdout
    for header in ("Label", "Category", "T-F1", "Type", "Expl.", "Stance", "Parse", "Format", "JREM", "HER-C", "HER-L"):
        assert header in result.stdout
    markdown = cli("runs", "list", "--runs-dir", runs, "--format", "md")  # machine formats: full ids
    assert all(run_id in markdown.stdout for run_id in run_ids(runs))


def test_an_unscored_run_is_named_with_its_status(cli: Any, runs: Path) -> None:
    run_id = run_ids(runs)[0]
    (runs / run_id / "scores.json").unlink()
    manifest = json.loads((runs / run_id / "manifest.json").read_text(encoding="utf-8"))
    manifest["status"] = "interrupted"
    (runs / run_id / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = cli("runs", "list", "--runs-dir", runs)
    text = " ".join(result.stdout.split())
    # an interrupted run can be completed with --resume: the list says so
    assert f"not scored: {short_ids(run_ids(runs))[run_id]} (interrupted (resumable))" in text


# -- run ids wherever a run directory is ---------------------------------------------------------


def test_every_command_that_takes_a_run_takes_its_id_or_a_prefix(cli: Any, runs: Path, tmp_path: Path) -> None:
    first, second, _ = run_ids(runs)
    prefix = short_ids(run_ids(runs))[second]
    flags = ("--runs-dir", runs)
    commands = [
        ("runs", "show", first, *flags),
        ("runs", "show", f"{runs}/{prefix}"),  # a prefix inside a folder given as a path
        ("runs", "compare", first, prefix, *flags),
        ("runs", "compare", first, prefix, "--paired", "--bootstrap", "50", *flags),
        ("report", first, prefix, "-o", tmp_path / "r.html", "--bootstrap", "0", "--no-plots", *flags),
        ("diagnose", "intervals", prefix, "--bootstrap", "50", *flags),
        ("diagnose", "errors", first, *flags),
        ("diagnose", "cues", first, *flags),
        ("diagnose", "plots", prefix, "-o", tmp_path / "plots", "--bootstrap", "20", *flags),
        ("score", "--run", prefix, "--json", tmp_path / "s.json", *flags),
        ("eval", "--resume", first, "--quiet", *flags),
        ("review", "audit", first, "-o", tmp_path / "audit", "--sample-rate", "0", *flags),
    ]
    failed = json.loads((runs / first / "manifest.json").read_text(encoding="utf-8"))["counts"]["errors"]
    for command in commands:
        result = cli(*command)
        # a resumed run whose scripted outputs lack some items still has failed samples: exit code 3
        expected = 3 if command[0] == "eval" and failed else 0
        assert result.exit_code == expected, f"{command}: {result.stderr}"
    assert json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["n"] == len(TEST)


def test_an_unknown_or_ambiguous_run_is_one_line_with_exit_2(cli: Any, runs: Path, tmp_path: Path) -> None:
    first = run_ids(runs)[0]
    typo = first[:-3] + "xyz"
    result = cli("runs", "show", typo, "--runs-dir", runs)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: {typo}: no such run: not a run directory, nor a run id in {runs} (did you mean '{first}'?)"
    )
    stamp_day = first[:8]
    result = cli("report", stamp_day, "--runs-dir", runs, "-o", tmp_path / "r.html")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert f"error: {stamp_day}: ambiguous run id: 3 runs in {runs} start with it" in result.stderr
    result = cli("diagnose", "errors", "20990101", "--runs-dir", tmp_path / "nothing-here")
    assert result.exit_code == 2 and "holds no runs" in result.stderr
    result = cli("runs", "show", tmp_path)  # a folder, but not a run
    assert result.exit_code == 2 and "not a run directory (no manifest.json)" in result.stderr


# -- read-only commands never write ---------------------------------------------------------------

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_WRITE_EVENTS = frozenset({"os.utime", "os.rename", "os.remove", "os.rmdir", "os.truncate", "os.mkdir", "os.chmod"})
_watch: dict[str, Any] = {"root": None, "seen": []}


def _audit(event: str, args: tuple[Any, ...]) -> None:
    root = _watch["root"]
    if root is None:
        return
    if event == "open":
        path, mode, flags = args
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if writes and isinstance(path, str | bytes | os.PathLike) and os.fsdecode(path).startswith(root):
            _watch["seen"].append((event, os.fsdecode(path)))
    elif event in _WRITE_EVENTS:
        for arg in args:
            if isinstance(arg, str | bytes | os.PathLike) and os.fsdecode(arg).startswith(root):
                _watch["seen"].append((event, os.fsdecode(arg)))


sys.addaudithook(_audit)  # process-wide and permanent; inert unless a test sets a root


@contextmanager
def writes_under(root: Path) -> Iterator[list[tuple[str, str]]]:
    """Every write this process attempts under ``root`` (opens for writing, renames, removals,
    mtime and mode changes) while the block runs."""
    _watch["root"], _watch["seen"] = str(root.resolve()), []
    try:
        yield _watch["seen"]
    finally:
        _watch["root"] = None


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size, p.stat().st_mode) for p in [root, *root.rglob("*")]}


def test_read_only_commands_work_on_a_read_only_run_folder_and_write_nothing(
    cli: Any, runs: Path, tmp_path: Path
) -> None:
    first, second = (runs / run_id for run_id in run_ids(runs)[:2])
    with (first / "samples.jsonl").open("ab") as handle:
        handle.write(b'{"id": "torn')  # a run killed while writing its last sample
    out = tmp_path / "out"
    commands = [
        ("runs", "list", "--runs-dir", runs),
        ("runs", "list", "--runs-dir", runs, "--wide"),
        ("runs", "show", first),
        ("runs", "show", first, "--json"),
        ("runs", "compare", first, second),
        ("runs", "compare", first, second, "--paired", "--bootstrap", "50"),
        ("report", first, second, "-o", out / "report.html", "--bootstrap", "50"),
        ("diagnose", "intervals", first, "--bootstrap", "50"),
        ("diagnose", "errors", first),
        ("diagnose", "cues", first, second),
        ("diagnose", "plots", first, "-o", out / "plots", "--bootstrap", "20"),
    ]
    for path in [runs, *runs.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        before = snapshot(runs)
        with writes_under(runs) as seen:
            for command in commands:
                result = cli(*command)
                assert result.exit_code == 0, f"{command}: {result.stderr}"
        assert seen == []
        assert snapshot(runs) == before
    finally:
        for path in [runs, *runs.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    assert (out / "report.html").is_file()
