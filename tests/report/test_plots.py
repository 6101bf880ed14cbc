"""Plots of reports: structure of each figure, None handling, exports, determinism, escaping."""

from __future__ import annotations

import base64
import math
import re
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import matplotlib as mpl
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from verimod.report.plot_style import BASE_FONT, STYLE, font_family, literal
from verimod.report.plots import (
    MISMATCH_FIELDS,
    confusion_heatmap,
    cue_family_bars,
    figure_to_png,
    figure_to_png_base64,
    figure_to_svg,
    mismatch_bars,
    per_category_f1,
    save_figure,
    shapley_bars,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SVG_NS = "{http://www.w3.org/2000/svg}"
MISSING_GLYPH = "ignore:Glyph .* missing from font"

MISMATCH = {
    "Qwen2.5-7B CoT-SFT": {
        "target": 0.312,
        "target_type": 0.121,
        "explicitness": 0.224,
        "stance": 0.081,
        "label": 0.031,
        "category": 0.114,
    },
    "GPT-5.5 zero-shot": {
        "target": 0.352,
        "target_type": 0.147,
        "explicitness": 0.271,
        "stance": 0.096,
        "label": 0.024,
        "category": None,
    },
    "baseline": {
        "target": 0.501,
        "target_type": 0.2,
        "explicitness": 0.3,
        "stance": 0.2,
        "label": 0.1,
        "category": 0.2,
    },
}
SHAPLEY = {
    "Qwen2.5-7B CoT-SFT": {"referent": 0.33, "stance": 0.05, "decision": 0.03},
    "GPT-5.5": {"referent": 0.35, "stance": 0.06, "decision": 0.035},
    "odd": {"referent": 0.2, "stance": -0.04, "decision": 0.05},
}
CUES = {
    "CoT-SFT": {
        "demographic_identity": (0.70, 0.45),
        "social_status": (0.66, 0.47),
        "body_health": (0.55, 0.31),
        "general_abuse": (0.78, 0.40),
    },
    "zero-shot": {
        "general_abuse": (0.81, 0.35),
        "demographic_identity": (0.65, 0.36),
        "social_status": (0.61, None),
        "body_health": (0.52, 0.28),
    },
}
CATEGORIES = ["general_abuse", "region_ethnicity", "gender", "sogi", "status_occupation", "body_health", "non_attack"]
F1 = {
    "run A": {c: (0.8 - 0.05 * k, 0.7 - 0.05 * k, 0.88 - 0.05 * k) for k, c in enumerate(CATEGORIES)},
    "run B": {
        "general_abuse": (0.75, 0.65, 0.85),
        "region_ethnicity": (0.71, None, 0.8),
        "gender": (0.66, 0.55, None),
        "status_occupation": (0.5, None, None),
        "body_health": (None, None, None),
        "non_attack": (0.9, 0.86, 0.93),
    },
}


def bars(container: BarContainer) -> list[Rectangle]:
    return list(container.patches)


def texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def legend_texts(figure: Figure) -> list[str]:
    return [t.get_text() for legend in figure.legends for t in legend.get_texts()]


def tick_texts(labels) -> list[str]:
    return [t.get_text() for t in labels]


# --- mismatch_bars -----------------------------------------------------------------------------


def test_mismatch_bars_groups_fields_and_runs():
    figure = mismatch_bars(MISMATCH)
    assert isinstance(figure, Figure)
    assert isinstance(figure.canvas, FigureCanvasAgg)
    (ax,) = figure.axes
    assert tick_texts(ax.get_xticklabels()) == list(MISMATCH_FIELDS)
    assert len(ax.containers) == 3
    assert [len(c) for c in ax.containers] == [6, 5, 6]  # the None rate draws no bar
    assert len(ax.patches) == 17
    heights = [bar.get_height() for bar in bars(ax.containers[0])]
    assert heights == pytest.approx([31.2, 12.1, 22.4, 8.1, 3.1, 11.4])  # percent
    assert texts(ax).count("n/a") == 1
    assert sum(1 for t in texts(ax) if re.fullmatch(r"\d+\.\d", t)) == 17  # one value label per bar
    assert legend_texts(figure) == list(MISMATCH)
    # the gap sits in the category group, where GPT-5.5's bar would be
    (mark,) = (t for t in ax.texts if t.get_text() == "n/a")
    assert mark.get_position()[0] == pytest.approx(5.0)


def test_mismatch_bars_missing_nan_alias_and_extra_fields():
    figure = mismatch_bars(
        {
            "a": {"target": 0.4, "target_explicitness": 0.2, "custom": 0.1},
            "b": {"target": float("nan"), "label": 0.05},
        }
    )
    (ax,) = figure.axes
    assert tick_texts(ax.get_xticklabels()) == ["target", "explicitness", "label", "custom"]
    assert [len(c) for c in ax.containers] == [3, 1]
    # a lacks label; b has NaN target and lacks explicitness and custom
    assert texts(ax).count("n/a") == 4


@pytest.mark.parametrize(
    "runs",
    [{}, {"a": {}}, {"a": {"target": "high"}}, {"a": {"target": math.inf}}, {"a": {"target": True}}],
)
def test_mismatch_bars_rejects_bad_input(runs):
    with pytest.raises(ValueError, match="mismatch_bars"):
        mismatch_bars(runs)


def test_many_runs_get_hatches_once_colours_repeat():
    runs = {f"run {i}": {"target": 0.1 * (i % 5)} for i in range(10)}
    (ax,) = mismatch_bars(runs).axes
    assert [c.patches[0].get_hatch() for c in ax.containers[:8]] == [None] * 8
    assert ax.containers[8].patches[0].get_hatch() == "//"
    assert ax.containers[8].patches[0].get_facecolor() == ax.containers[0].patches[0].get_facecolor()


# --- shapley_bars ------------------------------------------------------------------------------


def test_shapley_bars_stack_terms_and_annotate_totals():
    figure = shapley_bars(SHAPLEY)
    (ax,) = figure.axes
    assert tick_texts(ax.get_xticklabels()) == list(SHAPLEY)
    assert len(ax.containers) == 3  # referent, stance, decision
    assert all(len(c) == 3 for c in ax.containers)
    referent, stance, decision = (bars(c) for c in ax.containers)
    assert referent[0].get_y() == 0 and referent[0].get_height() == pytest.approx(33)
    assert stance[0].get_y() == pytest.approx(33) and decision[0].get_y() == pytest.approx(38)
    assert texts(ax) == ["41.0", "44.5", "21.0"]
    assert legend_texts(figure) == ["referent", "stance", "decision", "total (Parse − JREM)"]


def test_shapley_bars_stack_negative_terms_below_zero():
    figure = shapley_bars({"odd": {"referent": 0.2, "stance": -0.04, "decision": 0.05}})
    (ax,) = figure.axes
    referent, stance, decision = (bars(c)[0] for c in ax.containers)
    assert (referent.get_y(), referent.get_height()) == pytest.approx((0, 20))
    assert (stance.get_y(), stance.get_height()) == pytest.approx((0, -4))  # from 0 downwards
    assert (decision.get_y(), decision.get_height()) == pytest.approx((20, 5))  # on top of the positives
    assert texts(ax) == ["21.0"]
    (total,) = (line for line in ax.get_lines() if line.get_marker() == "_")
    assert list(total.get_ydata()) == pytest.approx([21.0])
    assert ax.get_ylim()[0] < -4


def test_shapley_bars_two_negative_terms_and_negative_total():
    (ax,) = shapley_bars({"r": {"referent": 0.01, "stance": -0.03, "decision": -0.02}}).axes
    _, stance, decision = (bars(c)[0] for c in ax.containers)
    assert stance.get_y() == pytest.approx(0) and stance.get_height() == pytest.approx(-3)
    assert decision.get_y() == pytest.approx(-3) and decision.get_height() == pytest.approx(-2)
    assert texts(ax) == ["-4.0"]
    assert ax.get_ylim()[0] < -5


def test_shapley_bars_missing_term_is_zero_and_none_is_an_error():
    (ax,) = shapley_bars({"a": {"referent": 0.3}, "b": {"referent": 0.2, "stance": 0.1}}).axes
    assert len(ax.containers) == 2
    assert bars(ax.containers[1])[0].get_height() == 0
    with pytest.raises(ValueError, match="undefined"):
        shapley_bars({"a": {"referent": None}})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="no runs"):
        shapley_bars({})


