"""One self-contained HTML report of one or more scored VARM runs.

Contract of :func:`build_report`:

- **One file that works offline** from ``file://``: the CSS, the script and the figures are
  inline (figures as ``data:`` images); nothing is fetched from anywhere. A strict
  Content-Security-Policy meta tag (``default-src 'none'``, inline styles, ``data:`` images, the
  one script allowed by a per-build random nonce, Trusted Types required so that no string can
  reach an HTML sink) guards the page even against a bug in this module.
- **Untrusted strings stay data.** Inputs, references, tags, model outputs, error details and
  run/model names reach the page only (a) HTML-escaped in the static summary tables, with lone
  surrogates and control characters replaced by U+FFFD, or (b) inside the one
  ``<script type="application/json" id="report-data">`` block, where ``<``, ``>``, ``&``,
  U+2028, U+2029 and every surrogate code point are written as ``\\uXXXX`` escapes (so nothing
  in it can close the element or open a comment, and the data round-trip exactly), and are
  rendered by the page's script with DOM APIs (``textContent``, ``createElement``) only.
- **Scales**: the item data are embedded once; the browser renders one page of items at a time
  and builds an item's details when it is opened, so 20,000 items stay responsive.
- **Deterministic**: the same runs and arguments give the same bytes, except the nonce.
- **Readable at 1,400 px**: the summary puts the headline columns (:data:`HEADLINE_KEYS`:
  label F1, JREM, HER-C, HER-L, Parse) right after the run, so they are on screen without
  scrolling; runs are named by short labels (:func:`~verimod.report.labels.run_labels`) with
  the full run id in a tooltip (the runs table lists the ids in full); a table of contents
  leads to every section.
- **Comparable runs only**: runs over different item sets are refused (``ValueError``), unless
  ``allow_different_items`` — then a banner above the numbers says how the sets differ.

Item rows in the JSON block (``runs[k].items[i]``, in reference order) use short keys:
``id``; ``x`` input text; ``ctx`` context lines (only when present); ``g`` tags; ``r`` the six
reference values (None: not annotated); ``o`` raw output (None: no output); ``s`` status;
``e`` error class; ``d`` detail; ``v`` the six parsed values or None; ``c`` per-field
correctness (True/False/None); ``t`` T-F1; ``j`` J; ``f`` format ok; ``vi`` codebook
violations; ``fl`` lenient-form flags; ``a`` the parser's anchors as
``[field index, start, end, canonical value or None]`` with offsets in UTF-16 code units
(JavaScript string indices).
"""

from __future__ import annotations

import base64
import bisect
import html
import json
import math
import re
import secrets
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from verimod import __version__
from verimod.data.jsonl import atomic_write
from verimod.report.labels import item_set_difference, run_labels
from verimod.report.run_table import METRIC_COLUMNS
from verimod.report.tables import percent
from verimod.resources import resource_path
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.evaluate import ScoredRun
from verimod.tasks.varm.parser import parse_rationale
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import SHAPLEY_GROUPS, ItemScore

#: Marks the JSON block's format; bump it when the item row layout changes.
DATA_FORMAT: Final = "verimod-report/1"
#: The paper's headline numbers: always the first metric columns of the summary.
HEADLINE_KEYS: Final = ("label_macro_f1", "jrem", "her_c", "her_l", "parse_rate")
#: Headers of the summary table (VARM-Bench Table 1's columns), headline ones first, with the
#: scores key of each.
SUMMARY_COLUMNS: Final = tuple(
    ("Label F1" if key == "label_macro_f1" else "Explicitness" if h == "Expl." else h, key)
    for h, key in sorted(METRIC_COLUMNS, key=lambda c: HEADLINE_KEYS.index(c[1]) if c[1] in HEADLINE_KEYS else 99)
)
#: Row names of the mismatch table (the keys of ``VarmScores.mismatch``).
MISMATCH_FIELDS: Final = ("target", "target_type", "explicitness", "stance", "label", "category")

