"""Inter-annotator agreement of a VARM annotation file (``verimod data agree FILE``).

Input: JSON Lines with several annotators per item, in one of two layouts (never mixed):

- *long*: one annotation per line, ``{"id", "annotator", "text"?, <fields>...}``;
- *nested*: one item per line, ``{"id", "text"?, "annotations": [{"annotator", <fields>...}, ...]}``.

``<fields>`` are any of the six record fields (``target``, ``target_type``,
``target_explicitness``, ``stance``, ``label``, ``category``); a field left out, or ``null``, is
a missing rating. Discrete values must be in the codebook vocabulary. Integer ids and annotator
names are read as strings. Optional keys: item-level ``text``, ``context``, ``tags``, ``split``,
``meta``; annotation-level ``cot``, ``meta``; any other key is an error.
Errors (:class:`~verimod.core.errors.InputError`, naming file, line and field): bad JSON, a
missing id or annotator, an unknown key or value, an annotation with none of the six fields,
an annotator annotating the same item twice, an id on two lines of a nested file, an item
whose ``text`` differs between lines, an empty ``annotations`` list, mixed layouts.

The report (:func:`agreement_report`), per discrete field: Krippendorff's α, Fleiss' κ and raw
agreement (:mod:`verimod.stats.agreement`) over the items with ≥ 2 ratings of the field, each
with a percentile bootstrap interval; Cohen's κ of every annotator pair that rated at least one
common item; for the target, the mean pairwise target score
(:func:`~verimod.tasks.varm.scorer.target_score`: character F1, ``no_clear_target`` on both sides
1, on one side 0). Items are ordered by id and annotators by name before anything is computed,
so the report does not depend on the line order or the layout. All bootstrap intervals share
the same resamples of items (``seed``, ``bootstrap`` resamples).
"""

from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from rich.table import Table

from verimod.core.errors import InputError, Problem, shown
from verimod.core.validation import validation_problems
from verimod.data.jsonl import read_jsonl
from verimod.stats.agreement import (
    ConfidenceInterval,
    ItemStatistic,
    RatingTable,
    bootstrap_cis,
    cohen_kappa_statistic,
    fleiss_kappa_statistic,
    krippendorff_alpha_statistic,
    mean_pairwise_similarity_statistic,
    raw_agreement_statistic,
)
from verimod.tasks.varm.codebook import (
    DISCRETE_FIELDS,
    FIELDS,
    VOCABULARY,
    Category,
    Explicitness,
    Label,
    Stance,
    TargetType,
)
from verimod.tasks.varm.scorer import target_score

Layout = Literal["long", "nested"]


def _id_to_str(value: Any) -> Any:
    """Read integer ids and annotator names as their decimal string (booleans stay invalid)."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class _Annotation(BaseModel):
    """One annotator's (partial) record of one item."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    annotator: str = Field(min_length=1)
    target: str | None = Field(default=None, min_length=1)
    target_type: TargetType | None = None
    target_explicitness: Explicitness | None = None
    stance: Stance | None = None
    label: Label | None = None
    category: Category | None = None
    cot: str | None = None
    meta: dict[str, Any] | None = None

    _coerce_annotator = field_validator("annotator", mode="before")(_id_to_str)

    @field_validator("target")
    @classmethod
    def _target_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("target must not be blank (use no_clear_target)")
        return value


class _ItemKeys(BaseModel):
    """Item-level keys shared by both layouts."""

    id: str = Field(min_length=1)
    text: str | None = Field(default=None, min_length=1)
    context: str | list[str] | None = None
    tags: list[str] | None = None
    split: str | None = None

    _coerce_id = field_validator("id", mode="before")(_id_to_str)


