"""Without the ``ray`` extra: ``--ray`` is a one-line error (exit code 2) naming the extra, and the
commands without ``--ray`` are today's."""

import sys

import pytest
from typer.testing import CliRunner

from tests.conftest import write_lines
from verimod.cli.app import app


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def no_ray(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError


@pytest.mark.parametrize(
    "command",
    [
        ("data", "dedup", "{src}", "--out", "{out}"),
        ("data", "normalize", "{src}", "{out}"),
        ("data", "split", "{src}", "--sizes", "2,1", "--stratify", ""),
        ("sweep", "{sweep}"),
    ],
)
def test_ray_without_the_extra_is_one_line_and_exit_2(no_ray, tmp_path, command):
    src = write_lines(tmp_path / "in.jsonl", [{"id": str(k), "text": f"文本{k}"} for k in range(3)])
    sweep = tmp_path / "s.yaml"
    sweep.write_text("models: [baseline]\ndata: [in.jsonl]\n", encoding="utf-8")
    args = [a.format(src=src, out=tmp_path / "out", sweep=sweep) for a in command]
    result = run(*args, "--ray", "auto")
    assert result.exit_code == 2
    assert result.stderr == 'error: --ray needs Ray: pip install ".[ray]" in the verimod folder\n'
    assert not (tmp_path / "out").exists()
    plain = run(*args) if command[0] == "data" else None  # the command itself works without Ray
    assert plain is None or plain.exit_code == 0, plain.stderr


def test_help_shows_the_ray_option_with_an_example():
    for command in (("data", "dedup"), ("data", "normalize"), ("data", "split"), ("sweep",)):
        result = run(*command, "--help")
        assert result.exit_code == 0
        assert "--ray" in result.stdout and "--ray auto" in result.stdout
