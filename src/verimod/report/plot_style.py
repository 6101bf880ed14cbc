"""One style for every verimod plot, applied per figure through explicit artist properties.

matplotlib's ``rcParams`` are process-wide mutable state, and tick labels created at draw time
read them, so a style switched on with ``rc_context`` while a figure is built does not reliably
stick to it (and leaks into other threads). Here nothing global is touched: :data:`STYLE` holds
the few numbers and colours of the house style, and the helpers below pass them to each
figure, axes and text explicitly. Only rendering needs a handful of ``svg.*`` parameters; see
:func:`render_context`.

Text taken from data (run names, labels, categories) goes through :func:`literal`, so a ``$``
never switches on mathtext, and is drawn with :func:`font_family`: DejaVu Sans first, then the
CJK fonts that are installed (none is required; a missing glyph draws as a box with a
matplotlib warning, never an exception).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, Literal

import matplotlib as mpl
from matplotlib import font_manager
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.patches import Patch

#: Okabe & Ito's palette, distinguishable under the common colour-vision deficiencies; yellow,
#: weak on white, comes last.
OKABE_ITO: Final = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#000000",  # black
    "#F0E442",  # yellow
)

#: Latin text font (bundled with matplotlib, so always present).
BASE_FONT: Final = "DejaVu Sans"

#: CJK fonts tried after :data:`BASE_FONT`, in order; only the installed ones are used.
CJK_FONTS: Final = (
    "Noto Sans CJK SC",
    "Noto Sans SC",
    "Source Han Sans SC",
    "Source Han Sans CN",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Microsoft YaHei",
    "SimHei",
    "PingFang SC",
    "Hiragino Sans GB",
    "Heiti SC",
    "Sarasa Gothic SC",
    "Noto Sans CJK JP",
    "Noto Sans CJK TC",
    "AR PL UMing CN",
    "Droid Sans Fallback",
)


@dataclass(frozen=True)
class PlotStyle:
    """The house style: sizes in points, colours as hex strings."""

    dpi: int = 150
    title_size: float = 11.0
    label_size: float = 9.0
    tick_size: float = 8.0
    legend_size: float = 8.0
    annotation_size: float = 7.0
    colors: tuple[str, ...] = OKABE_ITO
    #: Hatches added to the colours once a plot has more series than colours.
    hatches: tuple[str, ...] = ("", "//", "..", "xx", "\\\\")
    text_color: str = "#222222"
    muted_color: str = "#6b6b6b"
    grid_color: str = "#d9d9d9"
    grid_linewidth: float = 0.6
    spine_color: str = "#8c8c8c"
    error_color: str = "#333333"
    harmful_color: str = "#D55E00"
    non_harmful_color: str = "#0072B2"
    heatmap_cmap: str = "Blues"
    #: Salt of the ids matplotlib's SVG backend derives from content (random when unset).
    svg_hashsalt: str = "verimod"


#: The style every plot of :mod:`verimod.report.plots` uses.
STYLE: Final = PlotStyle()

#: Parameters read while rendering: fixed so that the same figure gives the same bytes.
_RENDER_RC: Final[dict[Any, Any]] = {
    "svg.hashsalt": STYLE.svg_hashsalt,
    "svg.fonttype": "path",
    "svg.id": None,
    "svg.image_inline": True,
    "text.usetex": False,
}
_RENDER_LOCK: Final = threading.Lock()


def font_family() -> list[str]:
    """The font fallback list: :data:`BASE_FONT`, then each installed font of :data:`CJK_FONTS`.

    Read from matplotlib's font cache at each call (cheap), so it never names an absent font —
    matplotlib logs a warning for every absent family it is asked for.
    """
    installed = {entry.name for entry in font_manager.fontManager.ttflist}
    return [BASE_FONT, *(name for name in CJK_FONTS if name in installed)]


def literal(text: object) -> str:
    """``str(text)`` made safe to draw as is: every ``$`` escaped, so mathtext never parses it."""
    return str(text).replace("$", r"\$")


def series_color(index: int) -> str:
    """Colour of the *index*-th series (the palette repeats; see :func:`series_hatch`)."""
    return STYLE.colors[index % len(STYLE.colors)]


def series_hatch(index: int) -> str:
    """Hatch of the *index*-th series: none for the first cycle of colours, then one per cycle."""
    return STYLE.hatches[(index // len(STYLE.colors)) % len(STYLE.hatches)]


def text_props(size: float | None = None, color: str | None = None) -> dict[str, Any]:
    """Keyword arguments for a matplotlib ``Text`` in the house style."""
    return {
        "fontsize": STYLE.label_size if size is None else size,
        "fontfamily": font_family(),
        "color": STYLE.text_color if color is None else color,
        "usetex": False,
    }


def new_figure(width: float, height: float) -> Figure:
    """A white figure of *width* × *height* inches with constrained layout and an Agg canvas."""
    figure = Figure(figsize=(width, height), dpi=STYLE.dpi, layout="constrained", facecolor="white")
    FigureCanvasAgg(figure)
    return figure


def style_axes(ax: Axes, grid_axis: Literal["x", "y", "both"] | None = "y") -> None:
    """Light grid behind the data on *grid_axis* (none for None), open top/right spines."""
    ax.set_facecolor("white")
    ax.set_axisbelow(True)
    if grid_axis:
        ax.grid(True, axis=grid_axis, color=STYLE.grid_color, linewidth=STYLE.grid_linewidth)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_color(STYLE.spine_color)
    ax.tick_params(
        labelsize=STYLE.tick_size,
        labelcolor=STYLE.text_color,
        labelfontfamily=font_family(),
        color=STYLE.spine_color,
    )


def set_title(target: Axes | Figure, title: str) -> None:
    """Set an axes title, or a figure's suptitle; nothing for an empty *title*."""
    if not title:
        return
    if isinstance(target, Figure):
        target.suptitle(literal(title), **text_props(STYLE.title_size))
    else:
        target.set_title(literal(title), **text_props(STYLE.title_size))


