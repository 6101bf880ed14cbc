"""``verimod sweep SWEEP.yaml``: a grid of evaluation runs, one Table-1 and one report."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from verimod.cli.common import QuietOption, bad_input_exits, console, err_console
from verimod.cli.runs import run_rows
from verimod.core.errors import InputError
from verimod.core.runs import RunStore
from verimod.report.run_table import FORMATS, render_runs
from verimod.report.tables import percent
from verimod.sweep.cell import CellResult, SweepCell

if TYPE_CHECKING:
    from verimod.sweep.runner import SweepOutcome
    from verimod.sweep.spec import SweepPlan


def _show_plan(states: list[tuple[SweepCell, str]]) -> None:
    table = Table(title="sweep cells")
    for column in ("cell", "model", "setting", "data", "constraint", "state"):
        table.add_column(column)
    for cell, state in states:
        labels = cell.labels
        model = labels["model"] + (f" + {labels['adapter']}" if labels["adapter"] else "")
        table.add_row(cell.cell_id, model, labels["setting"], labels["data"], labels["constraint"], state)
    console.print(table)


def sweep(
    sweep_file: Annotated[Path, typer.Argument(help="The sweep file (YAML).")],
    budget: Annotated[int | None, typer.Option(help="Cells running at once (default: the file's budget).")] = None,
    runs_dir: Annotated[
        Path | None, typer.Option(help="Folder of the cells' run directories (default: the file's runs_dir).")
    ] = None,
    only: Annotated[
        list[str] | None, typer.Option("--only", help="Run only cells whose id matches this glob (repeatable).")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List the cells and their state; run nothing.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the response cache.")] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help=f"Table-1 output: {' | '.join(FORMATS)}.")] = "table",
    report: Annotated[bool, typer.Option("--report/--no-report", help="Write the HTML report of the cells.")] = True,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for the report's 95% CIs.")] = 1000,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="Run the cells on a Ray cluster (the ray extra), one task per cell: auto, "
            "HOST:PORT, ray://HOST:10001 or local; the runs folder must be on storage every node mounts.",
            rich_help_panel="Ray",
        ),
    ] = None,
    quiet: QuietOption = False,
) -> None:
    """Run a sweep: models × settings × data × constraints (× adapters) from one YAML file, each
    cell a normal resumable run directory (runs_dir/<cell id>), at most --budget cells at once.
    Rerun the same command after an interruption: finished cells are kept, unfinished ones
    resume without repeating a finished sample. Ends with one Table-1 (also runs_dir/table1.md)
    and one HTML report (runs_dir/report.html).

    Example: [bold]verimod sweep table1.yaml --budget 4[/bold]

    On a Ray cluster (a cell whose node dies resumes on another):
    [bold]verimod sweep table1.yaml --ray auto --budget 16[/bold]
    """
    from verimod.sweep.runner import cell_state, run_sweep, select_cells
    from verimod.sweep.spec import load_sweep

    if fmt not in FORMATS:
        with bad_input_exits():
            raise InputError.at("--format", None, None, f"choose one of {', '.join(FORMATS)}, got {fmt!r}")
    with bad_input_exits():
        if budget is not None and budget < 1:
            raise InputError.at("--budget", None, None, f"must be at least 1, got {budget}")
        plan = load_sweep(sweep_file)
        if runs_dir is not None:
            plan = plan.model_copy(update={"runs_dir": str(runs_dir.resolve())})
        cells = select_cells(plan, only or [])
        states = [(cell, cell_state(plan, cell)) for cell in cells]
    if dry_run:
        _show_plan(states)
        console.print(f"{len(cells)} cell(s); runs folder {plan.runs_dir}", highlight=False)
        return
    lock = threading.Lock()
    finished = [0]

    def on_start(cell: SweepCell) -> None:
        if not quiet:
            err_console.print(f"… {cell.cell_id}", highlight=False, markup=False, soft_wrap=True)

    def on_done(cell: SweepCell, result: CellResult | None, failure: str | None) -> None:
        with lock:
            finished[0] += 1
            if quiet and failure is None:
                return
            where = f"[{finished[0]}/{len(cells)}]"
            if failure is not None:
                err_console.print(f"✗ {where} {cell.cell_id}: {failure}", highlight=False, markup=False, soft_wrap=True)
            else:
                assert result is not None
                err_console.print(
                    f"✓ {where} {cell.cell_id}: {result.action}, {result.requested} request(s), "
                    f"JREM {percent(result.scores.get('jrem'))}, {result.status} ({result.seconds:.1f} s)",
                    highlight=False,
                    soft_wrap=True,
                )

    try:
        with bad_input_exits():
            if ray_address is None:
                outcome = run_sweep(
                    plan, cells, budget=budget, use_cache=not no_cache, on_start=on_start, on_done=on_done
                )
            else:
                outcome = _run_on_ray(ray_address, sweep_file, plan, cells, budget, not no_cache, on_start, on_done)
    except KeyboardInterrupt:
        # every finished sample is on disk (flushed line by line): stop now, as a kill would
        err_console.print(f"interrupted; resume with: verimod sweep {sweep_file}", highlight=False)
        os._exit(130)
    _summarise(plan.runs_dir, cells, outcome.failures, fmt, report, bootstrap, quiet)
    if outcome.failures:
        typer.echo(f"error: {len(outcome.failures)} cell(s) failed; fix the cause and rerun the sweep", err=True)
        raise typer.Exit(1)


def _run_on_ray(
    address: str,
    sweep_file: Path,
    plan: SweepPlan,
    cells: list[SweepCell],
    budget: int | None,
    use_cache: bool,
    on_start: Callable[[SweepCell], None],
    on_done: Callable[[SweepCell, CellResult | None, str | None], None],
) -> SweepOutcome:
    """The cells as Ray tasks (:mod:`verimod.distributed.sweep`), after checking that every node
    runs this verimod and sees the sweep file and the runs folder."""
    from verimod.cli.data_ray import cluster_errors_exit
    from verimod.distributed.cluster import check_nodes, ray_session
    from verimod.distributed.sweep import run_sweep_on_ray

    with cluster_errors_exit(), ray_session(address):
        check_nodes([sweep_file], [plan.runs_dir])
        return run_sweep_on_ray(plan, cells, budget=budget, use_cache=use_cache, on_start=on_start, on_done=on_done)


def _summarise(
    runs_dir: str, cells: list[SweepCell], failures: dict[str, str], fmt: str, report: bool, bootstrap: int, quiet: bool
) -> None:
    """Print and write Table-1 over the cells that finished, and their HTML report."""
    from verimod.cli.report import report as report_command

    done = [Path(runs_dir) / c.cell_id for c in cells if c.cell_id not in failures]
    with bad_input_exits():
        rows = run_rows([RunStore.open(directory, read_only=True) for directory in done])
    if not rows:
        return
    (Path(runs_dir) / "table1.md").write_text(str(render_runs(rows, "md")), encoding="utf-8")
    rendered = render_runs(rows, fmt)  # type: ignore[arg-type]
    if isinstance(rendered, Table):
        console.print(rendered)
    else:
        typer.echo(rendered.rstrip("\n"))
    if report:
        several_data = len({c.labels["data"] for c in cells if c.cell_id not in failures}) > 1
        out = Path(runs_dir) / "report.html"
        report_command(
            runs=done,
            out=out,
            bootstrap=bootstrap,
            seed=0,
            title=f"sweep {Path(runs_dir).name}",
            plots=True,
            allow_different_items=several_data,
            quiet=True,
        )
        if not quiet:  # on stderr: stdout holds only the table (--format json, csv …)
            err_console.print(f"Table-1: {Path(runs_dir) / 'table1.md'}; report: {out}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``sweep`` to the root application."""
    app.command("sweep", rich_help_panel="Evaluate")(sweep)
