"""``verimod safeqa report``: target-model and judge metrics as tables (terminal, Markdown, tidy
CSV) or JSON, audited on any subset of pairs against the adjudicated or the source labels."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table as RichTable

from verimod.cli.common import bad_input_exits, console, err_console
from verimod.core.errors import InputError
from verimod.tasks.safeqa import io

FORMATS = ("table", "md", "csv", "json")


def _rich(table: Any) -> RichTable:
    from verimod.tasks.safeqa.report_tables import cell_text

    out = RichTable(title=table.title)
    for column in table.columns:
        out.add_column(column.name, justify="left" if column.kind == "text" else "right")
    for row in table.rows:
        out.add_row(*(cell_text(column, value) for column, value in zip(table.columns, row, strict=True)))
    return out


def report_command(
    queries_path: Annotated[Path, typer.Argument(help="Queries (JSONL).")],
    responses_path: Annotated[Path, typer.Argument(help="Responses (JSONL).")],
    references_path: Annotated[Path, typer.Argument(help="Reference labels (JSONL).")],
    judge_outputs: Annotated[
        list[Path] | None, typer.Option("--judges", help="Judge outputs to audit (repeatable).")
    ] = None,
    only: Annotated[
        Path | None, typer.Option(help="Report on the pair ids listed in this file only (one per line).")
    ] = None,
    against: Annotated[
        str, typer.Option(help="Audit judges against 'reference' (adjudicated) or 'source' (the data set's gold).")
    ] = "reference",
    output_format: Annotated[str, typer.Option("--format", help="table | md | csv | json")] = "table",
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for the 95% CIs.")] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Also write every metric as JSON ('-': stdout).")
    ] = None,
) -> None:
    """Target-model rates (unsafe, safe, refusal, risk-leakage index, high-actionability violation
    rate; base vs adversarial; per method and category) and judge audits (recall, safe-response
    FPR, precision, accuracy, F1 under D→Safe and D→Unsafe, conflict, coverage; per method and
    category; agreement between judges; conflict shift). Judges can be audited on any subset of
    pairs (--only; outputs on other pairs are left out and counted) and against the source gold
    labels (--against source); a judge that helped build the references it is audited against is
    flagged. Warnings go to stderr.

    Example: [bold]verimod safeqa report sq/all.jsonl sq/responses.jsonl sq/refs.jsonl --judges sq/judges.jsonl
    --format md[/bold]
    """
    from verimod.tasks.safeqa.audit import audit_set
    from verimod.tasks.safeqa.metrics import judge_metrics, target_metrics
    from verimod.tasks.safeqa.metrics_diagnostics import diagnostic_metrics
    from verimod.tasks.safeqa.refusal import is_refusal
    from verimod.tasks.safeqa.report_tables import report_tables, to_markdown, to_tidy_csv

    with bad_input_exits():
        if output_format not in FORMATS:
            raise InputError.at("--format", None, None, f"choose {' | '.join(FORMATS)}, got {output_format!r}")
        if against not in ("reference", "source"):
            raise InputError.at("--against", None, None, f"choose reference or source, got {against!r}")
        pairs = io.build_pairs(
            io.load_queries(queries_path), io.load_responses(responses_path), io.load_reference_labels(references_path)
        )
        outputs = [o for path in judge_outputs or [] for o in io.load_judge_outputs(path)]
        wanted = None
        if only is not None:
            wanted = {line.strip() for line in only.read_text(encoding="utf-8").splitlines() if line.strip()}
        try:
            audited, kept_outputs, record = audit_set(pairs, outputs, only=wanted, against=against)  # type: ignore[arg-type]
        except ValueError as exc:
            raise InputError.at("--only", None, None, str(exc)) from None
        target_pairs = audited if only is not None else pairs
        try:
            targets = target_metrics(target_pairs, is_refusal=is_refusal, n_resamples=bootstrap, seed=seed)
            diagnostics = diagnostic_metrics(target_pairs)
            judges_report = (
                judge_metrics(audited, kept_outputs, n_resamples=bootstrap, seed=seed) if kept_outputs else None
            )
        except ValueError as exc:
            raise InputError.at("--judges", None, None, str(exc)) from None
    banner = _banner(record, only is not None)
    if banner:
        err_console.print(f"note: {banner}", highlight=False, soft_wrap=True)
    for line in record.warnings() if outputs else []:
        err_console.print(f"warning: {line}", highlight=False, soft_wrap=True)
    payload = {
        "audit": record.model_dump(),
        "targets": targets.model_dump(),
        "diagnostics": diagnostics.model_dump(),
        "judges": None if judges_report is None else judges_report.model_dump(),
    }
    if json_out:
        text = json.dumps(payload, ensure_ascii=False, indent=2) + "\n"
        if json_out == "-":
            sys.stdout.write(text)
            return
        Path(json_out).write_text(text, encoding="utf-8")
    tables = report_tables(targets, diagnostics, judges_report)
    if output_format == "json":
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
    elif output_format == "md":
        sys.stdout.write(to_markdown(tables))
    elif output_format == "csv":
        sys.stdout.write(to_tidy_csv(tables))
    else:
        for table in tables:
            console.print(_rich(table))
        if judges_report is not None:
            console.print(
                f"judge × category cells whose conflict rate rises from base to adversarial: "
                f"{judges_report.n_conflict_cells_rising} of {judges_report.n_conflict_cells}",
                highlight=False,
                soft_wrap=True,
            )


def _banner(record: Any, subset: bool) -> str | None:
    """What item set the numbers are on, when it is not every pair against the references."""
    parts = []
    if subset:
        parts.append(f"the report covers {record.n_pairs} of {record.n_pairs_given} pairs (--only)")
    if record.against == "source":
        parts.append(f"judges are audited against the source gold labels ({record.n_labelled} pairs have one)")
    return "; ".join(parts) or None