_RESOURCES: Final = "report"
_PLACEHOLDER: Final = re.compile(r"\{\{([a-z_]+)\}\}")
# Characters written as \uXXXX inside the JSON block: those that could end the script element
# or open a comment (< > &), JavaScript line terminators, and surrogates (not UTF-8 encodable).
_JSON_UNSAFE: Final = re.compile("[<>&\u2028\u2029\ud800-\udfff]")
# Characters never written raw into HTML text: surrogates and C0/C1 controls other than \t \n \r.
_HTML_UNSAFE: Final = re.compile("[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_ASTRAL: Final = re.compile("[\U00010000-\U0010ffff]")
_SVG_NS: Final = "{http://www.w3.org/2000/svg}"
_FORBIDDEN_SVG_ELEMENTS: Final = frozenset({"script", "foreignobject", "iframe", "object", "embed", "handler"})


def build_report(
    runs: Sequence[ScoredRun],
    out: Path,
    *,
    intervals: Mapping[str, Mapping[str, tuple[float, float, float]]] | None = None,
    figures: Mapping[str, str] | None = None,
    title: str | None = None,
    allow_different_items: bool = False,
) -> Path:
    """Write one self-contained HTML report of ``runs`` to ``out`` (atomically); return ``out``.

    ``intervals[run_id][metric] = (estimate, low, high)``, fractions like the scores, adds a
    95% interval beside a number; ``metric`` is a scores key of the summary table
    (``label_macro_f1`` … ``her_l``), ``mismatch.<field>`` (a key of ``scores.mismatch``) or
    ``shapley.<group>``. ``figures[name]`` is an SVG document (matplotlib's SVG backend); each
    is checked to be an SVG without active content and embedded as a ``data:`` image, which a
    browser never lets run script or fetch anything. ``title`` defaults to one naming the runs.

    Raises ``ValueError`` for no runs, two runs with one id, runs over different item sets
    (unless ``allow_different_items``: then a banner), a run whose items do not follow its
    references, an interval for an unknown run or metric, or a figure that is not a plain SVG.
    See the module docstring for what the page guarantees.
    """
    if not runs:
        raise ValueError("a report needs at least one run")
    run_ids = [run.store.manifest.run_id for run in runs]
    duplicated = sorted({r for r in run_ids if run_ids.count(r) > 1})
    if duplicated:
        raise ValueError(f"two runs share the id {duplicated[0]!r}; a report takes each run once")
    difference = item_set_difference(runs)
    if difference is not None and not allow_different_items:
        raise ValueError(f"{difference}: their numbers do not compare (allow_different_items to show them)")
    intervals = intervals or {}
    _check_intervals(intervals, runs)
    page_title = title if title is not None else _default_title(runs)
    nonce = secrets.token_urlsafe(18)
    values = {
        "csp": _escape(_csp(nonce)),
        "version": _escape(__version__),
        "title": _escape(page_title),
        "run_count": "1 run" if len(runs) == 1 else f"{len(runs)} runs",
        "css": _resource("report.css", forbid="</style"),
        "contents": _contents(bool(figures)),
        "banner": "" if difference is None else _banner(difference),
        "summary": _summary(runs, intervals),
        "figures": _figures(figures or {}),
        "data": json_for_script({"format": DATA_FORMAT, "fields": list(FIELDS), "runs": [_run_data(r) for r in runs]}),
        "nonce": nonce,
        "script": _resource("report.js", forbid="</script"),
    }
    page = _PLACEHOLDER.sub(lambda m: values[m.group(1)], _resource("report.html"))
    out = Path(out)
    atomic_write(out, [page.encode("utf-8")])
    return out


def json_for_script(obj: Any) -> str:
    """``obj`` as JSON that is safe as the content of a ``<script type="application/json">``
    element: ``<``, ``>``, ``&``, U+2028, U+2029 and surrogates are ``\\uXXXX`` escapes, so the
    text holds none of them and ``json.loads`` / ``JSON.parse`` of it gives ``obj`` back."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _csp(nonce: str) -> str:
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'nonce-{nonce}'; base-uri 'none'; form-action 'none'; "
        "require-trusted-types-for 'script'; trusted-types 'none'"
    )


def _resource(name: str, forbid: str | None = None) -> str:
    text = resource_path(f"{_RESOURCES}/{name}").read_text(encoding="utf-8")
    if forbid is not None and forbid in text.lower():
        raise ValueError(f"report resource {name} must not contain {forbid!r}")
    return text


def _text(value: object) -> str:
    """``value`` as a string safe to write into HTML text: surrogates and control characters
    become U+FFFD (the HTML escaping is :func:`_escape`)."""
    return _HTML_UNSAFE.sub("\ufffd", str(value))


def _escape(value: object) -> str:
    """HTML-escaped text (quotes included: safe in text and in quoted attributes)."""
    return html.escape(_text(value), quote=True)


def _data(value: object) -> str:
    """An untrusted string as isolated, escaped HTML text (bidirectional overrides stay inside)."""
    return f"<bdi>{_escape(value)}</bdi>"


def _default_title(runs: Sequence[ScoredRun]) -> str:
    if len(runs) == 1:
        manifest = runs[0].store.manifest
        return f"verimod report: {manifest.model_label} ({manifest.setting_label})"
    return f"verimod report: {len(runs)} runs"


# -- intervals ------------------------------------------------------------------------------


def _interval_keys(run: ScoredRun) -> set[str]:
    keys = {key for _, key in SUMMARY_COLUMNS}
    keys.update(f"mismatch.{field}" for field in run.scores.mismatch)
    keys.update(f"shapley.{group}" for group in run.scores.shapley)
    return keys


def _check_intervals(
    intervals: Mapping[str, Mapping[str, tuple[float, float, float]]], runs: Sequence[ScoredRun]
) -> None:
    by_id = {run.store.manifest.run_id: run for run in runs}
    for run_id, metrics in intervals.items():
        if run_id not in by_id:
            raise ValueError(f"intervals given for unknown run {run_id!r}; runs: {', '.join(sorted(by_id))}")
        allowed = _interval_keys(by_id[run_id])
        for metric, interval in metrics.items():
            if metric not in allowed:
                raise ValueError(f"interval for unknown metric {metric!r}; known: {', '.join(sorted(allowed))}")
            if len(interval) != 3:
                raise ValueError(f"interval {run_id}/{metric} must be (estimate, low, high), got {interval!r}")


def _cell(
    value: float | None,
    interval: tuple[float, float, float] | None,
) -> str:
    """A numeric table cell in percent, with its interval below when one is given."""
    text = percent(None if value is None or math.isnan(value) else value)
    if interval is None:
        return f'<td class="num">{text}</td>'
    estimate, low, high = (float(x) for x in interval)
    ci = "n/a" if math.isnan(low) or math.isnan(high) else f"[{100 * low:.2f}, {100 * high:.2f}]"
    label = f"95% interval (estimate {percent(None if math.isnan(estimate) else estimate)})"
    return f'<td class="num">{text}<span class="ci" title="{_escape(label)}">{ci}</span></td>'


# -- summary --------------------------------------------------------------------------------


def _table(caption: str, headers: Iterable[tuple[str, bool]], rows: Iterable[str], table_id: str) -> str:
    head = "".join(f'<th scope="col"{" class=num" if num else ""}>{name}</th>' for name, num in headers)
    body = "".join(rows)
    return (
        f'<div class="table-wrap"><table id="{table_id}"><caption class="caption">{caption}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def _run_name(run: ScoredRun, label: str) -> str:
    """A run's short label, with its id (and model) in a tooltip."""
    manifest = run.store.manifest
    tip = f"{manifest.run_id} · {manifest.model_label} · {manifest.setting_label}"
    return f'<span class="run-name" title="{_escape(tip)}">{_data(label)}</span>'


def _main_table(runs: Sequence[ScoredRun], intervals: Mapping[str, Mapping[str, tuple[float, float, float]]]) -> str:
    headers = [("Run", False), ("N", True)]
    headers += [(name, True) for name, _ in SUMMARY_COLUMNS]
    rows = []
    for run, label in zip(runs, run_labels(runs), strict=True):
        manifest, scores = run.store.manifest, run.scores
        given = intervals.get(manifest.run_id, {})
        cells = [f'<th scope="row" class="text run">{_run_name(run, label)}</th>', f'<td class="num">{scores.n}</td>']
        cells += [_cell(getattr(scores, key), given.get(key)) for _, key in SUMMARY_COLUMNS]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    caption = (
        "Scores in percent (VARM-Bench Table 1's columns, the headline ones first): macro-F1 of label; JREM = "
        "joint record exact match; HER-C / HER-L = hidden record errors among items with the right category / "
        "label; Parse rate; then macro-F1 of category, target type, explicitness and stance, T-F1 = target "
        "character F1, and the Format rate. Hover a run for its id; the runs table below lists them in full."
    )
    return _table(caption, headers, rows, "summary-table")


def _run_headers(runs: Sequence[ScoredRun]) -> list[tuple[str, bool]]:
    return [(_run_name(run, label), True) for run, label in zip(runs, run_labels(runs), strict=True)]


def _breakdown_tables(
    runs: Sequence[ScoredRun], intervals: Mapping[str, Mapping[str, tuple[float, float, float]]]
) -> str:
    def row(name: str, prefix: str, getter: str) -> str:
        cells = []
        for run in runs:
            value = getattr(run.scores, getter).get(name)
            cells.append(_cell(value, intervals.get(run.store.manifest.run_id, {}).get(f"{prefix}.{name}")))
        return f"<tr><th scope='row'>{_escape(name)}</th>{''.join(cells)}</tr>"

    headers = [("field", False), *_run_headers(runs)]
    mismatch = _table(
        "Field mismatch rates in percent (target: T-F1 < 0.5; unparseable outputs mismatch every field).",
        headers,
        (row(field, "mismatch", "mismatch") for field in MISMATCH_FIELDS),
        "mismatch-table",
    )
    shapley = _table(
        "Exact Shapley decomposition of Parse − JREM (percentage points) over the field groups "
        + "; ".join(f"{g} = {{{', '.join(fs)}}}" for g, fs in SHAPLEY_GROUPS.items())
        + ".",
        [("group", False), *_run_headers(runs)],
        (row(group, "shapley", "shapley") for group in SHAPLEY_GROUPS),
        "shapley-table",
    )
    return f'<div class="tables-row">{mismatch}{shapley}</div>'


def _error_table(runs: Sequence[ScoredRun]) -> str:
    classes = sorted({name for run in runs for name in run.scores.error_classes})
    if not classes:
        return '<p class="caption" id="error-table">Every output parsed.</p>'
    rows = []
    for name in classes:
        cells = []
        for run in runs:
            count = run.scores.error_classes.get(name, 0)
            share = f'<span class="ci">{percent(count / run.scores.n)}%</span>' if count else ""
            cells.append(f'<td class="num">{count}{share}</td>')
        rows.append(f"<tr><th scope='row'>{_escape(name)}</th>{''.join(cells)}</tr>")
    return _table(
        "Unparsed outputs by error class (count, and percent of N).",
        [("error class", False), *_run_headers(runs)],
        rows,
        "error-table",
    )


def _counts_table(runs: Sequence[ScoredRun]) -> str:
    entries: list[tuple[str, list[int]]] = [
        ("N", [r.scores.n for r in runs]),
        ("parsed", [r.scores.n_parsed for r in runs]),
        ("format ok", [r.scores.n_format for r in runs]),
        ("codebook-inconsistent", [r.scores.n_inconsistent for r in runs]),
        ("cut at the token limit", [r.scores.n_truncated for r in runs]),
        ("missing outputs", [r.scores.n_missing for r in runs]),
        ("model errors", [r.scores.n_model_errors for r in runs]),
        ("JREM scored on", [r.scores.n_jrem for r in runs]),
    ]
    entries += [(f"{field} scored on", [r.scores.fields_scored.get(field, 0) for r in runs]) for field in FIELDS]
    rows = [
        f"<tr><th scope='row'>{_escape(name)}</th>{''.join(f'<td class=num>{v}</td>' for v in counts)}</tr>"
        for name, counts in entries
    ]
    return _table("Item counts.", [("", False), *_run_headers(runs)], rows, "counts-table")


def _runs_table(runs: Sequence[ScoredRun]) -> str:
    rows = []
    for run in runs:
        m = run.store.manifest
        data_path = m.data.get("path")
        sha = m.data.get("sha256")
        cells = [
            m.run_id,
            m.model,
            m.setting_label,
            m.status,
            m.prompt.get("version"),
            m.parser_version,
            m.verimod_version,
            "" if data_path is None else f"{data_path}" + ("" if not sha else f" (sha256 {str(sha)[:12]}…)"),
            m.started_at,
            m.finished_at or "",
        ]
        rows.append("<tr>" + "".join(f'<td class="text">{_data("" if c is None else c)}</td>' for c in cells) + "</tr>")
    headers = ["Run", "Model", "Setting", "Status", "Prompt", "Parser", "verimod", "Data", "Started", "Finished"]
    return _table("Runs (from their manifests).", [(h, False) for h in headers], rows, "runs-table")


#: The table of contents: (anchor, title, subsections).
_CONTENTS: Final = (
    ("summary", "Summary", (("scores", "Scores"), ("where-wrong", "Where records go wrong"),
                            ("parse-errors", "Parse errors"), ("provenance", "Counts and provenance"))),
    ("figures", "Figures", ()),
    ("items", "Items", ()),
)  # fmt: skip


def _contents(with_figures: bool) -> str:
    """The table of contents (in-page links only)."""
    entries = []
    for anchor, name, parts in _CONTENTS:
        if anchor == "figures" and not with_figures:
            continue
        inner = "".join(f'<li><a href="#{a}">{_escape(n)}</a></li>' for a, n in parts)
        entries.append(f'<li><a href="#{anchor}">{_escape(name)}</a>{f"<ol>{inner}</ol>" if inner else ""}</li>')
    return f'<nav class="toc" id="contents" aria-label="Contents"><h2>Contents</h2><ol>{"".join(entries)}</ol></nav>'


def _banner(difference: str) -> str:
    return (
        f'<p class="notice" id="different-items" role="alert"><strong>Not comparable:</strong> {_escape(difference)}. '
        "Each run's numbers are over its own items; differences between the runs mix model and data.</p>"
    )


def _summary(runs: Sequence[ScoredRun], intervals: Mapping[str, Mapping[str, tuple[float, float, float]]]) -> str:
    return "\n".join(
        [
            '<h3 id="scores">Scores</h3>',
            _main_table(runs, intervals),
            '<h3 id="where-wrong">Where records go wrong</h3>',
            _breakdown_tables(runs, intervals),
            '<h3 id="parse-errors">Parse errors</h3>',
            _error_table(runs),
            '<h3 id="provenance">Counts and provenance</h3>',
            f'<div class="tables-row">{_counts_table(runs)}</div>',
            _runs_table(runs),
        ]
    )


# -- figures --------------------------------------------------------------------------------


def _check_svg(name: str, svg: str) -> None:
    """Raise ValueError unless ``svg`` is a well-formed SVG document without active content
    (script, foreignObject, event-handler attributes, links other than fragments and data
    images)."""
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as exc:
        raise ValueError(f"figure {name!r} is not well-formed SVG: {exc}") from None
    if root.tag != f"{_SVG_NS}svg":
        raise ValueError(f"figure {name!r} is not an SVG document (root element {root.tag!r})")
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1].lower() if isinstance(element.tag, str) else ""
        if tag in _FORBIDDEN_SVG_ELEMENTS:
            raise ValueError(f"figure {name!r} contains a <{tag}> element")
        for attribute, value in element.attrib.items():
            local = attribute.rsplit("}", 1)[-1].lower()
            if local.startswith("on"):
                raise ValueError(f"figure {name!r} has an event-handler attribute {local!r}")
            if local == "href" and not (value.startswith("#") or value.startswith("data:image/")):
                raise ValueError(f"figure {name!r} links to {value[:40]!r}")


