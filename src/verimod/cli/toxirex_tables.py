"""The tables ``verimod toxirex evaluate`` and ``agree`` print (numbers as the report holds them;
NaN shows as "n/a", never as 0 or 100 %)."""

from __future__ import annotations

import json
import math
from typing import Any

from rich.table import Table

from verimod.cli.common import console
from verimod.report.tables import percent


def scores_table(report: Any, mode: str, settings: list[str], group: str = "") -> Table:
    """Weighted P/R/F1 beside the Prior for one annotation mode (random: the share of non-empty
    draws; majority: the comments without a majority)."""
    caption = "invalid: unparseable or missing predictions among the n items (scored wrong)"
    columns = ["variable", "setting", "n", "invalid", "P", "R", "F1", "Prior"]
    if mode == "random":
        columns.insert(3, "draws")
        caption += "; draws: share of the draws with items (medians over those; n/a when under half)"
    if mode == "majority":
        columns.insert(3, "no majority")
        caption += "; no majority: comments left out, no label had more than half of the annotators"
    table = Table(
        title=f"weighted precision / recall / F1 beside the Prior (%), annotation mode {mode}{group}", caption=caption
    )
    for column in columns:
        table.add_column(column, justify="left" if column in ("variable", "setting") else "right")
    for variable in dict.fromkeys(r.variable for r in report.scores):
        for k, setting in enumerate(settings):
            r = report.score(variable, setting, mode)
            extra = []
            if mode == "random":
                extra = [f"{100 * r.nonempty_share:.0f} %"]
            elif mode == "majority":
                extra = [count_text(r.n_no_majority)]
            scores = (percent(r.precision, 1), percent(r.recall, 1), percent(r.f1, 1), percent(r.prior, 1))
            table.add_row(
                variable if k == 0 else "", setting, count_text(r.n), *extra, count_text(r.n_invalid), *scores,
                end_section=k == len(settings) - 1,
            )  # fmt: skip
    return table


def count_text(value: float) -> str:
    """A count as text (NaN: "n/a")."""
    return "n/a" if math.isnan(value) else f"{value:g}"


def jaccard_table(report: Any, group: str = "") -> Table:
    """Mean Jaccard of the token spans per variable and mode, with the share of non-empty samples."""
    table = Table(title=f"token spans: mean Jaccard (%){group}", caption="draws: share of the samples with items")
    for column in ("variable", "mode", "n", "draws", "Jaccard", "both empty"):
        table.add_column(column, justify="left" if column in ("variable", "mode") else "right")
    for row in report.jaccard:
        table.add_row(row.variable, row.mode, count_text(row.n), f"{100 * row.nonempty_share:.0f} %",
                      percent(row.mean, 1), count_text(row.n_both_empty))  # fmt: skip
    return table


def attitude_table(report: Any, group: str = "") -> Table:
    """The ordinal error table of each attitude."""
    title = f"attitudes: ordinal errors (pairs off by 0 / 1 / 2 / 3+ steps; Not applicable apart){group}"
    table = Table(title=title)
    for column in ("attitude", "0", "1", "2", "3+", "NA both", "NA mismatch", "n"):
        table.add_column(column, justify="left" if column == "attitude" else "right")
    for name, t in report.attitudes.items():
        table.add_row(name, *(str(v) for v in t.steps.values()), str(t.na_both), str(t.na_mismatch), str(t.n))
    return table


def print_evaluation(report: Any, modes: list[str], settings: list[str], group: str) -> None:
    """Every table of one evaluation report (``group`` names a --by group, or is empty)."""
    console.print(
        f"{report.n_comments} comments, {report.n_annotations} annotations{group}; {report.n_missing} without a "
        f"prediction, {report.n_invalid} invalid (scored wrong)",
        highlight=False,
        soft_wrap=True,
    )
    for mode in modes:
        console.print(scores_table(report, mode, settings, group))
    console.print(jaccard_table(report, group))
    summary = report.summary
    console.print(
        f"summary sentences (n = {summary.n}): {json.dumps(summary.counts)}; small differences by slot: "
        f"{json.dumps(summary.small_difference_slots)}",
        highlight=False,
        soft_wrap=True,
    )
    console.print(attitude_table(report, group))


def kappa_table(rows: list[Any], missing: str, bootstrap: int, group: str = "") -> Table:
    """Fleiss' κ per variable with its interval († when resamples with an undefined κ were left out)."""
    table = Table(
        title=f"Fleiss' κ per variable (missing = {missing}){group}",
        caption=f"undefined: resamples (of {bootstrap}) where κ is undefined (one category); † the interval rests on "
        "the others only",
    )
    for column in ("variable", "comments", "κ", "95% CI", "undefined"):
        table.add_column(column, justify="left" if column == "variable" else "right")
    for r in rows:
        interval = "n/a" if math.isnan(r.low) else f"{r.low:.3f}–{r.high:.3f}" + (" †" if r.interval_marked else "")
        kappa = "n/a" if math.isnan(r.kappa) else f"{r.kappa:.3f}"
        table.add_row(r.variable, str(r.n_items), kappa, interval, str(r.n_undefined))
    return table
