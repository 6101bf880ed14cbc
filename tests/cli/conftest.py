import subprocess
import sys

import pytest
from typer.testing import CliRunner

from verimod.cli.app import app


@pytest.fixture
def cli():
    """Run the CLI in-process: ``cli("score", ...)`` → click Result (stdout and stderr apart)."""
    runner = CliRunner()

    def run(*args: str, input: str | None = None):
        return runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)

    return run


@pytest.fixture
def cli_process():
    """Run the installed console entry point in a real subprocess."""

    def run(*args: str, input: bytes | None = None):
        return subprocess.run(
            [sys.executable, "-m", "verimod", *map(str, args)], input=input, capture_output=True, timeout=120
        )

    return run