def _figures(figures: Mapping[str, str]) -> str:
    if not figures:
        return ""
    parts = []
    for name, svg in figures.items():
        _check_svg(name, svg)
        encoded = base64.b64encode(svg.encode("utf-8")).decode("ascii")
        parts.append(
            f'<figure class="figure"><img src="data:image/svg+xml;base64,{encoded}" alt="{_escape(name)}">'
            f"<figcaption>{_data(name)}</figcaption></figure>"
        )
    return (
        '<section id="figures" aria-labelledby="figures-heading"><h2 id="figures-heading">Figures</h2>'
        f'<div class="figures">{"".join(parts)}</div></section>'
    )


# -- item data ------------------------------------------------------------------------------


def _utf16(text: str, offsets: list[int]) -> list[int]:
    """Code-point offsets into ``text`` as UTF-16 code-unit offsets (JavaScript indices)."""
    if not _ASTRAL.search(text):
        return offsets
    astral = [m.start() for m in _ASTRAL.finditer(text)]
    return [offset + bisect.bisect_left(astral, offset) for offset in offsets]


def _anchors(output: str | None) -> list[list[Any]]:
    if output is None:
        return []
    anchors = parse_rationale(output).anchors
    if not anchors:
        return []
    offsets = _utf16(output, [x for a in anchors for x in (a.start, a.end)])
    return [[FIELDS.index(a.field), offsets[2 * k], offsets[2 * k + 1], a.value] for k, a in enumerate(anchors)]


