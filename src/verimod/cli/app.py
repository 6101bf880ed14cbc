"""The root ``verimod`` Typer application."""

from __future__ import annotations

from typing import Annotated

import typer
import typer.core
import typer.main

from verimod import __version__
from verimod.cli import data, diagnose, report, review, runs, safeqa, softhate, toxirex, train, varm
from verimod.cli import eval as eval_cli
from verimod.cli import exports as exports_cli
from verimod.cli import imports as imports_cli
from verimod.cli import sweep as sweep_cli
from verimod.cli.command_tree import VerimodGroup, prepare

app = typer.Typer(
    name="verimod",
    help="Verifiable evaluation of content-moderation models: anchored rationales, deterministic "
    "parsing, record-level scores.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    cls=VerimodGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"verimod {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """verimod: verifiable evaluation of content-moderation models."""


eval_cli.register(app)
runs.register(app)
diagnose.register(app)
report.register(app)
review.register(app)
train.register(app)
varm.register(app)
data.register(app)
safeqa.register(app)
softhate.register(app)
toxirex.register(app)
imports_cli.register(app)
exports_cli.register(app)
sweep_cli.register(app)


def build_command() -> typer.core.TyperCommand | typer.core.TyperGroup:
    """The root application as a Click command, prepared (:mod:`verimod.cli.command_tree`):
    help texts safe for Rich markup, one-paragraph listings, finite floats."""
    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperCommand | typer.core.TyperGroup)
    return prepare(command)


def main() -> None:
    """Console-script entry point."""
    build_command()(prog_name="verimod")
