"""``verimod import inspect LOG``: runs made by other tools, as verimod run directories."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verimod.cli.common import QuietOption, bad_input_exits, console
from verimod.report.tables import varm_scores_table

import_app = typer.Typer(help="Bring runs made by other tools into verimod's run store.", no_args_is_help=True)


@import_app.command("inspect")
def import_inspect(
    log: Annotated[Path, typer.Argument(help="An inspect_ai eval log (.eval or .json).")],
    ref: Annotated[
        str | None,
        typer.Option("--ref", "-r", help="References by sample id, for logs of tasks that are not verimod's."),
    ] = None,
    runs_dir: Annotated[Path, typer.Option(help="Where the run directory is created.")] = Path("runs"),
    quiet: QuietOption = False,
) -> None:
    """Turn an inspect_ai eval log into a scored verimod run directory (samples, references,
    manifest with the log's provenance), so runs compare, report, diagnose and the paired tests
    work on it. A sample that ended in an error is scored as wrong, as verimod eval scores it.

    Example: [bold]verimod import inspect logs/2026-12-01T10-00-00_varm-zero-shot_X.eval[/bold]
    then [bold]verimod runs compare runs/<imported> runs/<verimod run> --paired[/bold]
    """
    from verimod.integrations.inspect_ai.log_import import import_inspect_log

    with bad_input_exits():
        imported = import_inspect_log(log, runs_dir, ref)
    manifest = imported.store.manifest
    if not quiet:
        console.print(varm_scores_table(imported.scores, title=f"{manifest.model_label} · {manifest.setting}"))
        errors = f", {imported.errors} ended in an error (scored as wrong)" if imported.errors else ""
        left = f"; {imported.left_out_references} reference(s) not in the log" if imported.left_out_references else ""
        console.print(
            f"{imported.samples} sample(s) imported{errors}{left}; status {manifest.status}; "
            f"run directory: {imported.store.directory}",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    """Add the ``import`` group to the root application."""
    app.add_typer(import_app, name="import", rich_help_panel="Evaluate")