class _LongLine(_ItemKeys, _Annotation):
    """A line of the long layout: item keys and one annotation."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class _NestedLine(_ItemKeys):
    """A line of the nested layout: item keys and its annotations (validated one by one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    meta: dict[str, Any] | None = None
    annotations: list[dict[str, Any]] = Field(min_length=1)


class AgreementEstimate(BaseModel):
    """A point estimate and its bootstrap interval; None where undefined (or no bootstrap)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float | None
    low: float | None
    high: float | None


class FieldAgreement(BaseModel):
    """Agreement on one discrete field, over the items with at least two ratings of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str
    n_items: int = Field(description="items with ≥ 2 ratings of the field (used by every measure)")
    n_ratings: int = Field(description="ratings of the field in those items (Krippendorff's n)")
    n_annotations: int = Field(description="all ratings of the field, single-rated items included")
    alpha: AgreementEstimate
    fleiss_kappa: AgreementEstimate
    raw_agreement: AgreementEstimate


class TargetAgreement(BaseModel):
    """Mean pairwise target score over the items with at least two targets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_items: int
    n_annotations: int
    mean_pairwise_char_f1: AgreementEstimate


class PairAgreement(BaseModel):
    """Cohen's κ of two annotators on one field, over the items both rated."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str
    annotator_a: str
    annotator_b: str
    n_items: int
    cohen_kappa: float | None
    raw_agreement: float | None


class AgreementReport(BaseModel):
    """Agreement of a multi-annotator VARM file; fractions and coefficients, not percentages."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_items: int
    n_annotators: int
    n_annotations: int
    annotators: list[str]
    bootstrap: int
    seed: int
    confidence: float
    fields: list[FieldAgreement]
    target: TargetAgreement
    pairs: list[PairAgreement]


# ----------------------------------------------------------------------------------- reading


def _validated(model: type[BaseModel], obj: dict[str, Any], name: str, line: int, prefix: str = "") -> Any:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        problem = validation_problems(exc, model, name, line)[0]
        field = f"{prefix}{problem.field}" if problem.field else prefix.rstrip(".") or None
        raise InputError(Problem(name, line, field, problem.message)) from None


class _Collector:
    """Gathers annotations per item, checking duplicates and text consistency."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.items: dict[str, dict[str, _Annotation]] = {}
        self.annotation_line: dict[tuple[str, str], int] = {}
        self.text: dict[str, tuple[str, int]] = {}
        self.item_line: dict[str, int] = {}

    def item(self, keys: _ItemKeys, line: int) -> None:
        self.items.setdefault(keys.id, {})
        self.item_line.setdefault(keys.id, line)
        if keys.text is not None:
            seen = self.text.setdefault(keys.id, (keys.text, line))
            if seen[0] != keys.text:
                raise InputError.at(
                    self.name, line, "text", f"item {shown(keys.id)} has a different text on line {seen[1]}"
                )

    def add(self, item_id: str, annotation: _Annotation, line: int, field: str) -> None:
        if all(getattr(annotation, f) is None for f in FIELDS):
            raise InputError.at(
                self.name, line, field.rstrip(".") or None, f"annotation gives none of the fields {', '.join(FIELDS)}"
            )
        key = (item_id, annotation.annotator)
        if key in self.annotation_line:
            raise InputError.at(
                self.name,
                line,
                f"{field}annotator",
                f"annotator {shown(annotation.annotator)} already annotated item {shown(item_id)} "
                f"on line {self.annotation_line[key]}",
            )
        self.annotation_line[key] = line
        self.items[item_id][annotation.annotator] = annotation


def read_annotations(path: str | Path, encoding: str | None = None) -> tuple[Layout, dict[str, dict[str, _Annotation]]]:
    """``(layout, {item id: {annotator: annotation}})`` of a multi-annotator file (module docstring)."""
    name = str(path)
    collector = _Collector(name)
    layout: Layout | None = None
    for line, obj in read_jsonl(path, encoding):
        this: Layout = "nested" if "annotations" in obj else "long"
        if layout is None:
            layout = this
        elif this != layout:
            message = (
                "nested layout ('annotations'), but line 1 uses the long layout (one annotation per line)"
                if this == "nested"
                else "no 'annotations': a long-layout line, but line 1 uses the nested layout"
            )
            raise InputError.at(name, line, "annotations", f"{message}; do not mix layouts")
        if this == "long":
            long_line: _LongLine = _validated(_LongLine, obj, name, line)
            collector.item(long_line, line)
            annotation = _Annotation.model_construct(**{k: getattr(long_line, k) for k in _Annotation.model_fields})
            collector.add(long_line.id, annotation, line, "")
            continue
        nested: _NestedLine = _validated(_NestedLine, obj, name, line)
        if nested.id in collector.item_line:
            message = f"duplicate id {shown(nested.id)} (first on line {collector.item_line[nested.id]})"
            raise InputError.at(name, line, "id", message)
        collector.item(nested, line)
        for i, raw in enumerate(nested.annotations):
            prefix = f"annotations.{i}."
            collector.add(nested.id, _validated(_Annotation, raw, name, line, prefix), line, prefix)
    if layout is None:
        raise InputError.at(name, None, None, "no annotations (the file is empty)")
    return layout, collector.items


# ----------------------------------------------------------------------------------- report


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value


def _estimate(interval: ConfidenceInterval, bootstrap: int) -> AgreementEstimate:
    if bootstrap == 0:
        return AgreementEstimate(value=_number(interval.estimate), low=None, high=None)
    return AgreementEstimate(value=_number(interval.estimate), low=_number(interval.low), high=_number(interval.high))


def agreement_report(
    path: str | Path,
    bootstrap: int = 1000,
    seed: int = 0,
    encoding: str | None = None,
    confidence: float = 0.95,
) -> AgreementReport:
    """Read a multi-annotator VARM file and measure agreement (see the module docstring).

    ``bootstrap`` resamples of the items (0: no intervals), drawn with ``numpy`` from ``seed``;
    the same arguments give the same report. Raises :class:`InputError` for bad input.
    """
    if bootstrap < 0:
        raise ValueError("bootstrap must be ≥ 0")
    _, items = read_annotations(path, encoding)
    ids = sorted(items)
    annotators = sorted({a for per_item in items.values() for a in per_item})
    column = {a: j for j, a in enumerate(annotators)}
    n_items, n_annotators = len(ids), len(annotators)

    codes = {f: np.full((n_items, n_annotators), -1, dtype=np.int64) for f in DISCRETE_FIELDS}
    targets: list[list[str | None]] = [[None] * n_annotators for _ in ids]
    for u, item_id in enumerate(ids):
        for annotator, annotation in items[item_id].items():
            j = column[annotator]
            targets[u][j] = annotation.target
            for f in DISCRETE_FIELDS:
                value = getattr(annotation, f)
                if value is not None:
                    codes[f][u, j] = VOCABULARY[f].index(value)

    tables: dict[str, RatingTable] = {}
    statistics: list[ItemStatistic] = []
    for f in DISCRETE_FIELDS:
        k = len(VOCABULARY[f])
        rated = codes[f] >= 0
        flat = np.nonzero(rated)[0] * k + codes[f][rated]
        table = RatingTable.from_counts(np.bincount(flat, minlength=n_items * k).reshape(n_items, k), VOCABULARY[f])
        tables[f] = table
        statistics += [
            krippendorff_alpha_statistic(table),
            fleiss_kappa_statistic(table),
            raw_agreement_statistic(table),
        ]
    statistics.append(mean_pairwise_similarity_statistic(targets, target_score))
    intervals = bootstrap_cis(statistics, bootstrap, seed, confidence)

    fields = []
    for i, f in enumerate(DISCRETE_FIELDS):
        m = tables[f].counts.sum(axis=1)
        alpha, kappa, raw = intervals[3 * i : 3 * i + 3]
        fields.append(
            FieldAgreement(
                field=f,
                n_items=int((m >= 2).sum()),
                n_ratings=int(m[m >= 2].sum()),
                n_annotations=int(m.sum()),
                alpha=_estimate(alpha, bootstrap),
                fleiss_kappa=_estimate(kappa, bootstrap),
                raw_agreement=_estimate(raw, bootstrap),
            )
        )
    n_targets = np.array([sum(t is not None for t in row) for row in targets], dtype=np.int64)
    target = TargetAgreement(
        n_items=int((n_targets >= 2).sum()),
        n_annotations=int(n_targets.sum()),
        mean_pairwise_char_f1=_estimate(intervals[-1], bootstrap),
    )
    return AgreementReport(
        n_items=n_items,
        n_annotators=n_annotators,
        n_annotations=sum(len(per_item) for per_item in items.values()),
        annotators=annotators,
        bootstrap=bootstrap,
        seed=seed,
        confidence=confidence,
        fields=fields,
        target=target,
        pairs=_pairs(codes, annotators),
    )


def _pairs(codes: dict[str, npt.NDArray[np.int64]], annotators: list[str]) -> list[PairAgreement]:
    """Cohen's κ and raw agreement of every annotator pair and field with a common item."""
    pairs = []
    for j, k in combinations(range(len(annotators)), 2):
        for f in DISCRETE_FIELDS:
            a, b = codes[f][:, j], codes[f][:, k]
            both = (a >= 0) & (b >= 0)
            n = int(both.sum())
            if n == 0:
                continue
            kappa = cohen_kappa_statistic(a[both], b[both]).estimate()
            pairs.append(
                PairAgreement(
                    field=f,
                    annotator_a=annotators[j],
                    annotator_b=annotators[k],
                    n_items=n,
                    cohen_kappa=_number(kappa),
                    raw_agreement=float((a[both] == b[both]).mean()),
                )
            )
    return pairs


# ----------------------------------------------------------------------------------- tables


def _cell(estimate: AgreementEstimate) -> str:
    if estimate.value is None:
        return "n/a"
    if estimate.low is None or estimate.high is None:
        return f"{estimate.value:.3f}"
    return f"{estimate.value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}]"


def agreement_rows(report: AgreementReport) -> list[dict[str, str]]:
    """The rows of :func:`agreement_table` as strings (field, items, ratings, α, κ, raw agreement)."""
    rows = [
        {
            "field": f.field,
            "items": str(f.n_items),
            "ratings": str(f.n_annotations),
            "alpha": _cell(f.alpha),
            "fleiss_kappa": _cell(f.fleiss_kappa),
            "raw_agreement": _cell(f.raw_agreement),
        }
        for f in report.fields
    ]
    rows.append(
        {
            "field": "target (mean pairwise char-F1)",
            "items": str(report.target.n_items),
            "ratings": str(report.target.n_annotations),
            "alpha": "",
            "fleiss_kappa": "",
            "raw_agreement": _cell(report.target.mean_pairwise_char_f1),
        }
    )
    return rows


def agreement_table(report: AgreementReport, title: str = "Inter-annotator agreement") -> Table:
    """Per-field α, Fleiss κ and raw agreement with their intervals, and the target row."""
    ci = f"{round(100 * report.confidence)}% CI" if report.bootstrap else "no CI"
    table = Table(
        title=f"{title} ({report.n_items} items, {report.n_annotators} annotators, "
        f"{report.n_annotations} annotations; {ci})",
        header_style="bold",
    )
    for header in ("field", "items ≥2", "ratings", "Krippendorff α", "Fleiss κ", "raw agreement"):
        table.add_column(header, justify="left" if header == "field" else "right")
    rows = agreement_rows(report)
    for row in rows[:-1]:
        table.add_row(*row.values())
    table.add_section()
    table.add_row(*rows[-1].values())
    return table


def pairwise_table(report: AgreementReport, title: str = "Cohen's κ per annotator pair") -> Table:
    """One row per annotator pair, one column per field: ``κ (n items)``."""
    table = Table(title=title, header_style="bold")
    table.add_column("annotator A")
    table.add_column("annotator B")
    for f in DISCRETE_FIELDS:
        table.add_column(f, justify="right")
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for pair in report.pairs:
        kappa = "n/a" if pair.cohen_kappa is None else f"{pair.cohen_kappa:.3f}"
        cells.setdefault((pair.annotator_a, pair.annotator_b), {})[pair.field] = f"{kappa} ({pair.n_items})"
    for (a, b), by_field in cells.items():
        table.add_row(a, b, *(by_field.get(f, "") for f in DISCRETE_FIELDS))
    return table
