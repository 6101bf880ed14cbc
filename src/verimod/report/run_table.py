"""Tables of runs laid out like the VARM-Bench results table (Table 1).

Columns: run, model, setting, N, then label and category macro-F1, T-F1, type, explicitness and
stance macro-F1, Parse, Format, JREM, HER-C, HER-L — in percent with two decimals for
``table``/``md``/``csv``/``latex``, as fractions for ``json``. The ``table`` format is compact
unless ``wide``: short run ids (``row["short"]``, a prefix that still names the run) and the
headline metrics Label, JREM and HER-L, so that it fits 80 columns.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any, Final, Literal

from rich import box
from rich.table import Table

from verimod.report.tables import percent

TableFormat = Literal["table", "md", "csv", "latex", "json"]
FORMATS: Final = ("table", "md", "csv", "latex", "json")

#: (header, key in scores.json)
METRIC_COLUMNS: Final = (
    ("Label", "label_macro_f1"),
    ("Category", "category_macro_f1"),
    ("T-F1", "target_char_f1"),
    ("Type", "target_type_macro_f1"),
    ("Expl.", "explicitness_macro_f1"),
    ("Stance", "stance_macro_f1"),
    ("Parse", "parse_rate"),
    ("Format", "format_rate"),
    ("JREM", "jrem"),
    ("HER-C", "her_c"),
    ("HER-L", "her_l"),
)
ID_COLUMNS: Final = ("Run", "Model", "Setting", "N")
#: the metrics of the compact table
COMPACT_METRICS: Final = (("Label", "label_macro_f1"), ("JREM", "jrem"), ("HER-L", "her_l"))
#: the width the compact table fits in
COMPACT_WIDTH: Final = 80


def _cells(row: dict[str, Any]) -> list[str]:
    scores = row.get("scores") or {}
    n = scores.get("n")
    cells = [row["run"], row["model"], row["setting"], "" if n is None else str(n)]
    if not scores:
        return cells + [row.get("status", "not scored")] + [""] * (len(METRIC_COLUMNS) - 1)
    return cells + [percent(scores.get(key)) for _, key in METRIC_COLUMNS]


def _latex_escape(text: str) -> str:
    for char, escaped in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("$", r"\$"),
        ("#", r"\#"),
        ("_", r"\_"),
        ("{", r"\{"),
        ("}", r"\}"),
        ("~", r"\textasciitilde{}"),
        ("^", r"\textasciicircum{}"),
    ):
        text = text.replace(char, escaped)
    return text


def compact_table(rows: Sequence[dict[str, Any]]) -> Table:
    """The compact Rich table (module docstring), at most 80 columns wide: short id, model
    (cut with "…" beyond :data:`COMPACT_WIDTH`), setting, N, Label, JREM, HER-L. Unscored runs
    show "-" and are named with their status in the caption."""
    ids = [str(r.get("short") or r["run"]) for r in rows]
    run_width = max((len(i) for i in ids), default=3)
    unscored = [f"{i} ({r.get('status', 'not scored')})" for i, r in zip(ids, rows, strict=True) if not r.get("scores")]
    caption = "--wide: every metric and the full run ids"
    if unscored:
        caption = f"not scored: {', '.join(unscored)}; {caption}"
    table = Table(
        title="VARM runs (%)",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        padding=(0, 1, 0, 0),
        pad_edge=False,
        show_edge=False,
        caption=caption,
    )
    # fixed widths: Run, Setting (9), N (6), three metrics (6 each); 2 characters between columns
    model_width = max(8, COMPACT_WIDTH - run_width - 9 - 6 - 3 * 6 - 2 * 6)
    table.add_column("Run", no_wrap=True, min_width=run_width)
    table.add_column("Model", no_wrap=True, overflow="ellipsis", max_width=model_width)
    table.add_column("Setting", no_wrap=True, overflow="ellipsis", max_width=9)
    table.add_column("N", justify="right", no_wrap=True, overflow="ellipsis", max_width=6)
    for header, _ in COMPACT_METRICS:
        table.add_column(header, justify="right", no_wrap=True, min_width=6, max_width=6)
    for run_id, row in zip(ids, rows, strict=True):
        scores = row.get("scores") or {}
        n = scores.get("n")
        metrics = [percent(scores.get(key)) if scores else "-" for _, key in COMPACT_METRICS]
        table.add_row(run_id, row["model"], row["setting"], "" if n is None else str(n), *metrics)
    return table


def render_runs(rows: Sequence[dict[str, Any]], fmt: TableFormat, wide: bool = True) -> str | Table:
    """The runs as a Rich table (``table``; compact unless ``wide``) or as text in the given
    format (always every column and the full run id).

    Each row is a dict with ``run``, ``model``, ``setting``, ``status`` and ``scores`` (the
    run's scores.json, or None when it has not been scored), and for the compact table
    ``short``, the run's short id.
    """
    if fmt == "table" and not wide:
        return compact_table(rows)
    headers = [*ID_COLUMNS, *(h for h, _ in METRIC_COLUMNS)]
    if fmt == "json":
        return json.dumps(
            [
                {
                    "run": r["run"],
                    "model": r["model"],
                    "setting": r["setting"],
                    "status": r.get("status"),
                    **{key: (r.get("scores") or {}).get(key) for _, key in [("N", "n"), *METRIC_COLUMNS]},
                }
                for r in rows
            ],
            ensure_ascii=False,
            indent=2,
        )
    body = [_cells(r) for r in rows]
    if fmt == "table":
        table = Table(title="VARM runs (%)", header_style="bold")
        longest = max((len(cells[0]) for cells in body), default=3)
        for header in headers:
            if header == "Run":  # the full id, never cut: commands take it
                table.add_column(header, no_wrap=True, min_width=longest)
            else:
                table.add_column(header, justify="left" if header in ("Model", "Setting") else "right")
        for cells in body:
            table.add_row(*cells)
        return table
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(headers)
        writer.writerows(body)
        return out.getvalue()
    if fmt == "md":

        def md(cell: str) -> str:
            return cell.replace("|", "\\|")

        lines = [
            "| " + " | ".join(headers) + " |",
            "|" + "|".join("---" if i < 3 else "---:" for i in range(len(headers))) + "|",
        ]
        lines += ["| " + " | ".join(md(c) for c in cells) + " |" for cells in body]
        return "\n".join(lines) + "\n"
    if fmt == "latex":
        spec = "lll" + "r" * (len(headers) - 3)
        lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule", " & ".join(headers) + r" \\", "\\midrule"]
        lines += [" & ".join(_latex_escape(c) for c in cells) + r" \\" for cells in body]
        lines += ["\\bottomrule", "\\end{tabular}"]
        return "\n".join(lines) + "\n"
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
