"""The tables of ``safeqa report``: overall, per transformation method and per risk category, for
target models and for judges, rendered as terminal tables, Markdown or tidy CSV.

Tables (:func:`report_tables`), rates as fractions (rendered as percentages):

- ``targets`` — per model and pool: pairs, unsafe-response rate with its bootstrap 95 % CI,
  safe and refusal rates, disputed pairs, risk-leakage index (RLI) and high-actionability
  violation rate (HAVR, :mod:`.metrics_diagnostics`);
- ``targets_by_method`` — per model and transformation method (adversarial pool): pairs, unsafe,
  refusal, RLI, HAVR;
- ``targets_by_category`` — per model and category: base and adversarial unsafe rates, their
  difference in percentage points, RLI and HAVR over both pools;
- ``judges`` — per judge and pool: binary pairs, unsafe recall, safe-response FPR, precision,
  accuracy and F1 under D→Safe and D→Unsafe, conflict rate, normalisation coverage;
- ``judges_by_method`` / ``judges_by_category`` — the same per method / category (both pools).

A rate whose denominator is 0 shows ``n/a`` (None in CSV and JSON), never 0 or 100 %. The C-SafeQA
HTML report has no SafeQA section, so these tables are given by the CLI (``--format
table|md|csv|json``).

CSV is *tidy*: one line per (table, row, metric) — columns ``table, subject, pool, by, key,
metric, value`` — so a spreadsheet or pandas pivots it at will; rates are fractions.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from verimod.tasks.safeqa.metrics_diagnostics import DiagnosticRates, DiagnosticReport
from verimod.tasks.safeqa.metrics_judges import JudgeReport, JudgeScores
from verimod.tasks.safeqa.metrics_targets import TargetRates, TargetReport

Kind = Literal["text", "int", "pct", "pp", "ci"]
TABLES = ("targets", "targets_by_method", "targets_by_category", "judges", "judges_by_method", "judges_by_category")


@dataclass(frozen=True, slots=True)
class Column:
    """A column: its header and how its values are shown (``pct``: fraction → %, ``pp``: points,
    ``ci``: ``(low, high)`` fractions)."""

    name: str
    kind: Kind = "pct"


@dataclass(slots=True)
class Table:
    """A titled table; ``ids`` columns identify a row (subject, pool, by, key in tidy CSV)."""

    name: str
    title: str
    columns: list[Column]
    rows: list[list[Any]] = field(default_factory=list)
    subject: str = "model"
    by: str | None = None


def _pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f}"


def cell_text(column: Column, value: Any) -> str:
    """How a value is shown in a terminal or Markdown table."""
    if column.kind == "text":
        return "" if value is None else str(value)
    if column.kind == "int":
        return str(value)
    if column.kind == "pp":
        return "n/a" if value is None else f"{value:+.1f}"
    if column.kind == "ci":
        return "" if value is None or value[0] is None else f"{_pct(value[0])}–{_pct(value[1])}"
    return _pct(value)


def _diag(
    report: DiagnosticReport | None, model: str, by: str, key: str | None, pool: str | None
) -> DiagnosticRates | None:
    if report is None:
        return None
    for row in report.rows:
        if (row.model, row.by, row.key, row.pool) == (model, by, key, pool):
            return row
    return None


def _rli(d: DiagnosticRates | None) -> tuple[float | None, float | None]:
    return (None, None) if d is None else (d.risk_leakage_index, d.high_actionability_rate)


def target_tables(targets: TargetReport, diagnostics: DiagnosticReport | None) -> list[Table]:
    """The three target-model tables."""
    overall = Table(
        "targets",
        "target models (rates over binary-resolved pairs, %)",
        [Column("model", "text"), Column("pool", "text"), Column("n", "int"), Column("unsafe"), Column("95% CI", "ci"),
         Column("safe"), Column("refusal"), Column("disputed", "int"), Column("RLI"), Column("HAVR")],
    )  # fmt: skip
    by_method = Table(
        "targets_by_method",
        "target models per transformation method (adversarial pool, %)",
        [Column("model", "text"), Column("method", "text"), Column("n", "int"), Column("unsafe"), Column("refusal"),
         Column("RLI"), Column("HAVR")],
        by="method",
    )  # fmt: skip
    by_category = Table(
        "targets_by_category",
        "target models per risk category (%; Δ in points, adversarial − base)",
        [Column("model", "text"), Column("category", "text"), Column("n base", "int"), Column("unsafe base"),
         Column("n adv.", "int"), Column("unsafe adv."), Column("Δ", "pp"), Column("RLI"), Column("HAVR")],
        by="category",
    )  # fmt: skip
    rows: dict[tuple[str, str, str | None, str | None], TargetRates] = {
        (r.model, r.by, r.key, r.pool): r for r in targets.rates
    }
    for r in targets.rates:
        if r.by == "all":
            ci = None if r.unsafe_rate_ci is None else (r.unsafe_rate_ci.low, r.unsafe_rate_ci.high)
            rli, havr = _rli(_diag(diagnostics, r.model, "all", None, r.pool))
            overall.rows.append([r.model, r.pool or "all", r.n_pairs, r.unsafe_rate, ci, r.safe_rate, r.refusal_rate,
                                 r.n_disputed, rli, havr])  # fmt: skip
        elif r.by == "method" and r.pool == "adversarial":
            rli, havr = _rli(_diag(diagnostics, r.model, "method", r.key, "adversarial"))
            by_method.rows.append([r.model, r.key, r.n_pairs, r.unsafe_rate, r.refusal_rate, rli, havr])
        elif r.by == "category" and r.pool is None:
            base, adv = (
                rows.get((r.model, "category", r.key, "base")),
                rows.get((r.model, "category", r.key, "adversarial")),
            )
            delta = None
            if base is not None and adv is not None and base.unsafe_rate is not None and adv.unsafe_rate is not None:
                delta = 100 * (adv.unsafe_rate - base.unsafe_rate)
            rli, havr = _rli(_diag(diagnostics, r.model, "category", r.key, None))
            by_category.rows.append([
                r.model, r.key, 0 if base is None else base.n_pairs, None if base is None else base.unsafe_rate,
                0 if adv is None else adv.n_pairs, None if adv is None else adv.unsafe_rate, delta, rli, havr,
            ])  # fmt: skip
    return [overall, by_method, by_category]


def _judge_columns(first: str) -> list[Column]:
    return [
        Column("judge", "text"), Column(first, "text"), Column("n", "int"),
        Column("recall D→S"), Column("recall D→U"), Column("FPR D→S"), Column("FPR D→U"),
        Column("precision D→S"), Column("accuracy D→S"), Column("accuracy D→U"), Column("F1 D→S"), Column("F1 D→U"),
        Column("conflict"), Column("coverage"),
    ]  # fmt: skip


def _judge_row(s: JudgeScores, second: str | None) -> list[Any]:
    a, b = s.disputed_as_safe, s.disputed_as_unsafe
    return [s.judge, second, s.n_binary, a.unsafe_recall, b.unsafe_recall, a.safe_response_fpr, b.safe_response_fpr,
            a.precision, a.accuracy, b.accuracy, a.f1, b.f1, s.conflict_rate, s.coverage]  # fmt: skip


def judge_tables(judges: JudgeReport) -> list[Table]:
    """The three judge tables (``n``: binary-resolved pairs)."""
    overall = Table("judges", "judges (binary-resolved pairs; D→S / D→U: disputed predictions as safe / unsafe, %)",
                    _judge_columns("pool"), subject="judge")  # fmt: skip
    by_method = Table("judges_by_method", "judges per transformation method (both pools, %)", _judge_columns("method"),
                      subject="judge", by="method")  # fmt: skip
    by_category = Table("judges_by_category", "judges per risk category (both pools, %)", _judge_columns("category"),
                        subject="judge", by="category")  # fmt: skip
    for s in judges.scores:
        if s.by == "all":
            overall.rows.append(_judge_row(s, s.pool or "all"))
        elif s.by == "method" and s.pool is None:
            by_method.rows.append(_judge_row(s, s.key))
        elif s.by == "category" and s.pool is None:
            by_category.rows.append(_judge_row(s, s.key))
    return [overall, by_method, by_category]


def report_tables(
    targets: TargetReport, diagnostics: DiagnosticReport | None = None, judges: JudgeReport | None = None
) -> list[Table]:
    """Every table of the report, in :data:`TABLES` order (judge tables only with a judge report)."""
    tables = target_tables(targets, diagnostics)
    if judges is not None:
        tables += judge_tables(judges)
    return tables


def to_markdown(tables: Sequence[Table]) -> str:
    """GitHub-flavoured Markdown: a heading and a table per table (``|`` in cells escaped)."""
    out = []
    for table in tables:
        out.append(f"### {table.title}\n")
        if not table.rows:
            out.append("(no rows)\n")
            continue
        out.append("| " + " | ".join(c.name for c in table.columns) + " |")
        out.append("|" + "|".join("---" if c.kind == "text" else "---:" for c in table.columns) + "|")
        for row in table.rows:
            cells = [
                cell_text(c, v).replace("|", "\\|").replace("\n", " ") for c, v in zip(table.columns, row, strict=True)
            ]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out) + "\n"


def to_tidy_csv(tables: Sequence[Table]) -> str:
    """Tidy CSV: ``table, subject, pool, by, key, metric, value`` (rates as fractions, module docstring)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["table", "subject", "pool", "by", "key", "metric", "value"])
    for table in tables:
        for row in table.rows:
            subject, second = row[0], row[1]
            pool = second if table.by is None else ("adversarial" if table.name == "targets_by_method" else "all")
            key = second if table.by is not None else ""
            for column, value in list(zip(table.columns, row, strict=True))[2:]:
                if column.kind == "ci":
                    low, high = (None, None) if value is None else value
                    writer.writerow(
                        [table.name, subject, pool, table.by or "all", key, f"{column.name} low", _plain(low)]
                    )
                    writer.writerow(
                        [table.name, subject, pool, table.by or "all", key, f"{column.name} high", _plain(high)]
                    )
                else:
                    writer.writerow([table.name, subject, pool, table.by or "all", key, column.name, _plain(value)])
    return buffer.getvalue()


def _plain(value: Any) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)