def set_axis_label(ax: Axes, axis: str, label: str) -> None:
    """Label the x or y axis."""
    if axis == "x":
        ax.set_xlabel(literal(label), **text_props(STYLE.label_size))
    else:
        ax.set_ylabel(literal(label), **text_props(STYLE.label_size))


def set_category_ticks(ax: Axes, axis: str, positions: Sequence[float], labels: Sequence[str]) -> None:
    """Fixed ticks at *positions* labelled with data text; long or many x labels are slanted."""
    texts = [literal(label) for label in labels]
    props = text_props(STYLE.tick_size)
    if axis == "x":
        slanted = len(texts) > 4 and max((len(t) for t in texts), default=0) > 8
        rotation: dict[str, Any] = {"rotation": 30, "ha": "right", "rotation_mode": "anchor"} if slanted else {}
        ax.set_xticks(list(positions), texts, **props, **rotation)
    else:
        ax.set_yticks(list(positions), texts, **props)


def legend(
    target: Axes | Figure, handles: Sequence[Any], *, loc: str = "outside lower center", ncols: int | None = None
) -> Legend:
    """A frameless legend in the house style from explicit proxy *handles*."""
    columns = ncols if ncols is not None else max(1, min(len(handles), 4))
    kwargs: dict[str, Any] = {
        "handles": list(handles),
        "loc": loc,
        "ncols": columns,
        "frameon": False,
        "prop": font_manager.FontProperties(family=font_family(), size=STYLE.legend_size),
        "labelcolor": STYLE.text_color,
    }
    return target.legend(**kwargs)


def bar_props(color: str, hatch: str = "") -> dict[str, Any]:
    """Keyword arguments of one bar series: fill, hatch and a thin edge (dark when hatched)."""
    return {
        "color": color,
        "hatch": hatch or None,
        "edgecolor": STYLE.text_color if hatch else "white",
        "linewidth": 0.5,
    }


def patch_handle(label: str, color: str, hatch: str = "") -> Patch:
    """A legend proxy for a bar series drawn with :func:`bar_props`."""
    props = bar_props(color, hatch)
    return Patch(
        facecolor=props["color"],
        edgecolor=props["edgecolor"],
        hatch=props["hatch"],
        linewidth=props["linewidth"],
        label=literal(label),
    )


def freeze_layout(figure: Figure) -> Figure:
    """Run the constrained layout once, then keep it: every later render uses the same positions.

    Constrained layout re-runs at each draw and its floating-point result drifts between
    draws, which changes the content-derived SVG ids; a frozen layout makes exports of the
    same figure byte-identical however often, and in whatever order, it is rendered.
    """
    with render_context():
        figure.draw_without_rendering()
    figure.set_layout_engine("none")
    return figure


@contextmanager
def render_context() -> Iterator[None]:
    """Fix the parameters read while rendering (SVG id salt, text as paths, no root id).

    Rendering reads them from matplotlib's global ``rcParams``; the change lasts only while the
    figure is written, and a lock keeps two verimod renders from interleaving.
    """
    with _RENDER_LOCK, mpl.rc_context(_RENDER_RC):
        yield
