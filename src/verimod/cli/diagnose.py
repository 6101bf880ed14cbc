"""``verimod diagnose``: intervals, errors, cues and plots of evaluation runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from verimod.cli.common import bad_input_exits, console, safe
from verimod.report.tables import percent
from verimod.tasks.varm.errors import analyse_errors
from verimod.tasks.varm.evaluate import load_run
from verimod.tasks.varm.uncertainty import metric_intervals, scorer_of

diagnose_app = typer.Typer(
    help="Diagnose runs: confidence intervals, errors, lexical cues, plots.", no_args_is_help=True
)

BootstrapOpt = Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples (seeded).")]
SeedOpt = Annotated[int, typer.Option(help="Bootstrap seed.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print as JSON.")]


@diagnose_app.command("intervals")
def intervals(
    run: Annotated[Path, typer.Argument(help="A run directory.")],
    bootstrap: BootstrapOpt = 1000,
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """Every metric with its bootstrap 95% confidence interval (items resampled).

    Example: [bold]verimod diagnose intervals runs/20261129-120000-baseline-zero-shot --bootstrap 2000[/bold]
    """
    with bad_input_exits():
        scored = load_run(run)
    found = metric_intervals(scorer_of(scored.references, scored.items), bootstrap, seed)
    if as_json:
        sys.stdout.write(json.dumps({k: v.model_dump() for k, v in found.items()}, indent=2) + "\n")
        return
    table = Table(title=f"{scored.store.manifest.run_id} (n = {len(scored.items)}, %, {bootstrap} resamples)")
    for column in ("metric", "value", "95% CI"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for metric, interval in found.items():
        ci = "n/a" if interval.low is None else f"{percent(interval.low)} – {percent(interval.high)}"
        table.add_row(metric, percent(interval.estimate), ci)
    console.print(table)


@diagnose_app.command("errors")
def errors(
    run: Annotated[Path, typer.Argument(help="A run directory.")],
    examples: Annotated[int, typer.Option(help="Examples per parse-error class.")] = 3,
    show: Annotated[int, typer.Option(help="Hidden record errors to list.")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """Field mismatch and Shapley per category and tag, confusion matrices, hidden record
    errors with their failing fields, parse-error classes with examples.

    Example: [bold]verimod diagnose errors runs/20261129-120000-baseline-zero-shot[/bold]
    """
    with bad_input_exits():
        scored = load_run(run)
    analysis = analyse_errors(scored.references, scored.items, scorer_of(scored.references, scored.items), examples)
    if as_json:
        sys.stdout.write(analysis.model_dump_json(indent=2) + "\n")
        return
    mismatch = Table(title="field mismatch by category and tag (%)")
    shapley = Table(title="JREM and the Shapley terms of Parse − JREM by category and tag (%)")
    for table, headers in (
        (mismatch, ["group", "n", "target", "type", "expl.", "stance", "label", "category"]),
        (shapley, ["group", "n", "Parse", "JREM", "referent", "stance", "decision"]),
    ):
        for header in headers:
            table.add_column(header, justify="left" if header == "group" else "right")
    for g in analysis.breakdown:
        name = f"{g.kind}: {g.group}"
        mismatch.add_row(name, str(g.n), *(percent(v, 1) for v in g.mismatch.values()))
        shapley.add_row(
            name, str(g.n), percent(g.parse_rate, 1), percent(g.jrem, 1), *(percent(v, 1) for v in g.shapley.values())
        )
    console.print(mismatch)
    console.print(shapley)
    for matrix in analysis.confusion:
        grid = Table(title=f"confusion: {matrix.field} (rows: reference, columns: prediction)")
        grid.add_column("")
        for label in matrix.predicted:
            grid.add_column(label, justify="right")
        for label, row in zip(matrix.labels, matrix.counts, strict=True):
            if any(row):
                grid.add_row(label, *(str(c) for c in row))
        console.print(grid)
    console.print(f"hidden record errors (label or category right, record wrong): {len(analysis.hidden_errors)}")
    for hidden in analysis.hidden_errors[:show]:
        console.print(f"  {hidden.id}: wrong {', '.join(hidden.failing_fields)}", highlight=False)
    for summary in analysis.parse_errors:
        console.print(f"parse errors {summary.error_class}: {summary.count}", highlight=False)
        for example in summary.examples:
            console.print("  ", safe(f"{example.id}: {example.detail or ''} | {example.output or ''}", 200))


@diagnose_app.command("plots")
def plots(
    runs: Annotated[list[Path], typer.Argument(help="Run directories.")],
    out_dir: Annotated[Path, typer.Option("--out-dir", "-o", help="Folder for the PNG and SVG files.")] = Path("plots"),
    bootstrap: BootstrapOpt = 1000,
    seed: SeedOpt = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")] = False,
) -> None:
    """Plots of one or more runs, as PNG and SVG: field mismatch, Shapley terms, per-category
    F1 with bootstrap CIs, confusion matrices.

    Example: [bold]verimod diagnose plots runs/A runs/B -o plots/[/bold]
    """
    from verimod.report.figures import run_figures
    from verimod.report.plots import save_figure

    with bad_input_exits():
        scored = [load_run(r) for r in runs]
    written = []
    for stem, figure in run_figures(scored, bootstrap, seed).items():
        written += save_figure(figure, out_dir / stem)
    if not quiet:
        console.print(f"{len(written)} files written to {out_dir}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``diagnose`` group to the root application."""
    app.add_typer(diagnose_app, name="diagnose", rich_help_panel="Evaluate")
