"""Inter-annotator agreement of ToxiREX annotations, and the disagreement-analysis sheet.

**Fleiss' κ per variable** (:func:`variable_agreement`), over comments, with
:func:`verimod.stats.fleiss_kappa` (P̄ = mean_i Σ_c n_ic(n_ic − 1)/(m_i(m_i − 1)),
P̄_e = Σ_c p_c², κ = (P̄ − P̄_e)/(1 − P̄_e)) and a percentile bootstrap interval over comments.
κ is undefined on a resample whose ratings all fall in one category (P̄_e = 1); such resamples
cannot enter the percentiles, and leaving them out silently biases the interval (it can end
at the estimate). So they are counted (``n_undefined`` of ``n_resamples``) and any undefined
resample marks the interval (:attr:`AgreementRow.interval_marked`), which rests on the others.
Multi-label ``implTemporality`` gets one binary κ per label (``implTemporality:past`` …);
attitudes are treated as nominal (six categories). Because the annotation stops early, which
comments count for a variable is a choice (``missing``):

- ``complete`` (default): the comments where every annotator reached the variable;
- ``pairable``: every comment where at least two annotators reached it (unequal numbers of
  ratings per comment; p_c pools all ratings);
- ``category``: every comment, "not reached" being one more category, so upstream
  disagreements show up in every later variable.

The paper does not say which comments its Table 5 counts: it calls its κ "computed naively",
"calculated independently for the categorical variables". Its values — down to −0.3 on the
implication variables, while the gates reach 0.2–0.6 — are what the complete-case subsets
give (few comments, skewed classes); with "not reached" as a category the implication
variables would inherit the gates' agreement instead. ``complete`` is therefore the default,
our reading of the paper; ``category`` is offered, not claimed as the paper's.

**Disagreement sheet** (:func:`disagreement_rows`, :func:`write_sheet`, :func:`read_sheet`):
one row per comment and variable on which the annotators disagree — by default the
proposition-composition variables (tokens left out), on comments whose annotators agree on
the four first variables, as in the paper's analysis. Columns: ``comment_id, variable,
annotations, category, note``. ``annotations`` maps annotator → value (a JSON object; in CSV
the cell holds that object's JSON text, so free-text values need no escaping); ``category`` is one of

- ``error``: an annotation error by one or more annotators;
- ``orthogonal``: a disagreement in name only, the other answers are also correct;
- ``conditional``: a direct consequence of an upstream disagreement;
- ``subjective``: a difference in perspective (interpretation) the annotators accept as valid;
- ``disjunct``: none of the above could be established;

empty in a fresh sheet. :func:`disagreement_counts` counts the categories per variable and
in total, and the shares over the rows not marked ``conditional``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from verimod.core.errors import InputError, did_you_mean, shown
from verimod.data.jsonl import atomic_write, dumps_line
from verimod.data.records import read_records
from verimod.stats.agreement import bootstrap_distribution, fleiss_kappa_statistic
from verimod.tasks.toxirex.evaluation_items import NOT_REACHED, Side, label
from verimod.tasks.toxirex.schema import AnnotationRecord, Temporality
from verimod.tasks.toxirex.stopping import (
    COMPOSITION_VARIABLES,
    GATE_VARIABLES,
    VARIABLE_BY_NAME,
    VARIABLES,
)

Missing = Literal["complete", "pairable", "category"]
DISAGREEMENT_CATEGORIES: tuple[str, ...] = ("error", "orthogonal", "conditional", "subjective", "disjunct")
SHEET_COLUMNS: tuple[str, ...] = ("comment_id", "variable", "annotations", "category", "note")
#: Variables with a κ: nominal ones (tokens and free text have none).
AGREEMENT_VARIABLES: tuple[str, ...] = tuple(v.name for v in VARIABLES if v.kind not in ("tokens", "text"))
SHEET_VARIABLES: tuple[str, ...] = tuple(v for v in COMPOSITION_VARIABLES if VARIABLE_BY_NAME[v].kind != "tokens")


@dataclass(frozen=True, slots=True)
class AgreementRow:
    """Fleiss' κ of one variable (or one label of a multi-label variable)."""

    variable: str
    n_items: int
    kappa: float
    low: float
    high: float
    n_undefined: int = 0
    n_resamples: int = 0

    @property
    def interval_marked(self) -> bool:
        """True when some bootstrap resamples had an undefined κ (module docstring)."""
        return self.n_undefined > 0


def _comments(annotations: Sequence[AnnotationRecord]) -> list[list[tuple[str, Side]]]:
    by_comment: dict[str, list[AnnotationRecord]] = {}
    for a in annotations:
        by_comment.setdefault(a.comment_id, []).append(a)
    return [
        [(a.annotator, Side.of(a.reasoning)) for a in sorted(by_comment[c], key=lambda a: a.annotator)]
        for c in sorted(by_comment)
    ]


