"""``verimod report``: one self-contained HTML report of one or more runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from verimod.cli.common import RUNS_HELP, QuietOption, RunsDirOption, bad_input_exits, console
from verimod.cli.diagnose import AllowDifferentItems, comparable_runs
from verimod.core.errors import InputError
from verimod.core.runs import DEFAULT_RUNS_DIR, resolve_run_dir


def report(
    runs: Annotated[list[Path], typer.Argument(help=RUNS_HELP)],
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("report.html"),
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", help="Bootstrap resamples for the 95% CIs (0: none).")
    ] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    title: Annotated[str | None, typer.Option(help="Page title.")] = None,
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Include the figures.")] = True,
    allow_different_items: AllowDifferentItems = False,
    runs_dir: RunsDirOption = DEFAULT_RUNS_DIR,
    quiet: QuietOption = False,
) -> None:
    """One HTML file, self-contained and offline (inline CSS/JS/images, strict CSP): a table of
    contents, the Table-1 summary with bootstrap CIs (headline columns first), field mismatch
    and Shapley terms, parse errors, figures, and a per-item browser (filters; rationales with
    the six anchors highlighted; parsed record vs reference with mismatches marked). Runs over
    different item sets are refused, unless --allow-different-items (then a banner says so).

    Example: [bold]verimod report runs/A runs/B -o report.html[/bold]
    """
    from verimod.report.figures import cue_jrem, run_figures
    from verimod.report.html import build_report
    from verimod.report.plots import figure_to_svg
    from verimod.tasks.varm.evaluate import load_run
    from verimod.tasks.varm.uncertainty import metric_intervals, scorer_of

    with bad_input_exits():
        scored = [load_run(resolve_run_dir(run, runs_dir)) for run in runs]
        ids = [run.store.manifest.run_id for run in scored]
        if len(set(ids)) != len(ids):
            raise InputError.at("runs", None, None, "the same run is given twice")
        note = comparable_runs(scored, allow_different_items)
    intervals: dict[str, dict[str, tuple[float, float, float]]] | None = None
    if bootstrap > 0:
        intervals = {}
        for run_id, run in zip(ids, scored, strict=True):
            found = metric_intervals(scorer_of(run.references, run.items), bootstrap, seed)
            intervals[run_id] = {
                metric: (i.estimate, i.low, i.high)
                for metric, i in found.items()
                if i.estimate is not None and i.low is not None and i.high is not None
            }
    figures = None
    if plots:
        made = run_figures(scored, max(bootstrap, 0), seed, cue_jrem(scored), note)
        figures = {name: figure_to_svg(figure, id_prefix=f"f{k}-") for k, (name, figure) in enumerate(made.items())}
    with bad_input_exits():
        try:
            path = build_report(scored, out, intervals=intervals, figures=figures, title=title,
                                allow_different_items=allow_different_items)  # fmt: skip
        except ValueError as exc:
            raise InputError.at(str(out), None, None, str(exc)) from None
    if not quiet:
        console.print(
            f"report written to {path} ({path.stat().st_size / 1e6:.1f} MB, {len(scored)} run(s))", highlight=False
        )


def register(app: typer.Typer) -> None:
    """Add ``report`` to the root application."""
    app.command("report", rich_help_panel="Evaluate")(report)
