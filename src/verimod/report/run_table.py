"""Tables of runs laid out like the VARM-Bench results table (Table 1).

Columns: run, model, setting, N, then label and category macro-F1, T-F1, type, explicitness and
stance macro-F1, Parse, Format, JREM, HER-C, HER-L — in percent with two decimals for
``table``/``md``/``csv``/``latex``, as fractions for ``json``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any, Final, Literal

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


def render_runs(rows: Sequence[dict[str, Any]], fmt: TableFormat) -> str | Table:
    """The runs as a Rich table (``table``) or as text in the given format.

    Each row is a dict with ``run``, ``model``, ``setting``, ``status`` and ``scores`` (the
    run's scores.json, or None when it has not been scored).
    """
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
        for header in headers:
            table.add_column(header, justify="left" if header in ("Run", "Model", "Setting") else "right")
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