def _rating(side: Side, variable: str, kind: str, member: str | None) -> Any:
    if variable not in side.reached or side.values[variable] is None:
        return None
    value = side.values[variable]
    if member is not None:
        return "yes" if member in {label(v, "categorical") for v in value} else "no"
    return label(value, kind)


def ratings_matrix(
    annotations: Sequence[AnnotationRecord], variable: str, missing: Missing = "complete", member: str | None = None
) -> list[list[Any]]:
    """Comments × annotators ratings of ``variable`` (``member``: one label of a multi-label one)."""
    kind = VARIABLE_BY_NAME[variable].kind
    rows = []
    for sides in _comments(annotations):
        row = [_rating(side, variable, kind, member) for _, side in sides]
        if missing == "category":
            rows.append([NOT_REACHED if r is None else r for r in row])
        elif missing == "complete":
            if all(r is not None for r in row):
                rows.append(row)
        else:
            rows.append(row)
    return rows


def _kappa_row(name: str, rated: list[list[Any]], n_resamples: int, seed: int) -> AgreementRow:
    """κ of the rated comments with its bootstrap interval and undefined resamples counted."""
    (estimate,), values = bootstrap_distribution([fleiss_kappa_statistic(rated)], n_resamples, seed)
    row = values[0]
    defined = row[~np.isnan(row)]
    undefined = int(n_resamples - defined.size)
    if defined.size == 0:
        low = high = math.nan
    else:
        low, high = (float(x) for x in np.quantile(defined, [0.025, 0.975]))
    return AgreementRow(name, len(rated), estimate, low, high, undefined, n_resamples)


def variable_agreement(
    annotations: Sequence[AnnotationRecord],
    variables: Sequence[str] = AGREEMENT_VARIABLES,
    missing: Missing = "complete",
    n_resamples: int = 1000,
    seed: int = 0,
) -> list[AgreementRow]:
    """Fleiss' κ per variable with a bootstrap interval over comments (module docstring)."""
    if missing not in ("complete", "pairable", "category"):
        raise ValueError(f"missing must be complete, pairable or category, got {missing!r}")
    out = []
    for variable in variables:
        kind = VARIABLE_BY_NAME[variable].kind
        if kind in ("tokens", "text"):
            raise ValueError(f"{variable} is a {kind} variable; it has no κ")
        members: list[str | None] = [t.value for t in Temporality] if kind == "multilabel" else [None]
        for member in members:
            matrix = ratings_matrix(annotations, variable, missing, member)
            name = variable if member is None else f"{variable}:{member}"
            rated = [r for r in matrix if sum(v is not None for v in r) >= 2]
            if not rated:
                out.append(AgreementRow(name, 0, math.nan, math.nan, math.nan))
                continue
            out.append(_kappa_row(name, rated, n_resamples, seed))
    return out


@dataclass(frozen=True, slots=True)
class DisagreementRow:
    """One disagreement to categorise: comment, variable, each annotator's value."""

    comment_id: str
    variable: str
    annotations: dict[str, str]
    category: str | None = None
    note: str = ""


def _shown_value(side: Side, variable: str) -> str:
    if variable not in side.reached:
        return NOT_REACHED
    value = side.values[variable]
    kind = VARIABLE_BY_NAME[variable].kind
    if value is None:
        return ""
    if kind == "multilabel":
        return "|".join(label(v, "categorical") for v in value)
    return str(label(value, kind))


def disagreement_rows(
    annotations: Sequence[AnnotationRecord],
    variables: Sequence[str] = SHEET_VARIABLES,
    require_gate_agreement: bool = True,
) -> list[DisagreementRow]:
    """Template rows (empty category) for every comment × variable with differing values."""
    by_comment: dict[str, list[AnnotationRecord]] = {}
    for a in annotations:
        by_comment.setdefault(a.comment_id, []).append(a)
    rows = []
    for comment_id in sorted(by_comment):
        sides = [(a.annotator, Side.of(a.reasoning)) for a in sorted(by_comment[comment_id], key=lambda a: a.annotator)]
        if len(sides) < 2:
            continue
        if require_gate_agreement and any(len({_shown_value(s, g) for _, s in sides}) > 1 for g in GATE_VARIABLES):
            continue
        for variable in variables:
            shown_values = {name: _shown_value(side, variable) for name, side in sides}
            if len(set(shown_values.values())) > 1:
                rows.append(DisagreementRow(comment_id, variable, shown_values))
    return rows


def _cell(annotations: dict[str, str]) -> str:
    return json.dumps(annotations, ensure_ascii=False)


