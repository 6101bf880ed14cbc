"""The README's test command is exactly what CI runs (``.ci/run``), with the CPU build of torch."""

from __future__ import annotations

import pytest

from tests.conftest import REPO

CPU_TORCH = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


def test_readme_test_command_is_the_ci_command() -> None:
    readme, ci = REPO / "README.md", REPO / ".ci" / "run"
    if not (readme.is_file() and ci.is_file()):
        pytest.skip("README.md or .ci/run is absent (not a source checkout)")
    lines = readme.read_text(encoding="utf-8").splitlines()
    marker = next(i for i, line in enumerate(lines) if line.startswith("# Install and run the whole test suite"))
    command = lines[marker + 1]
    assert command == ci.read_text(encoding="utf-8").rstrip().splitlines()[-1]
    assert CPU_TORCH in command and command.endswith("python -m pytest")
