"""Shared fixtures: one baseline model trained on the starter train split per test session."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from verimod.cli import train
from verimod.models.baseline import BaselineModel, BaselinePrediction, train_baseline
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.starter import load_starter


@pytest.fixture(autouse=True)
def _private_cache(monkeypatch, tmp_path):
    """Every test gets its own verimod cache: nothing touches the user's real one."""
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="session")
def starter_model() -> BaselineModel:
    """The default configuration trained on the starter train split (seed 0)."""
    return train_baseline(load_starter("train"), seed=0)


@pytest.fixture(scope="session")
def starter_predictions(starter_model) -> list[tuple[VarmReference, BaselinePrediction]]:
    """The model's prediction for every starter text (all splits)."""
    references = load_starter()
    return list(zip(references, starter_model.predict([r.text for r in references]), strict=True))


@pytest.fixture
def run():
    """``verimod train …`` on a throwaway Typer app: ``run(*args)`` returns the CliRunner result."""
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """Root."""

    train.register(app)
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)

    return invoke