def write_sheet(rows: Sequence[DisagreementRow], path: str | Path) -> None:
    """Write a sheet as CSV (``.csv``) or JSON Lines (any other suffix), atomically."""
    if str(path).lower().endswith(".csv"):
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(SHEET_COLUMNS)
        for r in rows:
            writer.writerow([r.comment_id, r.variable, _cell(r.annotations), r.category or "", r.note])
        atomic_write(path, [buffer.getvalue().encode("utf-8")])
        return
    atomic_write(
        path,
        (
            dumps_line(
                {
                    "comment_id": r.comment_id,
                    "variable": r.variable,
                    "annotations": r.annotations,
                    "category": r.category,
                    "note": r.note,
                }
            )
            for r in rows
        ),
    )


def _parse_cell(text: str, path: str, line: int) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        message = f"expected a JSON object of annotator → value, got {shown(text)}"
        raise InputError.at(path, line, "annotations", message) from None


def read_sheet(path: str | Path, require_category: bool = True) -> list[DisagreementRow]:
    """Read a filled sheet (CSV or JSONL); every bad line is a one-line :class:`InputError`."""
    name = str(path)
    stream = read_records(name, "csv" if name.lower().endswith(".csv") else "jsonl")
    rows = []
    seen: dict[tuple[str, str], int] = {}
    for line, record in stream:
        unknown = [k for k in record if k not in SHEET_COLUMNS]
        if unknown:
            raise InputError.at(name, line, unknown[0], f"unknown column{did_you_mean(unknown[0], SHEET_COLUMNS)}")
        for column in ("comment_id", "variable", "annotations"):
            if record.get(column) in (None, ""):
                raise InputError.at(name, line, column, "missing")
        comment_id, variable = str(record["comment_id"]), record["variable"]
        if variable not in VARIABLE_BY_NAME:
            hint = did_you_mean(str(variable), VARIABLE_BY_NAME)
            raise InputError.at(name, line, "variable", f"unknown variable {shown(variable)}{hint}")
        raw = record["annotations"]
        if isinstance(raw, str):
            raw = _parse_cell(raw, name, line)
        if not isinstance(raw, dict) or not raw:
            raise InputError.at(name, line, "annotations", f"must be an object of annotator → value, got {shown(raw)}")
        annotations = {str(k): "" if v is None else str(v) for k, v in raw.items()}
        category = record.get("category") or None
        if category is None and require_category:
            raise InputError.at(name, line, "category", f"missing; one of {', '.join(DISAGREEMENT_CATEGORIES)}")
        if category is not None and category not in DISAGREEMENT_CATEGORIES:
            hint = did_you_mean(str(category), DISAGREEMENT_CATEGORIES)
            message = f"value {shown(category)} is not one of {', '.join(DISAGREEMENT_CATEGORIES)}{hint}"
            raise InputError.at(name, line, "category", message)
        key = (comment_id, variable)
        if key in seen:
            message = f"comment {shown(comment_id)} and variable {variable} already on line {seen[key]}"
            raise InputError.at(name, line, "variable", message)
        seen[key] = line
        note = record.get("note")
        rows.append(DisagreementRow(comment_id, variable, annotations, category, "" if note is None else str(note)))
    return rows


@dataclass(frozen=True)
class DisagreementCounts:
    """Category counts per variable and in total, and shares over non-conditional rows."""

    by_variable: dict[str, dict[str, int]]
    total: dict[str, int]
    uncategorised: int
    shares: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts."""
        return {
            "by_variable": self.by_variable,
            "total": self.total,
            "uncategorised": self.uncategorised,
            "shares_excluding_conditional": self.shares,
        }


def disagreement_counts(rows: Sequence[DisagreementRow]) -> DisagreementCounts:
    """Counts of disagreement categories (share: count / rows not marked conditional)."""
    by_variable: dict[str, Counter[str]] = {}
    uncategorised = 0
    for r in rows:
        if r.category is None:
            uncategorised += 1
            continue
        by_variable.setdefault(r.variable, Counter())[r.category] += 1
    total: Counter[str] = Counter()
    for counter in by_variable.values():
        total.update(counter)
    non_conditional = sum(v for k, v in total.items() if k != "conditional")
    shares = {
        c: (total[c] / non_conditional if non_conditional else math.nan)
        for c in DISAGREEMENT_CATEGORIES
        if c != "conditional"
    }
    return DisagreementCounts(
        {v: {c: counts.get(c, 0) for c in DISAGREEMENT_CATEGORIES} for v, counts in by_variable.items()},
        {c: total.get(c, 0) for c in DISAGREEMENT_CATEGORIES},
        uncategorised,
        shares,
    )