# --- cue_family_bars ---------------------------------------------------------------------------


def test_cue_family_bars_one_panel_per_run():
    figure = cue_family_bars(CUES)
    assert len(figure.axes) == 2
    for ax, name in zip(figure.axes, CUES, strict=True):
        assert ax.get_title() == name
        assert len(ax.containers) == 2  # harmful, non-harmful
        labels = tick_texts(ax.get_xticklabels())
        assert [label.replace("\n", " ") for label in labels] == [
            "demographic identity",
            "social status or role",
            "body, health or disability",
            "general abuse",
        ]
    first, second = figure.axes
    assert [len(c) for c in first.containers] == [4, 4]
    assert [len(c) for c in second.containers] == [4, 3]
    assert texts(first).count("n/a") == 0 and texts(second).count("n/a") == 1
    harmful = bars(second.containers[0])
    assert [bar.get_height() for bar in harmful] == pytest.approx([65, 61, 52, 81])  # canonical family order
    assert legend_texts(figure) == ["harmful", "non-harmful"]


def test_cue_family_bars_grid_and_extra_family():
    runs = {f"m{i}": {"general_abuse": (0.8, 0.4), "slurs": (0.7, 0.5)} for i in range(4)}
    runs["m3"] = {"general_abuse": (0.8, 0.4)}
    figure = cue_family_bars(runs)
    assert len(figure.axes) == 4  # a 2 × 3 grid with the two unused cells removed
    assert tick_texts(figure.axes[0].get_xticklabels()) == ["general\nabuse", "slurs"]
    assert texts(figure.axes[3]).count("n/a") == 2
    assert all(ax.get_ylim() == figure.axes[0].get_ylim() for ax in figure.axes)


