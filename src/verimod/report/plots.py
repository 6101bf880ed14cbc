"""Plots of verimod reports: pure functions from plain data to matplotlib figures, and exports.

Every plot function takes plain mappings (no run objects, no files) and returns a
:class:`matplotlib.figure.Figure` built with the object-oriented API on an Agg canvas — pyplot
and its global figure registry are never used, so the functions are safe in threads and
servers. Rates, F1 and Shapley terms come in as *fractions* (as :class:`VarmScores` stores
them) and are drawn in percent (percentage points for Shapley terms). A value of None — or NaN
— is an undefined metric: it leaves a gap marked "n/a", never a zero bar. Names and labels
from data are drawn literally (a ``$`` never starts mathtext) and escaped by matplotlib's SVG
backend. The house style is :data:`verimod.report.plot_style.STYLE`. Given ``counts``, every bar
also says how many items it rests on (``n=…``): a 100 % bar on two items must look like one.

Exports are byte-deterministic: the same figure — or the same data plotted twice — gives the
same PNG and SVG bytes (no dates, a fixed SVG id salt). For that each figure is laid out once
(constrained layout) when it is built and the layout is then frozen: an artist added to a
returned figure is drawn, but the axes are not moved to make room for it.

Example::

    figure = mismatch_bars({"baseline": scores.mismatch})
    save_figure(figure, "report/mismatch")  # report/mismatch.png, report/mismatch.svg
"""

from __future__ import annotations

import base64
import io
import math
import os
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from verimod.report.plot_style import (
    STYLE,
    bar_props,
    font_family,
    freeze_layout,
    legend,
    literal,
    new_figure,
    patch_handle,
    render_context,
    series_color,
    series_hatch,
    set_axis_label,
    set_category_ticks,
    set_title,
    style_axes,
    text_props,
)

__all__ = [
    "CUE_FAMILIES",
    "FORMATS",
    "MISMATCH_FIELDS",
    "SHAPLEY_TERMS",
    "confusion_heatmap",
    "cue_family_bars",
    "figure_to_png",
    "figure_to_png_base64",
    "figure_to_svg",
    "mismatch_bars",
    "per_category_f1",
    "save_figure",
    "shapley_bars",
]

#: Field groups of :func:`mismatch_bars`, in this order (keys as in ``VarmScores.mismatch``).
MISMATCH_FIELDS: Final = ("target", "target_type", "explicitness", "stance", "label", "category")
_FIELD_ALIASES: Final = {"target_explicitness": "explicitness"}

#: Shapley groups of :func:`shapley_bars`, bottom to top.
SHAPLEY_TERMS: Final = ("referent", "stance", "decision")

#: Cue families of :func:`cue_family_bars` (VARM-Bench's four challenge subsets).
CUE_FAMILIES: Final = ("demographic_identity", "social_status", "body_health", "general_abuse")
_CUE_FAMILY_LABELS: Final = {
    "demographic_identity": "demographic\nidentity",
    "social_status": "social status\nor role",
    "body_health": "body, health\nor disability",
    "general_abuse": "general\nabuse",
}

#: Formats :func:`save_figure` writes.
FORMATS: Final = ("png", "svg")

#: SVG metadata: none at all (no date, no creator, no RDF namespaces).
_SVG_METADATA: Final = {"Date": None, "Creator": None, "Format": None, "Type": None}
_ID_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
NA: Final = "n/a"


# ---------------------------------------------------------------------------------------------
# input checks


def _run_names(runs: Mapping[str, Any], function: str) -> list[str]:
    if not runs:
        raise ValueError(f"{function}: no runs to plot")
    return [str(name) for name in runs]


