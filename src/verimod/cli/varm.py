"""VARM commands: ``score``, ``parse``, ``validate``, ``demo``."""

from __future__ import annotations

import codecs
import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, cast

import typer
from rich.progress import Progress
from rich.text import Text

from verimod.cli.common import (
    EncodingOption,
    QuietOption,
    RunsDirOption,
    bad_input_exits,
    console,
    err_console,
    safe,
)
from verimod.core.errors import InputError, Problem, one_line
from verimod.core.runs import DEFAULT_RUNS_DIR, RunStore, resolve_run_dir
from verimod.data.jsonl import dumps_line, read_jsonl, read_lines, write_json, write_jsonl
from verimod.report.tables import varm_scores_table
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.corrupt import demo_outputs
from verimod.tasks.varm.dataset_checks import SplitChecks
from verimod.tasks.varm.disputes import MODES as DISPUTED_MODES
from verimod.tasks.varm.disputes import DisputedMode, apply_disputes
from verimod.tasks.varm.evaluate import score_run
from verimod.tasks.varm.io import load_outputs, load_references, prediction_at, reference_problems
from verimod.tasks.varm.parser import ParseResult, parse_rationale
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import ItemScore, VarmScorer, VarmScores
from verimod.tasks.varm.starter import load_starter

_PROGRESS_THRESHOLD = 50_000


def _emit_json(scores: VarmScores, target: str) -> None:
    if target == "-":
        sys.stdout.write(json.dumps(scores.model_dump(), ensure_ascii=False, indent=2) + "\n")
    else:
        write_json(target, scores.model_dump())


def _score(references: list[VarmReference], outputs: dict[str, str], per_item: Path | None, quiet: bool) -> VarmScores:
    """Score every reference; stream per-item rows to ``per_item`` when given."""
    scorer = VarmScorer()
    show = not quiet and len(references) >= _PROGRESS_THRESHOLD

    def items() -> Iterator[ItemScore]:
        with Progress(console=err_console, disable=not show, transient=True) as progress:
            task = progress.add_task("scoring", total=len(references))
            for i, ref in enumerate(references):
                yield scorer.add(ref.id, ref, outputs.get(ref.id))
                if i % 10_000 == 0:
                    progress.update(task, completed=i)

    if per_item is not None:
        write_jsonl(per_item, (item.to_dict() for item in items()))
    else:
        for _ in items():
            pass
    return scorer.scores()


def score(
    predictions: Annotated[Path | None, typer.Argument(help='Prediction JSONL: one {"id", "output"} per line.')] = None,
    ref: Annotated[
        Path | None, typer.Option("--ref", "-r", help="References: JSONL, Parquet, datasets folder or hf:NAME[:SPLIT].")
    ] = None,
    run: Annotated[
        Path | None,
        typer.Option("--run", help="Re-score a run's stored outputs (no model call): its directory, id or id prefix."),
    ] = None,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the metrics as JSON to this file ('-' for stdout).")
    ] = None,
    per_item: Annotated[
        Path | None, typer.Option("--per-item", help="Write one JSONL row per item (status, record, J, ...).")
    ] = None,
    disputed: Annotated[
        str,
        typer.Option(
            help="Items whose annotators dispute the source (meta.disputed): keep (scored against the source), "
            "drop, or reading (scored against the annotators' reading); with --ref only."
        ),
    ] = "keep",
    encoding: EncodingOption = None,
    runs_dir: RunsDirOption = DEFAULT_RUNS_DIR,
    quiet: QuietOption = False,
) -> None:
    """Score model outputs against references: field F1, T-F1, Parse, Format, JREM, HER.

    Every reference item counts: a missing or unparseable output is wrong on every field.
    With --run, a run directory is re-scored from its stored outputs with this parser.

    Example: [bold]verimod score preds.jsonl --ref test.jsonl --json scores.json[/bold]
    """
    with bad_input_exits():
        if run is not None:
            if disputed != "keep":
                raise InputError.at("--disputed", None, None, "applies to --ref scoring; a run keeps its own items")
            if predictions is not None or ref is not None:
                raise InputError.at("--run", None, None, "give either --run or PREDICTIONS with --ref, not both")
            store = RunStore.open(resolve_run_dir(run, runs_dir))
            scores, items = score_run(store)
            if per_item is not None:
                write_jsonl(per_item, (item.to_dict() for item in items))
            title = f"VARM scores of run {store.manifest.run_id}"
        else:
            if predictions is None or ref is None:
                raise InputError.at("score", None, None, "give PREDICTIONS and --ref REFERENCES (or --run RUN_DIR)")
            every = load_references(ref, encoding)
            references = apply_disputes(every, _disputed_mode(disputed), str(ref))
            outputs = load_outputs(predictions, [r.id for r in every], encoding, reference_path=str(ref))
            kept = {r.id for r in references}  # --disputed drop: outputs of dropped items are not scored
            outputs = {item_id: output for item_id, output in outputs.items() if item_id in kept}
            scores = _score(references, outputs, per_item, quiet)
            title = f"VARM scores of {predictions.name}"
    if json_out is not None:
        _emit_json(scores, json_out)
    if not quiet and json_out != "-":
        console.print(varm_scores_table(scores, title=title))
        if scores.n_missing:
            console.print(f"{scores.n_missing} reference items had no prediction (scored as unparseable).")