def test_cue_family_bars_rejects_bad_pairs():
    with pytest.raises(ValueError, match="2 values"):
        cue_family_bars({"a": {"general_abuse": (0.5,)}})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="no cue family"):
        cue_family_bars({"a": {}})


# --- confusion_heatmap -------------------------------------------------------------------------


def test_confusion_heatmap_writes_every_count():
    matrix = [[50, 3, 1, 2], [4, 40, 0, 6], [0, 2, 30, 0]]
    labels = ["harmful", "non_harmful", "other"]
    figure = confusion_heatmap(matrix, labels, [*labels, "unparsed"], title="label")
    heatmap = figure.axes[0]
    assert len(figure.axes) == 2  # the heatmap and its colour bar
    assert heatmap.get_title() == "label"
    assert len(heatmap.texts) == 12
    assert texts(heatmap) == [str(v) for row in matrix for v in row]
    assert tick_texts(heatmap.get_yticklabels()) == labels
    assert tick_texts(heatmap.get_xticklabels()) == [*labels, "unparsed"]
    cell = {t.get_text(): t for t in heatmap.texts}
    assert mpl.colors.to_hex(cell["50"].get_color()) == "#ffffff"  # white on the darkest cell
    assert cell["0"].get_color() == STYLE.text_color
    assert heatmap.get_ylim()[0] > heatmap.get_ylim()[1]  # first reference label at the top


def test_confusion_heatmap_defaults_columns_to_labels_and_handles_zeros():
    figure = confusion_heatmap([[0, 0], [0, 0]], ["a", "b"])
    assert tick_texts(figure.axes[0].get_xticklabels()) == ["a", "b"]
    assert texts(figure.axes[0]) == ["0"] * 4
    figure_to_png(figure)


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ([[1, 2], [3, 4]], "labels need 3×2"),
        ([[1, 2], [3, -1], [0, 0]], "non-negative integers"),
        ([[1, 2.5], [3, 1], [0, 0]], "non-negative integers"),
        ([[1, 2], [3], [0, 0]], "matrix"),
    ],
)
def test_confusion_heatmap_rejects_bad_matrices(matrix, message):
    with pytest.raises(ValueError, match=message):
        confusion_heatmap(matrix, ["a", "b", "c"], ["a", "b"])


# --- per_category_f1 ---------------------------------------------------------------------------


def test_per_category_f1_bars_intervals_and_gaps():
    figure = per_category_f1(F1)
    (ax,) = figure.axes
    assert tick_texts(ax.get_yticklabels()) == CATEGORIES
    assert len(ax.containers) == 2
    assert [len(c) for c in ax.containers] == [7, 5]  # run B: sogi missing, body_health None
    assert len(ax.patches) == 12
    assert bars(ax.containers[0])[0].get_width() == pytest.approx(80)
    assert texts(ax).count("n/a") == 2
    # one interval line per bar with a bound (B's status_occupation has none) ...
    assert [len(c.get_segments()) for c in ax.collections] == [7, 4]
    # ... and one cap per bound given: A 14, B 2 + 1 + 1 + 2
    caps = [line for line in ax.get_lines() if line.get_marker() == "|"]
    assert [len(line.get_xdata()) for line in caps] == [14, 6]
    one_sided = ax.collections[1].get_segments()[1]  # region_ethnicity: low None → from the F1
    assert one_sided[:, 0] == pytest.approx([71, 80])
    assert legend_texts(figure) == ["run A", "run B"]


