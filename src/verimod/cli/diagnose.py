"""``verimod diagnose``: intervals, errors, cues and plots of evaluation runs."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from verimod.cli.common import RUN_HELP, RUNS_HELP, RunsDirOption, bad_input_exits, console, err_console, safe
from verimod.core.runs import DEFAULT_RUNS_DIR, resolve_run_dir
from verimod.report.tables import percent
from verimod.tasks.varm.errors import analyse_errors
from verimod.tasks.varm.evaluate import ScoredRun, load_run
from verimod.tasks.varm.uncertainty import metric_intervals, scorer_of

diagnose_app = typer.Typer(
    help="Diagnose runs: confidence intervals, errors, lexical cues, plots.", no_args_is_help=True
)

BootstrapOpt = Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples (seeded).")]
SeedOpt = Annotated[int, typer.Option(help="Bootstrap seed.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print as JSON.")]


@diagnose_app.command("intervals")
def intervals(
    run: Annotated[Path, typer.Argument(help=RUN_HELP)],
    bootstrap: BootstrapOpt = 1000,
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
    runs_dir: RunsDirOption = DEFAULT_RUNS_DIR,
) -> None:
    """Every metric with its bootstrap 95% confidence interval (items resampled).

    Example: [bold]verimod diagnose intervals runs/20261129-120000-baseline-zero-shot --bootstrap 2000[/bold]
    """
    with bad_input_exits():
        scored = load_run(resolve_run_dir(run, runs_dir))
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
    run: Annotated[Path, typer.Argument(help=RUN_HELP)],
    examples: Annotated[int, typer.Option(min=0, help="Examples per parse-error class (0: none).")] = 3,
    show: Annotated[int, typer.Option(min=0, help="Hidden record errors to list.")] = 20,
    as_json: JsonOpt = False,
    runs_dir: RunsDirOption = DEFAULT_RUNS_DIR,
) -> None:
    """Field mismatch and Shapley per category and tag, confusion matrices, hidden record
    errors with their failing fields, parse-error classes with examples.

    Example: [bold]verimod diagnose errors runs/20261129-120000-baseline-zero-shot[/bold]
    """
    with bad_input_exits():
        scored = load_run(resolve_run_dir(run, runs_dir))
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


LexiconOpt = Annotated[
    list[Path] | None,
    typer.Option("--lexicon", help="Your own cue lexicon JSON (repeatable; default: the bundled four)."),
]


def _lexicons(paths: list[Path] | None) -> tuple:  # type: ignore[type-arg]
    from verimod.tasks.varm.cues import default_lexicons, load_lexicons

    return tuple(load_lexicons(paths)) if paths else default_lexicons()


@diagnose_app.command("cue-subset")
def cue_subset(
    data: Annotated[Path, typer.Argument(help="Reference JSONL to draw the challenge subsets from.")],
    out: Annotated[Path, typer.Argument(help="Output: the subset as VARM references with meta.cues.")],
    ratio: Annotated[str, typer.Option(help="Harmful:non-harmful ratio of every family's subset.")] = "60:40",
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    per_family: Annotated[int | None, typer.Option(help="At most this many items per family.")] = None,
    lexicon: LexiconOpt = None,
    encoding: Annotated[
        str | None, typer.Option("--encoding", help="Input encoding (default UTF-8; auto detects).")
    ] = None,
) -> None:
    """Lexical-cue challenge subsets: per cue family, the items whose text bears the family's
    cue words, sampled to an exact harmful : non-harmful ratio (seeded).

    Example: [bold]verimod diagnose cue-subset test.jsonl cues.jsonl --ratio 60:40 --seed 1[/bold]
    """
    from verimod.core.errors import InputError
    from verimod.tasks.varm.cues import build_cue_subset, write_cue_subset
    from verimod.tasks.varm.io import load_references

    with bad_input_exits():
        try:
            harmful, non_harmful = (int(x) for x in ratio.split(":"))
        except ValueError:
            raise InputError.at("--ratio", None, None, f"expected H:NH such as 60:40, got {ratio!r}") from None
        references = load_references(data, encoding)
        subset = build_cue_subset(references, _lexicons(lexicon), (harmful, non_harmful), seed, per_family)
    count = write_cue_subset(out, subset)
    for stats in subset.summary.families:
        note = stats.shortfall_note()
        console.print(
            f"{stats.family}: {stats.selected_harmful} harmful + {stats.selected_non_harmful} non-harmful"
            + (f" ({note})" if note else ""),
            highlight=False,
        )
    console.print(f"{count} references written to {out}", highlight=False)


@diagnose_app.command("cues")
def cues(
    runs: Annotated[list[Path], typer.Argument(help=RUNS_HELP)],
    subset: Annotated[
        Path | None, typer.Option(help="A cue subset file (diagnose cue-subset); default: every item of the run.")
    ] = None,
    lexicon: LexiconOpt = None,
    as_json: JsonOpt = False,
    runs_dir: RunsDirOption = DEFAULT_RUNS_DIR,
) -> None:
    """Lexical-cue sensitivity (VARM-Bench Q2): per cue family, JREM on the harmful and the
    non-harmful cue-bearing items, the gap H − NH, label accuracy and over-flagging.

    Example: [bold]verimod diagnose cues runs/A runs/B --subset cues.jsonl[/bold]
    """
    from verimod.tasks.varm.cues import cue_report, cue_reports_table, cue_subset_ids
    from verimod.tasks.varm.io import load_references

    with bad_input_exits():
        lexicons = _lexicons(lexicon)
        ids = None if subset is None else cue_subset_ids(load_references(subset), str(subset))
        reports = [cue_report(load_run(resolve_run_dir(run, runs_dir)), lexicons, ids) for run in runs]
    if as_json:
        sys.stdout.write(json.dumps([r.model_dump() for r in reports], ensure_ascii=False, indent=2) + "\n")
        return
    console.print(cue_reports_table(reports))


AllowDifferentItems = Annotated[
    bool,
    typer.Option(
        "--allow-different-items",
        help="Compare runs over different item sets anyway (their numbers are marked as such).",
    ),
]


def comparable_runs(scored: Sequence[ScoredRun], allow_different_items: bool) -> str | None:
    """None when the runs cover the same items; else an input error naming
    --allow-different-items, or (with it) the difference, to be shown beside the numbers."""
    from verimod.core.errors import InputError
    from verimod.report.labels import item_set_difference

    difference = item_set_difference(scored)
    if difference is not None and not allow_different_items:
        raise InputError.at(
            "runs", None, None, f"{difference}: their numbers do not compare (--allow-different-items to show them)"
        )
    return difference


@diagnose_app.command("plots")
def plots(
    runs: Annotated[list[Path], typer.Argument(help=RUNS_HELP)],
    out_dir: Annotated[Path, typer.Option("--out-dir", "-o", help="Folder for the PNG and SVG files.")] = Path("plots"),
    bootstrap: BootstrapOpt = 1000,
    seed: SeedOpt = 0,
    subset: Annotated[
        Path | None,
        typer.Option(help="A cue subset file (diagnose cue-subset): the cue figure over its subsets (Fig. 4)."),
    ] = None,
    allow_different_items: AllowDifferentItems = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")] = False,
    runs_dir: RunsDirOption = DEFAULT_RUNS_DIR,
) -> None:
    """Plots of one or more runs, as PNG and SVG: field mismatch, Shapley terms, per-category
    F1 with bootstrap CIs, confusion matrices, JREM by cue family; every bar says how many
    items it rests on. Runs over different item sets are refused (unless
    --allow-different-items, which marks the figures).

    Example: [bold]verimod diagnose plots runs/A runs/B -o plots/ --subset cues.jsonl[/bold]
    """
    from verimod.report.figures import cue_jrem, run_figures
    from verimod.report.plots import save_figure
    from verimod.tasks.varm.cues import cue_subset_ids
    from verimod.tasks.varm.io import load_references

    with bad_input_exits():
        scored = [load_run(resolve_run_dir(r, runs_dir)) for r in runs]
        note = comparable_runs(scored, allow_different_items)
        ids = None
        if subset is not None:
            ids = cue_subset_ids(load_references(subset), str(subset))
            if not ids:
                from verimod.core.errors import InputError

                raise InputError.at(str(subset), None, "meta.cues", "no cue subset: write it with diagnose cue-subset")
    written = []
    for stem, figure in run_figures(scored, bootstrap, seed, cue_jrem(scored, ids), note).items():
        written += save_figure(figure, out_dir / stem)
    if note is not None:
        err_console.print(f"warning: {note}; the figures say so", highlight=False)
    if not quiet:
        console.print(f"{len(written)} files written to {out_dir}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``diagnose`` group to the root application."""
    app.add_typer(diagnose_app, name="diagnose", rich_help_panel="Evaluate")
