"""``verimod runs list | show | compare`` and ``verimod cache info | clear``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from verimod.cli.common import RUN_HELP, RUNS_HELP, RunsDirOption, bad_input_exits, console
from verimod.core.cache import ResponseCache
from verimod.core.errors import InputError
from verimod.core.runs import DEFAULT_RUNS_DIR, RunStore, resolve_run_dir, run_ids, short_ids
from verimod.report.run_table import FORMATS, render_runs
from verimod.report.tables import percent, varm_scores_table
from verimod.tasks.varm.evaluate import load_run
from verimod.tasks.varm.scorer import VarmScores
from verimod.tasks.varm.uncertainty import paired_comparison

runs_app = typer.Typer(help="List, show and compare evaluation runs.", no_args_is_help=True)
cache_app = typer.Typer(help="The response cache.", no_args_is_help=True)

FormatOption = Annotated[str, typer.Option("--format", "-f", help=f"Output: {' | '.join(FORMATS)}.")]


WideOption = Annotated[
    bool, typer.Option("--wide", "-w", help="Table format: every metric and the full run ids (wider than 80 columns).")
]


def run_rows(stores: list[RunStore]) -> list[dict[str, Any]]:
    """Table rows; ``short`` is the shortest id prefix that still names the run in its folder
    (the folder name, where the run is not directly inside one, is the id itself)."""
    shorts: dict[Path, dict[str, str]] = {}
    rows = []
    for store in stores:
        manifest, folder = store.manifest, store.directory.parent
        if folder not in shorts:
            shorts[folder] = short_ids(run_ids(folder))
        rows.append(
            {
                "run": manifest.run_id,
                "short": shorts[folder].get(store.directory.name, store.directory.name),
                "model": manifest.model_label,
                "setting": manifest.setting_label,
                "status": store.shown_status(),
                "scores": store.scores(),
            }
        )
    return rows


def _emit(rows: list[dict[str, Any]], fmt: str, wide: bool) -> None:
    if fmt not in FORMATS:
        typer.echo(f"error: --format {fmt!r}: choose one of {', '.join(FORMATS)}", err=True)
        raise typer.Exit(2)
    rendered = render_runs(rows, fmt, wide)  # type: ignore[arg-type]
    if isinstance(rendered, Table):
        # --wide is printed at its natural width (the terminal wraps it, `less -S` scrolls it):
        # squeezed into the terminal, every metric cell would be cut to nothing
        natural = console.measure(rendered, options=console.options.update_width(10_000)).maximum
        if wide and natural > console.width:
            Console(width=natural, highlight=False).print(rendered)
        else:
            console.print(rendered)
    else:
        sys.stdout.write(rendered if rendered.endswith("\n") else rendered + "\n")


@runs_app.command("list")
def list_runs(
    runs_dir: RunsDirOption = DEFAULT_RUNS_DIR,
    fmt: FormatOption = "table",
    wide: WideOption = False,
) -> None:
    """Every run under the runs folder, newest first, as a Table-1 style table: short run ids
    and the headline metrics (fits 80 columns); --wide for every metric and the full ids.
    Any command that takes a run also takes its id or the short id shown here.

    Example: [bold]verimod runs list --wide[/bold]
    """
    with bad_input_exits():
        stores = [RunStore.open(runs_dir / run_id, read_only=True) for run_id in reversed(run_ids(runs_dir))]
    _emit(run_rows(stores), fmt, wide)


@runs_app.command("show")
def show_run(
    run: Annotated[Path, typer.Argument(help=RUN_HELP)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the manifest and scores as JSON.")] = False,
    runs_dir: RunsDirOption = DEFAULT_RUNS_DIR,
) -> None:
    """One run: its settings, counts and full scores.

    Example: [bold]verimod runs show 20261129-120000[/bold]
    """
    with bad_input_exits():
        store = RunStore.open(resolve_run_dir(run, runs_dir), read_only=True)
    manifest = store.manifest
    scores = store.scores()
    if as_json:
        sys.stdout.write(
            json.dumps({"manifest": manifest.model_dump(), "scores": scores}, ensure_ascii=False, indent=2)
        )
        sys.stdout.write("\n")
        return
    table = Table(show_header=False, title=f"run {manifest.run_id}")
    for key, value in [
        ("model", manifest.model_label),
        ("setting", f"{manifest.setting_label} ({manifest.shots} shots)" if manifest.shots else manifest.setting_label),
        ("prompt", f"{manifest.prompt.get('version')} {str(manifest.prompt.get('sha256'))[:12]}"),
        (
            "data",
            f"{manifest.data.get('path')} (n={manifest.data.get('n')}, sha256 {str(manifest.data.get('sha256'))[:12]})",
        ),
        ("status", store.shown_status()),
        ("counts", ", ".join(f"{k} {v}" for k, v in manifest.counts.model_dump().items())),
        ("started / finished", f"{manifest.started_at} / {manifest.finished_at or '-'}"),
        ("verimod / parser", f"{manifest.verimod_version} / {manifest.parser_version}"),
        ("git", manifest.git_revision or "-"),
    ]:
        table.add_row(key, str(value))
    console.print(table)
    if scores is not None:
        known = {k: v for k, v in scores.items() if k in VarmScores.model_fields}
        console.print(varm_scores_table(VarmScores.model_validate(known), title=manifest.run_id))


@runs_app.command("compare")
def compare_runs(
    runs: Annotated[list[Path], typer.Argument(help=RUNS_HELP)],
    fmt: FormatOption = "table",
    paired: Annotated[
        bool, typer.Option("--paired", help="Two runs on the same items: paired bootstrap and McNemar's test.")
    ] = False,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Paired bootstrap resamples.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    wide: WideOption = False,
    runs_dir: RunsDirOption = DEFAULT_RUNS_DIR,
) -> None:
    """Runs side by side, as a Table-1 style table; with --paired, the differences B − A of two
    runs with paired-bootstrap 95% intervals and p-values, and McNemar's exact test on JREM.

    Example: [bold]verimod runs compare runs/A runs/B --paired[/bold]
    """
    with bad_input_exits():
        directories = [resolve_run_dir(r, runs_dir) for r in runs]
    if not paired:
        with bad_input_exits():
            stores = [RunStore.open(d, read_only=True) for d in directories]
        _emit(run_rows(stores), fmt, wide)
        return
    with bad_input_exits():
        if len(runs) != 2:
            raise InputError.at("--paired", None, None, f"compares exactly two runs, got {len(runs)}")
        first, second = load_run(directories[0]), load_run(directories[1])
        if [r.id for r in first.references] != [r.id for r in second.references]:
            raise InputError.at(
                str(runs[1]), None, None, "a paired comparison needs the same reference items in both runs"
            )
        comparison = paired_comparison(first.references, first.items, second.items, bootstrap, seed)
    if fmt == "json":
        sys.stdout.write(comparison.model_dump_json(indent=2) + "\n")
        return
    a, b = first.store.manifest, second.store.manifest
    table = Table(title=f"B − A on {comparison.n} items (%; {bootstrap} paired resamples)")
    for column in ("metric", "A", "B", "B − A", "95% CI", "p"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for d in comparison.differences:
        ci = "n/a" if d.low is None else f"{percent(d.low)} – {percent(d.high)}"
        p = "n/a" if d.p_value is None else (f"< {2 / bootstrap:.3f}" if d.p_value == 0 else f"{d.p_value:.3f}")
        table.add_row(d.metric, percent(d.a), percent(d.b), percent(d.difference), ci, p)
    console.print(
        f"A = {a.run_id} ({a.model_label}, {a.setting_label})\nB = {b.run_id} ({b.model_label}, {b.setting_label})",
        highlight=False,
    )
    console.print(table)
    m = comparison.mcnemar
    console.print(
        f"McNemar (exact) on JREM: both right {m.both}, only A {m.only_a}, only B {m.only_b}, neither {m.neither}; "
        f"p = {m.p_value:.4g}",
        highlight=False,
    )


@cache_app.command("info")
def cache_info(as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False) -> None:
    """Where the response cache is, its size, and entries per model.

    Example: [bold]verimod cache info[/bold]
    """
    with ResponseCache() as cache:
        info = cache.info()
    if as_json:
        sys.stdout.write(json.dumps(info, ensure_ascii=False, indent=2) + "\n")
        return
    console.print(f"{info['path']}: {info['entries']} entries, {info['bytes'] / 1e6:.1f} MB", highlight=False)
    for row in info["by_model"]:
        console.print(f"  {row['backend']}:{row['model']}  {row['entries']}", highlight=False)


@cache_app.command("clear")
def cache_clear(
    model: Annotated[str | None, typer.Option(help="Only the entries of this model name.")] = None,
) -> None:
    """Delete cached responses (all, or those of one model).

    Example: [bold]verimod cache clear --model qwen2.5-7b-instruct[/bold]
    """
    with ResponseCache() as cache:
        deleted = cache.clear(model)
    console.print(f"deleted {deleted} cached response(s)")


def register(app: typer.Typer) -> None:
    """Add the ``runs`` and ``cache`` groups to the root application."""
    app.add_typer(runs_app, name="runs", rich_help_panel="Evaluate")
    app.add_typer(cache_app, name="cache", rich_help_panel="Evaluate")