def _cached_anchors(output: str | None, cache: dict[str | None, list[list[Any]]]) -> list[list[Any]]:
    """:func:`_anchors`, parsing each distinct output once (refusals and scripted outputs repeat)."""
    if output not in cache:
        cache[output] = _anchors(output)
    return cache[output]


def _item_row(reference: VarmReference, item: ItemScore, anchors: dict[str | None, list[list[Any]]]) -> dict[str, Any]:
    row: dict[str, Any] = {"id": item.id, "x": reference.text}
    if reference.context is not None:
        row["ctx"] = [reference.context] if isinstance(reference.context, str) else list(reference.context)
    row.update(
        {
            "g": list(reference.tags),
            "r": [getattr(reference, field) for field in FIELDS],
            "o": item.output,
            "s": item.status,
            "e": item.error_class,
            "d": item.detail,
            "v": None if item.values is None else list(item.values),
            "c": list(item.correct),
            "t": item.target_char_f1,
            "j": item.j,
            "f": item.format_ok,
            "vi": list(item.violations),
            "fl": list(item.flags),
            "a": _cached_anchors(item.output, anchors),
        }
    )
    return row


def _run_data(run: ScoredRun) -> dict[str, Any]:
    if len(run.items) != len(run.references):
        raise ValueError(
            f"run {run.store.manifest.run_id!r}: {len(run.items)} items for {len(run.references)} references"
        )
    rows = []
    anchors: dict[str | None, list[list[Any]]] = {}
    for reference, item in zip(run.references, run.items, strict=True):
        if reference.id != item.id:
            raise ValueError(f"run {run.store.manifest.run_id!r}: item {item.id!r} is not reference {reference.id!r}")
        rows.append(_item_row(reference, item, anchors))
    manifest = run.store.manifest
    return {"id": manifest.run_id, "model": manifest.model_label, "setting": manifest.setting, "items": rows}