def test_per_category_f1_rejects_inverted_interval():
    with pytest.raises(ValueError, match="above CI high"):
        per_category_f1({"a": {"gender": (0.5, 0.6, 0.4)}})
    with pytest.raises(ValueError, match="3 values"):
        per_category_f1({"a": {"gender": (0.5, 0.6)}})  # type: ignore[dict-item]


# --- exports -----------------------------------------------------------------------------------


def all_figures(name: str = "run") -> list[Figure]:
    return [
        mismatch_bars({name: MISMATCH["baseline"], "other": MISMATCH["GPT-5.5 zero-shot"]}),
        shapley_bars({name: SHAPLEY["odd"]}),
        cue_family_bars({name: CUES["zero-shot"]}),
        confusion_heatmap([[3, 1], [0, 4]], [name, "b"], [name, "b"]),
        per_category_f1({name: F1["run B"]}),
    ]


def test_save_figure_writes_png_and_svg(tmp_path: Path):
    figure = shapley_bars(SHAPLEY)
    paths = save_figure(figure, tmp_path / "new" / "shapley.v1")
    assert paths == [tmp_path / "new" / "shapley.v1.png", tmp_path / "new" / "shapley.v1.svg"]
    assert paths[0].read_bytes().startswith(PNG_MAGIC)
    root = ET.parse(paths[1]).getroot()
    assert root.tag == f"{SVG_NS}svg"
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["shapley.v1.png", "shapley.v1.svg"]
    assert save_figure(figure, tmp_path / "only", "svg") == [tmp_path / "only.svg"]
    with pytest.raises(ValueError, match="unknown format"):
        save_figure(figure, tmp_path / "x", ("pdf",))
    with pytest.raises(ValueError, match="no format"):
        save_figure(figure, tmp_path / "x", ())


def test_png_dpi_and_base64():
    figure = mismatch_bars(MISMATCH)
    png = figure_to_png(figure)
    assert png.startswith(PNG_MAGIC)
    width = int.from_bytes(png[16:20], "big")
    assert width == round(figure.get_figwidth() * STYLE.dpi)
    assert base64.b64decode(figure_to_png_base64(figure)) == png


def test_inline_svg_is_self_contained():
    for figure in all_figures():
        svg = figure_to_svg(figure)
        assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
        assert "<?xml" not in svg and "DOCTYPE" not in svg and "<metadata" not in svg
        root = ET.fromstring(svg)
        ids = {element.get("id") for element in root.iter() if element.get("id")}
        for element in root.iter():
            for key, value in element.attrib.items():
                if key.endswith("href"):
                    assert value.startswith("#") or value.startswith("data:image/png;base64,"), value
                    if value.startswith("#"):
                        assert value[1:] in ids
                for ref in re.findall(r"url\(#([^)]+)\)", value):
                    assert ref in ids
        assert not re.search(r'(?:href|src)="(?:https?:|//|file:)', svg)


def test_inline_svg_id_prefix_keeps_references():
    svg = figure_to_svg(shapley_bars(SHAPLEY), id_prefix="fig-2_")
    root = ET.fromstring(svg)
    ids = [element.get("id") for element in root.iter() if element.get("id")]
    assert ids and all(i.startswith("fig-2_") for i in ids)
    refs = re.findall(r'href="#([^"]+)"', svg) + re.findall(r"url\(#([^)]+)\)", svg)
    assert refs and set(refs) <= set(ids)
    with pytest.raises(ValueError, match="id_prefix"):
        figure_to_svg(shapley_bars(SHAPLEY), id_prefix='x" onload="alert(1)')


def test_data_text_is_escaped_in_svg():
    name = "<script>alert(1)</script>"
    for figure in all_figures(name):
        svg = figure_to_svg(figure)
        assert "<script" not in svg
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in svg
        ET.fromstring(svg)


