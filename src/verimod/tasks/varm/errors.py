"""Error analysis of a scored run.

- Breakdown: field mismatch rates and the Shapley decomposition of Parse − JREM (with JREM and
  Parse) over the items of each reference category and of each phenomenon tag.
- Confusion matrices of every discrete field: reference value (rows, over the items whose
  reference carries the field) × predicted value (columns: the vocabulary plus ``unparsed``).
- Hidden record errors: items whose label or category is right while the record is wrong
  (J = 0), with the fields that failed.
- Parse errors: counts per error class with a few examples (id, detail, output excerpt: the first
  :data:`EXCERPT` characters, or for ``truncated`` outputs the last ones, where the cut is).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from verimod.tasks.varm.codebook import DISCRETE_FIELDS, FIELDS, VOCABULARY
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import ERROR_CLASSES, TRUNCATED, ItemScore, VarmScorer

UNPARSED = "unparsed"
#: characters of an unparsed output shown as an example
EXCERPT = 300


def _excerpt(output: str | None, tail: bool) -> str | None:
    """The first :data:`EXCERPT` characters of ``output`` (``tail``: the last, after "…")."""
    if output is None or len(output) <= EXCERPT:
        return output
    return "…" + output[-EXCERPT:] if tail else output[:EXCERPT]


class GroupBreakdown(BaseModel):
    """Record-level figures over the items of one category or tag."""

    model_config = ConfigDict(extra="forbid")

    kind: str  # "category" | "tag"
    group: str
    n: int
    parse_rate: float
    jrem: float | None
    mismatch: dict[str, float | None]
    shapley: dict[str, float]


class ConfusionMatrix(BaseModel):
    """Reference × prediction counts of one field."""

    model_config = ConfigDict(extra="forbid")

    field: str
    labels: list[str]
    predicted: list[str]
    counts: list[list[int]]


class HiddenError(BaseModel):
    """A right label or category on a wrong record."""

    model_config = ConfigDict(extra="forbid")

    id: str
    label_correct: bool
    category_correct: bool
    failing_fields: list[str]


class ParseErrorExample(BaseModel):
    """One unparsed output."""

    model_config = ConfigDict(extra="forbid")

    id: str
    detail: str | None
    output: str | None


class ParseErrorClassSummary(BaseModel):
    """Count and examples of one error class."""

    model_config = ConfigDict(extra="forbid")

    error_class: str
    count: int
    examples: list[ParseErrorExample]


class ErrorAnalysis(BaseModel):
    """Everything above for one run."""

    model_config = ConfigDict(extra="forbid")

    n: int
    breakdown: list[GroupBreakdown]
    confusion: list[ConfusionMatrix]
    hidden_errors: list[HiddenError]
    parse_errors: list[ParseErrorClassSummary]


def _breakdown(scorer: VarmScorer, kind: str, group: str, index: np.ndarray) -> GroupBreakdown:
    scores = scorer.scores(index)
    return GroupBreakdown(
        kind=kind, group=group, n=len(index), parse_rate=scores.parse_rate, jrem=scores.jrem,
        mismatch=scores.mismatch, shapley=scores.shapley,
    )  # fmt: skip


def confusion_matrices(scorer: VarmScorer) -> list[ConfusionMatrix]:
    """Reference × prediction counts for the five discrete fields."""
    columns = scorer.columns()
    matrices = []
    for field in DISCRETE_FIELDS:
        labels = list(VOCABULARY[field])
        ref, pred = columns[f"ref_{field}"], columns[f"pred_{field}"]
        present = ref >= 0
        counts = np.zeros((len(labels), len(labels) + 1), dtype=int)
        np.add.at(counts, (ref[present], np.where(pred[present] < 0, len(labels), pred[present])), 1)
        matrices.append(
            ConfusionMatrix(field=field, labels=labels, predicted=[*labels, UNPARSED], counts=counts.tolist())
        )
    return matrices


def analyse_errors(
    references: Sequence[VarmReference], items: Sequence[ItemScore], scorer: VarmScorer, examples: int = 3
) -> ErrorAnalysis:
    """The error analysis of one run (``scorer`` holds the same items; see the module docstring)."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for k, reference in enumerate(references):
        if reference.category is not None:
            groups[("category", reference.category)].append(k)
        for tag in reference.tags:
            groups[("tag", tag)].append(k)
    breakdown = [
        _breakdown(scorer, kind, group, np.array(positions)) for (kind, group), positions in sorted(groups.items())
    ]
    hidden = []
    for item in items:
        label_ok, category_ok = item.correct[FIELDS.index("label")], item.correct[FIELDS.index("category")]
        if item.j == 0 and item.status == "ok" and (label_ok or category_ok):
            failing = [f for f, ok in zip(FIELDS, item.correct, strict=True) if ok is False]
            hidden.append(
                HiddenError(
                    id=item.id, label_correct=bool(label_ok), category_correct=bool(category_ok), failing_fields=failing
                )
            )
    by_class: dict[str, list[ItemScore]] = defaultdict(list)
    for item in items:
        if item.error_class is not None:
            by_class[item.error_class].append(item)
    counts = Counter({name: len(found) for name, found in by_class.items()})
    parse_errors = [
        ParseErrorClassSummary(
            error_class=name,
            count=counts[name],
            examples=[
                ParseErrorExample(id=i.id, detail=i.detail, output=_excerpt(i.output, tail=name == TRUNCATED))
                for i in by_class[name][:examples]
            ],
        )
        for name in ERROR_CLASSES
        if counts[name]
    ]
    return ErrorAnalysis(
        n=len(items), breakdown=breakdown, confusion=confusion_matrices(scorer), hidden_errors=hidden,
        parse_errors=parse_errors,
    )  # fmt: skip
