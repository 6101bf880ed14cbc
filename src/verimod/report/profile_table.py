"""Data-set profiles side by side (:class:`~verimod.data.profile.ProfileReport`) as a Rich table,
Markdown, CSV or JSON. One row per statistic, one column per file.

Cells: a share as ``12.3 % (45)`` (45 texts); a share over a subset as ``70.7 % (244/345)``; a
share over n = 0 as ``–``; a hard-case share of an untagged file as ``– (untagged)``. Row labels
that come from the data (split and source names, tags, frames) are printed as plain text, never
as Rich markup; in CSV, a cell starting with ``= + - @`` gets a leading ``'`` so that no
spreadsheet evaluates it (JSON keeps every value exactly).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Final, Literal

from rich.table import Table
from rich.text import Text

from verimod.core.errors import one_line
from verimod.data.profile import DISTRIBUTION_FIELDS, FileProfile, ProfileReport, Share
from verimod.data.profile_text import TARGET_MARK

ProfileFormat = Literal["table", "md", "csv", "json"]
PROFILE_FORMATS: Final = ("table", "md", "csv", "json")
#: (row label, attribute) of the per-text shares, in display order.
TEXT_SHARES: Final = (
    ("emoji", "emoji"),
    ("emoticon codes [..]", "emoticon"),
    ("emoji or emoticon", "emoji_or_emoticon"),
    ("no punctuation at all", "no_punctuation"),
    ("Latin letters", "latin"),
    ("Traditional characters", "traditional"),
)
_FIELD_TITLES: Final = {"category_harmful": "category (harmful)", "source": "source (meta.source)"}
_FORMULA_START: Final = ("=", "+", "-", "@", "\t", "\r")

Row = tuple[str, str, list[str]]  # (section, label, one cell per file)


def share_cell(share: Share | None, subset: bool = False) -> str:
    """``12.3 % (45)``; with ``subset`` ``12.3 % (45/366)``; ``–`` when n = 0 or no share."""
    if share is None or share.share is None:
        return "–"
    count = f"{share.count}/{share.n}" if subset else str(share.count)
    return f"{100 * share.share:.1f} % ({count})"


def _per_file(files: Sequence[FileProfile], cell: Callable[[FileProfile], str]) -> list[str]:
    return [cell(f) for f in files]


def _attribute_cell(profile: FileProfile, path: str, subset: bool = False) -> str:
    """The cell of a dotted attribute: a :class:`Share` as a share, a float with one decimal."""
    value: object = profile
    for name in path.split("."):
        value = getattr(value, name)
    if isinstance(value, Share):
        return share_cell(value, subset)
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def _of_records(profile: FileProfile, count: int) -> str:
    return share_cell(Share.of(count, profile.records))


def _hard_negative_cell(profile: FileProfile) -> str:
    return "– (untagged)" if profile.hard_negatives is None else share_cell(profile.hard_negatives, True)


def _distribution_rows(files: Sequence[FileProfile]) -> list[Row]:
    """Value shares of each annotation field (a field no file annotates is left out)."""
    rows: list[Row] = []
    for name in (*DISTRIBUTION_FIELDS, "category_harmful"):
        dists = [f.distributions[name] for f in files]
        values = list(dict.fromkeys(v for d in dists for v in d.counts))
        section = _FIELD_TITLES.get(name, name)
        for value in values:
            rows.append((section, value, [share_cell(Share.of(d.counts.get(value, 0), d.n)) for d in dists]))
        if values and any(d.missing for d in dists):
            rows.append((section, "(missing)", [share_cell(Share.of(d.missing, d.n)) for d in dists]))
    return rows


def profile_rows(report: ProfileReport) -> list[Row]:
    """Every row of the side-by-side profile, grouped by section."""
    files = report.files
    t = f"{files[0].near_duplicates.threshold:g}"
    simple = [
        ("texts", "records", "records", False),
        ("texts", "skipped (malformed)", "skipped", False),
        *(("length (chars)", k, f"length.{k}", False) for k in ("p10", "p50", "p90", "max", "mean")),
        *(("texts with", label, attribute, False) for label, attribute in TEXT_SHARES),
        ("opens with its target", "all with a target", "opens_with_target", True),
        ("opens with its target", "harmful", "opens_with_target_harmful", True),
        (f"near-duplicates ≥ {t}", "pairs", "near_duplicates.pairs", False),
        (f"near-duplicates ≥ {t}", "components", "near_duplicates.components", False),
    ]
    rows: list[Row] = [
        (section, label, _per_file(files, partial(_attribute_cell, path=path, subset=subset)))
        for section, label, path, subset in simple
    ]
    rows += [
        (
            f"near-duplicates ≥ {t}",
            "texts in components",
            [_of_records(f, f.near_duplicates.members) for f in files],
        ),
        (
            f"near-duplicates ≥ {t}",
            "redundant (a dedup drops)",
            [_of_records(f, f.near_duplicates.redundant) for f in files],
        ),
    ]
    rows += _distribution_rows(files)
    rows.append(("tags", "non-harmful that are hard cases", _per_file(files, _hard_negative_cell)))
    for tag in dict.fromkeys(tag for f in files for tag in f.tags):
        rows.append(("tags", tag, [_of_records(f, f.tags.get(tag, 0)) for f in files]))
    for section, frame_rows in (("frames (texts containing)", report.frames), ("target frames", report.target_frames)):
        for frame in frame_rows:
            rows.append((section, frame.frame, [share_cell(s, TARGET_MARK in frame.frame) for s in frame.shares]))
    return rows


def _headers(report: ProfileReport) -> list[str]:
    names = [Path(f.path).name for f in report.files]
    return [f.path if names.count(Path(f.path).name) > 1 else Path(f.path).name for f in report.files]


def _csv_safe(cell: str) -> str:
    return "'" + cell if cell.startswith(_FORMULA_START) else cell


def render_profile(report: ProfileReport, fmt: ProfileFormat) -> str | Table:
    """The report as a Rich table (``table``) or as text (``md``, ``csv``, ``json``)."""
    if fmt == "json":  # lone surrogates (possible in JSON input) as \ud800-style escapes
        text = json.dumps(report.model_dump(mode="json"), ensure_ascii=False, indent=2)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    headers, rows = _headers(report), profile_rows(report)
    if fmt == "table":
        table = Table(title="data profile (shares of texts; frames: Ⓣ target, Ⓝ digits, Ⓛ Latin)", header_style="bold")
        table.add_column("section")
        table.add_column("statistic")
        for header in headers:
            table.add_column(Text(one_line(header)), justify="right")
        previous = None
        for section, label, cells in rows:
            if previous is not None and section != previous:
                table.add_section()
            shown = Text(one_line(section)) if section != previous else Text("")
            table.add_row(shown, Text(one_line(label)), *(Text(c) for c in cells))
            previous = section
        return table
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["section", "statistic", *headers])
        writer.writerows([_csv_safe(section), _csv_safe(label), *cells] for section, label, cells in rows)
        return out.getvalue()
    if fmt == "md":

        def md(cell: str) -> str:
            return one_line(cell).replace("\\", "\\\\").replace("|", "\\|")

        lines = [
            "| " + " | ".join(md(h) for h in ["section", "statistic", *headers]) + " |",
            "|---|---|" + "---:|" * len(headers),
        ]
        lines += ["| " + " | ".join(md(c) for c in [section, label, *cells]) + " |" for section, label, cells in rows]
        return "\n".join(lines) + "\n"
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(PROFILE_FORMATS)}")