def test_dollar_signs_are_literal_not_mathtext():
    name = r"cost $5 \frac{ and $6"  # unbalanced mathtext would raise while drawing
    figure = mismatch_bars({name: {"target": 0.2}})
    assert legend_texts(figure) == [literal(name)]
    assert figure_to_png(figure).startswith(PNG_MAGIC)
    assert "cost $5" in figure_to_svg(figure)


def test_output_is_deterministic():
    first, second = all_figures(), all_figures()
    for a, b in zip(first, second, strict=True):
        assert figure_to_svg(a) == figure_to_svg(b)
        assert figure_to_png(a) == figure_to_png(b)
        assert figure_to_svg(a) == figure_to_svg(a)  # rendering twice changes nothing
    with mpl.rc_context({"svg.hashsalt": None, "svg.fonttype": "none"}):  # whatever the caller set
        assert figure_to_svg(all_figures()[1]) == figure_to_svg(first[1])
    assert mpl.rcParams["svg.hashsalt"] is None  # and nothing leaks out


def test_rendering_in_threads_is_consistent():
    expected = figure_to_svg(per_category_f1(F1))

    def render(_: int) -> str:
        return figure_to_svg(per_category_f1(F1))

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert set(pool.map(render, range(8))) == {expected}


@pytest.mark.filterwarnings(MISSING_GLYPH)
def test_chinese_text_does_not_crash(tmp_path: Path):
    runs = {"基线模型": {"target": 0.5, "label": 0.1}, "Qwen 微调": {"target": 0.3, "label": None}}
    figures = [
        mismatch_bars(runs, title="字段不匹配率"),
        shapley_bars({"基线模型": {"referent": 0.3, "stance": 0.05, "decision": 0.02}}),
        cue_family_bars({"基线模型": {"人口身份": (0.7, 0.4)}}),
        confusion_heatmap([[5, 1], [2, 7]], ["有害", "无害"], title="标签"),
        per_category_f1({"基线模型": {"地域/民族": (0.7, 0.6, 0.8), "性别": (0.5, None, 0.6)}}),
    ]
    for k, figure in enumerate(figures):
        png, svg = save_figure(figure, tmp_path / f"cjk{k}")
        assert png.read_bytes().startswith(PNG_MAGIC)
        ET.parse(svg)


def test_font_family_names_only_installed_fonts():
    from matplotlib import font_manager

    family = font_family()
    assert family[0] == BASE_FONT
    installed = {entry.name for entry in font_manager.fontManager.ttflist}
    assert set(family) <= installed


# --- item counts on every bar ------------------------------------------------------------------


def _count_labels(ax) -> list[str]:
    return [t for t in texts(ax) if "n=" in t]


def test_every_bar_says_how_many_items_it_rests_on():
    counts = {name: {f: 10 * (i + 1) + j for j, f in enumerate(MISMATCH_FIELDS)} for i, name in enumerate(MISMATCH)}
    (ax,) = mismatch_bars(MISMATCH, counts=counts).axes
    labels = _count_labels(ax)
    assert len(labels) == len(ax.patches) == 17
    assert "31.2\nn=10" in labels and "11.4\nn=15" in labels  # first run: target and category
    assert not any(label.endswith(f"n={counts['GPT-5.5 zero-shot']['category']}") for label in labels)  # its gap

    (ax,) = shapley_bars(SHAPLEY, counts={"Qwen2.5-7B CoT-SFT": 30, "GPT-5.5": 2, "odd": 128}).axes
    assert [t.split("\n")[1] for t in _count_labels(ax)] == ["n=30", "n=2", "n=128"]

    cue_counts = {run: {family: (3 + k, 2) for k, family in enumerate(CUES[run])} for run in CUES}
    figure = cue_family_bars(CUES, counts=cue_counts)
    assert len(figure.axes) == len(CUES)
    for ax in figure.axes:
        assert len(_count_labels(ax)) == len(ax.patches) > 0
    assert "100\nn=1" in _count_labels(
        cue_family_bars({"r": {"gender": (1.0, 0.5)}}, counts={"r": {"gender": (1, 4)}}).axes[0]
    )

    support = {run: dict.fromkeys(F1[run], 12) for run in F1}
    (ax,) = per_category_f1(F1, counts=support).axes
    assert _count_labels(ax) == ["n=12"] * len(ax.patches)
    with pytest.raises(ValueError, match="no item count"):
        mismatch_bars(MISMATCH, counts={"baseline": {}})
    with pytest.raises(ValueError, match="no item count"):
        shapley_bars(SHAPLEY, counts={"odd": 1})