def _number(value: object, where: str) -> float | None:
    """A finite float, or None for None/NaN; ValueError for anything else."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{where}: expected a number or None, got {value!r}")
    number = float(value)
    if math.isnan(number):
        return None
    if math.isinf(number):
        raise ValueError(f"{where}: expected a finite number, got {number}")
    return number


def _tuple(value: object, size: int, where: str) -> tuple[object, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or len(value) != size:
        raise ValueError(f"{where}: expected a sequence of {size} values, got {value!r}")
    return tuple(value)


def _ordered_keys(mappings: Iterable[Mapping[str, Any]], canonical: Sequence[str] = ()) -> list[str]:
    """The canonical keys that occur, in canonical order, then the others in order of first sight."""
    seen = dict.fromkeys(str(key) for mapping in mappings for key in mapping)
    return [key for key in canonical if key in seen] + [key for key in seen if key not in canonical]


# ---------------------------------------------------------------------------------------------
# drawing helpers


def _offsets(n: int, group_width: float = 0.8) -> tuple[float, list[float]]:
    """Bar width and the offsets of *n* bars side by side within one group."""
    width = group_width / n
    return width, [(i - (n - 1) / 2) * width for i in range(n)]


def _na_mark(ax: Axes, position: float, *, horizontal: bool = False) -> None:
    """An "n/a" mark at the foot of the gap left by an undefined value."""
    props = text_props(STYLE.annotation_size, STYLE.muted_color)
    if horizontal:
        ax.text(0.005, position, NA, transform=ax.get_yaxis_transform(), ha="left", va="center", **props)
    else:
        ax.text(position, 0.01, NA, transform=ax.get_xaxis_transform(), rotation=90, ha="center", va="bottom", **props)


def _count(counts: Mapping[str, Mapping[str, Any]] | None, name: str, key: str, where: str) -> Any:
    """The item count of one bar (None without ``counts``); ValueError when one is missing."""
    if counts is None:
        return None
    try:
        return counts[name][key]
    except KeyError:
        raise ValueError(f"{where}: no item count") from None


def _value_label(value: float, n: int | None, digits: int) -> str:
    return f"{value:.{digits}f}" if n is None else f"{value:.{digits}f}\nn={n}"


def _headroom(top: float, factor: float = 1.15) -> float:
    return max(top * factor, 1.0)


# ---------------------------------------------------------------------------------------------
# plots


def mismatch_bars(
    runs: Mapping[str, Mapping[str, float | None]],
    *,
    title: str = "Field mismatch rates",
    counts: Mapping[str, Mapping[str, int]] | None = None,
) -> Figure:
    """Grouped bars of field mismatch rates (VARM-Bench Fig. 5a).

    Contract: one axes; one group per field — :data:`MISMATCH_FIELDS` that occur in any run, in
    that order (``target_explicitness`` is read as ``explicitness``), then any other keys — and
    in each group one bar per run, in the order of *runs*, each labelled with its value.
    *runs* maps a run name to ``{field: rate}`` with rates as fractions in [0, 1], drawn in
    percent. A rate that is None/NaN, or a field a run lacks, draws no bar but an "n/a" text.
    ``ax.containers`` holds one ``BarContainer`` per run; ``ax.patches`` one bar per defined
    rate. ``counts[run][field]`` (keys as in *runs*), when given, adds ``n=…`` under each value.
    ValueError for no runs, no fields, a non-numeric or infinite rate, or a missing count.
    """
    names = _run_names(runs, "mismatch_bars")
    if counts is not None:
        counts = {n: {_FIELD_ALIASES.get(str(k), str(k)): v for k, v in counts.get(n, {}).items()} for n in runs}
    rates = {name: {_FIELD_ALIASES.get(str(k), str(k)): v for k, v in runs[name].items()} for name in runs}
    fields = _ordered_keys(rates.values(), MISMATCH_FIELDS)
    if not fields:
        raise ValueError("mismatch_bars: no field to plot")
    figure = new_figure(max(6.0, 1.2 + len(fields) * (0.3 + 0.16 * len(names))), 3.8)
    ax = figure.add_subplot()
    style_axes(ax)
    width, offsets = _offsets(len(names))
    rotate = len(names) > 3
    top = 0.0
    handles = []
    for i, (name, run) in enumerate(zip(names, rates.values(), strict=True)):
        color, hatch = series_color(i), series_hatch(i)
        xs: list[float] = []
        heights: list[float] = []
        texts: list[str] = []
        for j, field in enumerate(fields):
            where = f"mismatch_bars: run {name!r}, field {field!r}"
            value = _number(run.get(field), where)
            if value is None:
                _na_mark(ax, j + offsets[i])
            else:
                xs.append(j + offsets[i])
                heights.append(100 * value)
                texts.append(_value_label(100 * value, _count(counts, name, field, where), 1))
        container = ax.bar(xs, heights, width, **bar_props(color, hatch))
        ax.bar_label(container, texts, padding=1.5, rotation=90 if rotate else 0, **text_props(STYLE.annotation_size))
        top = max(top, *heights) if heights else top
        handles.append(patch_handle(name, color, hatch))
    ax.set_ylim(0, _headroom(top, (1.3 if rotate else 1.15) + (0.15 if counts is not None else 0.0)))
    ax.set_xlim(-0.5, len(fields) - 0.5)
    set_category_ticks(ax, "x", range(len(fields)), fields)
    set_axis_label(ax, "y", "mismatch rate (%)")
    legend(figure, handles)
    set_title(figure, title)
    return freeze_layout(figure)


def shapley_bars(
    runs: Mapping[str, Mapping[str, float]],
    *,
    title: str = "Shapley decomposition of Parse − JREM",
    counts: Mapping[str, int] | None = None,
) -> Figure:
    """Stacked bars of the Shapley terms of Parse − JREM, one bar per run (VARM-Bench Fig. 5b).

    Contract: one axes; one ``BarContainer`` per term — :data:`SHAPLEY_TERMS` that occur, in
    that order (bottom to top), then any other keys — with one segment per run (a term a run
    lacks counts 0). *runs* maps a run name to ``{term: value}`` with values as fractions,
    drawn in percentage points. Positive terms stack upwards from 0 and negative terms
    downwards from 0, so each segment's height is its term; a black dash marks each run's
    total (= Parse − JREM) and one text above the bar gives it (``ax.texts`` holds exactly one
    text per run; with ``counts[run]``, the run's item count under the total). ValueError for no
    runs, no terms, a None/NaN/infinite/non-numeric term, or a missing count.
    """
    names = _run_names(runs, "shapley_bars")
    if counts is not None and any(name not in counts for name in names):
        raise ValueError("shapley_bars: no item count for a run")
    terms = _ordered_keys(runs.values(), SHAPLEY_TERMS)
    if not terms:
        raise ValueError("shapley_bars: no Shapley term to plot")
    values = np.zeros((len(terms), len(names)))
    for j, run in enumerate(runs.values()):
        for k, term in enumerate(terms):
            value = _number(run.get(term, 0.0), f"shapley_bars: run {names[j]!r}, term {term!r}")
            if value is None:
                raise ValueError(f"shapley_bars: run {names[j]!r}, term {term!r} is undefined (None or NaN)")
            values[k, j] = 100 * value
    figure = new_figure(max(4.8, 1.8 + 0.85 * len(names)), 4.0)
    ax = figure.add_subplot()
    style_axes(ax)
    x = np.arange(len(names), dtype=float)
    positive = np.zeros(len(names))
    negative = np.zeros(len(names))
    handles: list[Any] = []
    for k, term in enumerate(terms):
        row = values[k]
        bottom = np.where(row >= 0, positive, negative)
        color, hatch = series_color(k), series_hatch(k)
        ax.bar(x, row, 0.6, bottom=bottom, **bar_props(color, hatch))
        positive += np.clip(row, 0, None)
        negative += np.clip(row, None, 0)
        handles.append(patch_handle(term, color, hatch))
    totals = positive + negative
    ax.axhline(0, color=STYLE.spine_color, linewidth=0.8)
    ax.plot(x, totals, linestyle="none", marker="_", markersize=22, markeredgewidth=2, color=STYLE.text_color)
    handles.append(
        Line2D([], [], linestyle="none", marker="_", markersize=12, markeredgewidth=2, color=STYLE.text_color,
               label="total (Parse − JREM)")
    )  # fmt: skip
    props = text_props(STYLE.annotation_size)
    for xi, total, top, name in zip(x, totals, positive, names, strict=True):
        ax.annotate(
            _value_label(total, None if counts is None else counts[name], 1), (xi, max(top, total)), xytext=(0, 3),
            textcoords="offset points", ha="center", va="bottom", **props,
        )  # fmt: skip
    low, high = float(min(negative.min(), 0.0)), float(max(positive.max(), 0.0))
    span = (high - low) or 1.0
    ax.set_ylim(low - 0.08 * span if low < 0 else 0.0, high + (0.25 if counts is not None else 0.15) * span)
    ax.set_xlim(-0.6, len(names) - 0.4)
    set_category_ticks(ax, "x", x.tolist(), names)
    set_axis_label(ax, "y", "percentage points")
    legend(figure, handles)
    set_title(figure, title)
    return freeze_layout(figure)


def cue_family_bars(
    runs: Mapping[str, Mapping[str, tuple[float | None, float | None]]],
    *,
    title: str = "JREM by cue family",
    counts: Mapping[str, Mapping[str, tuple[int, int]]] | None = None,
) -> Figure:
    """JREM on harmful vs non-harmful items of each cue family, one panel per run (VARM-Bench Fig. 4).

    Contract: one axes per run, in the order of *runs*, titled with the run name, in a grid of
    at most three columns with a shared y axis (JREM, %). In each panel one pair of bars per
    family — :data:`CUE_FAMILIES` that occur in any run, in that order, then any other keys —
    harmful (vermillion, left) and non-harmful (blue, right), each labelled with its value;
    each panel has two ``BarContainer`` (harmful, non-harmful). *runs* maps a run name to
    ``{family: (jrem_harmful, jrem_non_harmful)}`` as fractions. None/NaN, or a family a run
    lacks, draws no bar but an "n/a" text. ``counts[run][family] = (n_harmful, n_non_harmful)``,
    when given, adds ``n=…`` under each value. ValueError for no runs, no families, a value that
    is not a pair, a non-numeric or infinite JREM, or a missing count.
    """
    names = _run_names(runs, "cue_family_bars")
    families = _ordered_keys(runs.values(), CUE_FAMILIES)
    if not families:
        raise ValueError("cue_family_bars: no cue family to plot")
    columns = min(3, len(names))
    rows = math.ceil(len(names) / columns)
    panel_width = max(2.9, 0.8 * len(families) + 0.6)
    figure = new_figure(columns * panel_width + 0.5, rows * 2.8 + 0.9)
    grid = figure.subplots(rows, columns, squeeze=False, sharey=True)
    for unused in grid.flat[len(names) :]:
        unused.remove()
    sides = (("harmful", STYLE.harmful_color, -0.2), ("non-harmful", STYLE.non_harmful_color, 0.2))
    top = 0.0
    for ax, name, run in zip(grid.flat, names, runs.values(), strict=False):
        style_axes(ax)
        for side, (_, color, offset) in enumerate(sides):
            xs: list[float] = []
            heights: list[float] = []
            texts: list[str] = []
            for j, family in enumerate(families):
                where = f"cue_family_bars: run {name!r}, family {family!r}"
                pair = _tuple(run.get(family, (None, None)), 2, where)
                value = _number(pair[side], where)
                if value is None:
                    _na_mark(ax, j + offset)
                else:
                    xs.append(j + offset)
                    heights.append(100 * value)
                    n = _count(counts, name, family, where)
                    texts.append(_value_label(100 * value, None if n is None else n[side], 0))
            container = ax.bar(xs, heights, 0.4, **bar_props(color))
            ax.bar_label(container, texts, padding=1.5, **text_props(STYLE.annotation_size))
            top = max(top, *heights) if heights else top
        ax.set_title(literal(name), **text_props(STYLE.label_size))
        ax.set_xlim(-0.5, len(families) - 0.5)
        set_category_ticks(
            ax, "x", range(len(families)), [_CUE_FAMILY_LABELS.get(f, f.replace("_", " ")) for f in families]
        )
    grid[0, 0].set_ylim(0, max(120.0 if counts is not None else 105.0, top * (1.25 if counts is not None else 1.1)))
    for row in range(rows):
        set_axis_label(grid[row, 0], "y", "JREM (%)")
    legend(figure, [patch_handle(label, color) for label, color, _ in sides])
    set_title(figure, title)
    return freeze_layout(figure)


def confusion_heatmap(
    matrix: Sequence[Sequence[int]],
    labels: Sequence[str],
    predicted_labels: Sequence[str] | None = None,
    title: str = "",
) -> Figure:
    """A confusion matrix of counts: rows = reference *labels*, columns = *predicted_labels*.

    Contract: one heatmap axes (plus a colour-bar axes); the cell (i, j) is ``matrix[i][j]``,
    coloured on a sequential colour map from 0 to the largest count, the first reference
    label at the top; every cell has its count written in it (``ax.texts`` holds exactly
    rows × columns texts, white on dark cells). *predicted_labels* defaults to *labels*; it
    may be longer (an extra "unparsed"/INVALID column). ValueError when the shape does not
    match the labels or a count is negative or not an integer.
    """
    rows = [str(label) for label in labels]
    columns = rows if predicted_labels is None else [str(label) for label in predicted_labels]
    if not rows or not columns:
        raise ValueError("confusion_heatmap: no labels")
    try:
        counts = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"confusion_heatmap: matrix is not a table of counts ({error})") from None
    if counts.shape != (len(rows), len(columns)):
        raise ValueError(
            f"confusion_heatmap: matrix is {'×'.join(map(str, counts.shape))}, "
            f"labels need {len(rows)}×{len(columns)} (rows = reference, columns = prediction)"
        )
    if not np.all(np.isfinite(counts)) or np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise ValueError("confusion_heatmap: counts must be non-negative integers")
    figure = new_figure(max(4.2, 2.2 + 0.6 * len(columns)), max(3.2, 1.5 + 0.45 * len(rows)))
    ax = figure.add_subplot()
    style_axes(ax, grid_axis=None)
    for spine in ax.spines.values():
        spine.set_visible(False)
    vmax = max(float(counts.max()), 1.0)
    edges_x = np.arange(len(columns) + 1) - 0.5
    edges_y = np.arange(len(rows) + 1) - 0.5
    mesh = ax.pcolormesh(
        edges_x, edges_y, counts, cmap=STYLE.heatmap_cmap, vmin=0, vmax=vmax, edgecolors="white", linewidth=0.5
    )
    ax.set_xlim(-0.5, len(columns) - 0.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    cell_size = STYLE.tick_size if len(columns) <= 8 else STYLE.annotation_size
    for i in range(len(rows)):
        for j in range(len(columns)):
            red, green, blue, _ = mesh.cmap(mesh.norm(counts[i, j]))
            dark = 0.2126 * red + 0.7152 * green + 0.0722 * blue < 0.5
            ax.text(
                j, i, str(int(counts[i, j])), ha="center", va="center",
                **text_props(cell_size, "white" if dark else STYLE.text_color),
            )  # fmt: skip
    set_category_ticks(ax, "x", range(len(columns)), columns)
    if len(columns) > 3 and any(len(label) > 6 for label in columns):
        for tick in ax.get_xticklabels():
            tick.set_rotation(40)
            tick.set_horizontalalignment("right")
            tick.set_rotation_mode("anchor")
    set_category_ticks(ax, "y", range(len(rows)), rows)
    ax.tick_params(length=0)
    set_axis_label(ax, "x", "predicted")
    set_axis_label(ax, "y", "reference")
    colorbar = figure.colorbar(mesh, ax=ax, shrink=0.85, pad=0.03)
    colorbar.outline.set_visible(False)
    colorbar.ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    colorbar.ax.tick_params(
        labelsize=STYLE.annotation_size, labelfontfamily=font_family(), labelcolor=STYLE.text_color, length=2
    )
    colorbar.set_label("count", **text_props(STYLE.annotation_size))
    set_title(ax, title)
    return freeze_layout(figure)


def per_category_f1(
    runs: Mapping[str, Mapping[str, tuple[float | None, float | None, float | None]]],
    *,
    title: str = "F1 per category (95% CI)",
    counts: Mapping[str, Mapping[str, int]] | None = None,
) -> Figure:
    """Horizontal grouped bars of F1 per category with 95% confidence intervals.

    Contract: one axes; one row per category — in order of first appearance across *runs*,
    the first at the top — and in each row one bar per run, in the order of *runs*; one
    ``BarContainer`` per run and one bar per defined F1. *runs* maps a run name to
    ``{category: (f1, ci_low, ci_high)}`` as fractions, drawn in percent. Each interval is a
    dark line from low to high with a cap at each bound given; a bound that is None leaves
    that side open (the line stops at the F1), and with both None no interval is drawn. An F1
    that is None/NaN, or a category a run lacks, draws no bar but an "n/a" text.
    ``counts[run][category]`` (the reference items of that category), when given, writes
    ``n=…`` right of each bar and its interval. ValueError for no runs, no categories, an entry
    that is not a triple, a non-numeric or infinite value, a low bound above the high bound, or
    a missing count.
    """
    names = _run_names(runs, "per_category_f1")
    categories = _ordered_keys(runs.values())
    if not categories:
        raise ValueError("per_category_f1: no category to plot")
    height = max(2.8, 1.4 + len(categories) * (0.2 + 0.16 * len(names)))
    figure = new_figure(6.4, height)
    ax = figure.add_subplot()
    style_axes(ax, grid_axis="x")
    bar_height, offsets = _offsets(len(names))
    handles = []
    right = 100.0
    for i, (name, run) in enumerate(zip(names, runs.values(), strict=True)):
        color, hatch = series_color(i), series_hatch(i)
        ys: list[float] = []
        widths: list[float] = []
        lines: list[tuple[float, float, float]] = []
        caps: list[tuple[float, float]] = []
        for j, category in enumerate(categories):
            y = j + offsets[i]
            where = f"per_category_f1: run {name!r}, category {category!r}"
            entry = run.get(category)
            if entry is None:
                _na_mark(ax, y, horizontal=True)
                continue
            f1, low, high = (_number(value, where) for value in _tuple(entry, 3, where))
            if f1 is None:
                _na_mark(ax, y, horizontal=True)
                continue
            if low is not None and high is not None and low > high:
                raise ValueError(f"{where}: CI low {low} is above CI high {high}")
            ys.append(y)
            widths.append(100 * f1)
            n = _count(counts, name, category, where)
            if n is not None:
                ax.annotate(
                    f"n={n}", (100 * max(f1, high if high is not None else f1), y), xytext=(4, 0),
                    textcoords="offset points", ha="left", va="center", **text_props(STYLE.annotation_size),
                )  # fmt: skip
            if low is not None or high is not None:
                lines.append((y, 100 * (f1 if low is None else low), 100 * (f1 if high is None else high)))
                caps.extend((y, 100 * bound) for bound in (low, high) if bound is not None)
        ax.barh(ys, widths, bar_height, **bar_props(color, hatch))
        if lines:
            ax.hlines(
                [y for y, _, _ in lines], [lo for _, lo, _ in lines], [hi for _, _, hi in lines],
                colors=STYLE.error_color, linewidth=0.9,
            )  # fmt: skip
            right = max(right, *(hi for _, _, hi in lines))
        if caps:
            ax.plot(
                [x for _, x in caps], [y for y, _ in caps], linestyle="none", marker="|",
                markersize=max(3.0, min(8.0, 40 * bar_height)), color=STYLE.error_color,
            )  # fmt: skip
        handles.append(patch_handle(name, color, hatch))
    ax.set_xlim(0, right * (1.15 if counts is not None else 1.02))
    ax.set_ylim(len(categories) - 0.5, -0.5)
    set_category_ticks(ax, "y", range(len(categories)), categories)
    set_axis_label(ax, "x", "F1 (%)")
    legend(figure, handles)
    set_title(figure, title)
    return freeze_layout(figure)


# ---------------------------------------------------------------------------------------------
# exports


def figure_to_png(figure: Figure) -> bytes:
    """The figure as PNG bytes at the house DPI (150), white background, no variable metadata."""
    buffer = io.BytesIO()
    with render_context():
        figure.savefig(
            buffer, format="png", dpi=STYLE.dpi, facecolor="white", edgecolor="white", transparent=False,
            bbox_inches=None, metadata={"Software": None},
        )  # fmt: skip
    return buffer.getvalue()


def figure_to_png_base64(figure: Figure) -> str:
    """The PNG of :func:`figure_to_png`, base64-encoded (for ``src="data:image/png;base64,…"``)."""
    return base64.b64encode(figure_to_png(figure)).decode("ascii")


def _svg_document(figure: Figure) -> str:
    """The figure as a standalone SVG file: XML declaration, DOCTYPE, text as glyph paths."""
    buffer = io.StringIO()
    with render_context():
        figure.savefig(
            buffer, format="svg", facecolor="white", edgecolor="white", transparent=False, bbox_inches=None,
            metadata=_SVG_METADATA,
        )  # fmt: skip
    return buffer.getvalue()


def _prefix_ids(svg: str, prefix: str) -> str:
    """Prefix every id and every reference to one (``#id``, ``url(#id)``) outside comments."""
    ids = {match for part in _COMMENT.split(svg) for match in re.findall(r'\bid="([^"]+)"', part)}
    if not ids:
        return svg
    pattern = re.compile(r'(\bid="|href="#|url\(#)([^")]+)')

    def rewrite(part: str) -> str:
        return pattern.sub(lambda m: m.group(1) + (prefix + m.group(2) if m.group(2) in ids else m.group(2)), part)

    pieces: list[str] = []
    position = 0
    for comment in _COMMENT.finditer(svg):
        pieces.append(rewrite(svg[position : comment.start()]))
        pieces.append(comment.group(0))
        position = comment.end()
    pieces.append(rewrite(svg[position:]))
    return "".join(pieces)


def figure_to_svg(figure: Figure, *, id_prefix: str = "") -> str:
    """The figure as an ``<svg>`` element to inline in an HTML page.

    No XML declaration, no DOCTYPE, no metadata and no external reference (text is drawn as
    glyph paths defined inside the SVG; images are inlined). Text from data appears only in
    comments, escaped by matplotlib (``<`` → ``&lt;``). Element ids are deterministic; give
    each figure of a page its own *id_prefix* (a letter, then letters, digits, ``_ . -``) to
    keep ids unique across inlined figures.
    """
    if id_prefix and not _ID_PREFIX.fullmatch(id_prefix):
        raise ValueError(f"figure_to_svg: id_prefix {id_prefix!r} must match {_ID_PREFIX.pattern}")
    document = _svg_document(figure)
    svg = document[document.index("<svg") :]
    return _prefix_ids(svg, id_prefix) if id_prefix else svg


def _write_atomically(path: Path, data: bytes) -> None:
    """Write *data* to a fresh file next to *path* (ordinary permissions), then rename it over."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with temporary.open("xb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def save_figure(
    figure: Figure, path_without_suffix: str | os.PathLike[str], formats: Sequence[str] = FORMATS
) -> list[Path]:
    """Write the figure as ``<path>.png`` / ``<path>.svg``; return the paths written, in order.

    The suffix is appended (``report/mismatch.v2`` → ``report/mismatch.v2.png``), missing
    parent folders are created and each file is replaced atomically. The SVG file is a
    standalone document (with XML declaration); see :func:`figure_to_svg` for inlining.
    ValueError for an unknown format or none at all.
    """
    chosen = [formats] if isinstance(formats, str) else list(formats)
    chosen = list(dict.fromkeys(str(fmt).lower().lstrip(".") for fmt in chosen))
    if not chosen:
        raise ValueError("save_figure: no format given")
    for fmt in chosen:
        if fmt not in FORMATS:
            raise ValueError(f"save_figure: unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    base = Path(path_without_suffix)
    base.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in chosen:
        path = base.with_name(f"{base.name}.{fmt}")
        data = figure_to_png(figure) if fmt == "png" else _svg_document(figure).encode("utf-8")
        _write_atomically(path, data)
        written.append(path)
    return written