def _disputed_mode(value: str) -> DisputedMode:
    if value not in DISPUTED_MODES:
        raise InputError.at("--disputed", None, None, f"must be one of {', '.join(DISPUTED_MODES)}, got {value!r}")
    return cast(DisputedMode, value)


def _describe(item_id: str, result: ParseResult) -> Text:
    line = safe(item_id, 80) + Text("  ")
    if result.values is None:
        return line + Text(f"parse_error  {result.error_class}: ", style="red") + safe(result.detail or "")
    fields = " | ".join(f"{f}={v}" for f, v in zip(FIELDS, result.values, strict=True))
    verdict = "format ok" if result.format_ok else "format ✗ " + ",".join(result.flags + result.violations)
    return line + Text("ok  ", style="green") + safe(fields, 300) + Text(f"  [{verdict}]")


def _outputs_to_parse(source: str, jsonl: bool, encoding: str | None) -> Iterator[tuple[str, str]]:
    if jsonl:
        for line, obj in read_jsonl(source, encoding):
            prediction = prediction_at(obj, source, line)
            yield prediction.id, prediction.output
    else:
        text = "\n".join(t for _, t in read_lines(source, encoding))
        yield ("-" if source == "-" else Path(source).name), text


def parse(
    source: Annotated[str, typer.Argument(help="A file, or '-' for stdin.")] = "-",
    jsonl: Annotated[
        bool | None,
        typer.Option("--jsonl/--text", help="Input is prediction JSONL (default for *.jsonl) or one raw output."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per output.")] = False,
    encoding: EncodingOption = None,
) -> None:
    """Parse rationales and print each record or the error class.

    Example: [bold]verimod parse preds.jsonl[/bold]   or   [bold]echo '...' | verimod parse -[/bold]
    """
    is_jsonl = source.endswith(".jsonl") if jsonl is None else jsonl
    with bad_input_exits():
        for item_id, output in _outputs_to_parse(source, is_jsonl, encoding):
            result = parse_rationale(output)
            if as_json:
                sys.stdout.buffer.write(dumps_line({"id": item_id, **result.to_dict()}))
            else:
                console.print(_describe(item_id, result), soft_wrap=True)


#: what a file that is not JSON Lines probably is, by its suffix
_OTHER_FORMATS = {
    ".csv": "a CSV file",
    ".tsv": "a TSV file",
    ".txt": "a text file",
    ".json": "a JSON document",
    ".parquet": "a Parquet file",
    ".xlsx": "an Excel file",
    ".xls": "an Excel file",
}


def not_json_lines(path: Path) -> Problem | None:
    """A one-line problem, with the command that converts it, when ``path`` is not JSON Lines
    at all: its first non-blank line does not begin with ``{`` (a table, a JSON array, a
    binary file). None otherwise — also for a UTF-16 file or an unreadable one, whose
    problems the reference check reports itself."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
    except OSError:
        return None
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    first = next((line.strip() for line in head.removeprefix(codecs.BOM_UTF8).splitlines() if line.strip()), b"")
    if not first or first.startswith(b"{"):
        return None
    kind = _OTHER_FORMATS.get(path.suffix.lower(), "not JSON Lines")
    what = kind if kind == "not JSON Lines" else f"{kind}, not JSON Lines"
    return Problem(
        str(path),
        1,
        None,
        f"{what} (one JSON object per line); convert it first: verimod data convert --from generic "
        f"--map 'text=COLUMN; label=COLUMN:1=harmful,0=non_harmful' {path} refs.jsonl "
        "(public data sets: verimod data convert --list)",
    )


def validate(
    reference: Annotated[
        Path, typer.Argument(help="References to check: JSONL, Parquet, datasets folder or hf:NAME[:SPLIT].")
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the problems as JSON.")] = False,
    partial: Annotated[
        bool, typer.Option("--partial", help="Accept partial references (records missing some of the six fields).")
    ] = False,
    splits: Annotated[
        bool,
        typer.Option(
            "--splits",
            help="Data-set checks: every item split, no near-duplicates across splits, label/category drift per split.",
        ),
    ] = False,
    threshold: Annotated[
        float, typer.Option(min=0.0, max=100.0, help="Near-duplicate threshold (fuzz.ratio, 0–100) for --splits.")
    ] = 95.0,
    max_drift: Annotated[
        float, typer.Option(min=0.0, max=100.0, help="Largest label/category drift per split, in points.")
    ] = 1.0,
    drift_alpha: Annotated[
        float,
        typer.Option(
            help="A drift is a problem only when its two-proportion z-test against the other splits has "
            "p below this (1.0: every drift over --max-drift; 0: no drift check).",
            min=0.0,
            max=1.0,
        ),
    ] = 0.01,
    encoding: EncodingOption = None,
    quiet: QuietOption = False,
) -> None:
    """Check a reference file: fields, values, codebook constraints, duplicate ids, rationales
    and, with --splits, split leakage and label/category drift.

    Exit code 2 when any problem is found; each is reported as FILE:LINE: field: message.

    Example: [bold]verimod validate data/test.jsonl[/bold]
    """
    checks = SplitChecks(threshold=threshold, max_drift_pp=max_drift, drift_alpha=drift_alpha) if splits else None
    wrong_format = not_json_lines(reference)
    if wrong_format is not None:  # one line, not one "invalid JSON" per row
        count, problems = 0, [wrong_format]
    else:
        count, problems = reference_problems(reference, encoding, require_complete=not partial, splits=checks)
    if as_json:
        report = {
            "file": str(reference),
            "items": count,
            "problems": [{"line": p.line, "field": p.field, "message": p.message} for p in problems],
        }
        sys.stdout.write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    else:
        for problem in problems:
            typer.echo(one_line(str(problem), 1000))
        if not quiet:
            verdict = "OK" if not problems else f"{len(problems)} problem(s)"
            console.print(f"{reference}: {count} item(s) checked, {verdict}", soft_wrap=True)
    if problems:
        raise typer.Exit(2)


def demo(
    out: Annotated[
        Path | None, typer.Option("--out", help="Keep the demonstration files in this folder (else nothing is kept).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the corruption draw.")] = 0,
    split: Annotated[str, typer.Option(help="Starter split to use.")] = "test",
    json_out: Annotated[str | None, typer.Option("--json", help="Write the metrics as JSON ('-': stdout).")] = None,
    quiet: QuietOption = False,
) -> None:
    """Score a demonstration prediction file built from the bundled starter set.

    A stand-in until a model is evaluated: the predictions are the starter split's reference
    rationales with a seeded mix of realistic corruptions (wrong referents, flipped labels,
    lenient formatting, broken anchors, missing outputs). With --out the reference and
    prediction files are kept there; without it they live in a temporary folder that is removed.

    Example: [bold]verimod demo --out demo/[/bold]
    """
    references = load_starter(split)
    outputs, applied = demo_outputs(references, seed=seed)
    with contextlib.ExitStack() as stack:
        folder = (
            out if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="verimod-demo-")))
        )
        with bad_input_exits():
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError.at(str(folder), None, None, f"cannot create the folder: {exc.strerror}") from None
        ref_path, pred_path = folder / f"starter_{split}.jsonl", folder / "demo_predictions.jsonl"
        write_jsonl(ref_path, (r.model_dump(exclude_none=True) for r in references))
        write_jsonl(pred_path, ({"id": i, "output": o, "corruption": applied[i]} for i, o in outputs.items()))
        with bad_input_exits():
            scores = _score(references, load_outputs(pred_path, outputs, reference_path=str(ref_path)), None, quiet)
    if json_out is not None:
        _emit_json(scores, json_out)
    if not quiet and json_out != "-":
        console.print(
            f"Demonstration: {len(references)} starter '{split}' items, predictions = reference rationales "
            f"with seeded corruptions (seed {seed}); not a model's output."
        )
        console.print(varm_scores_table(scores, title="VARM scores (demonstration)"))
        if out is None:
            console.print("No files kept (keep them with --out DIR).")
        else:
            # lines never folded by Rich (a path cut in two cannot be copied); the terminal wraps them
            console.print(Text(f"Files kept in {out}; re-score them with:"), soft_wrap=True)
            console.print(Text(f"  verimod score {pred_path} --ref {ref_path}"), soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add the VARM commands to the root application."""
    app.command(rich_help_panel="VARM")(score)
    app.command(rich_help_panel="VARM")(parse)
    app.command(rich_help_panel="VARM")(validate)
    app.command(rich_help_panel="VARM")(demo)
