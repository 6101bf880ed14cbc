"""Which (gold, prediction) items a ToxiREX metric counts: error propagation and annotation modes.

Every annotator may have had another implication in mind, and the annotation stops early for
most comments, so a variable's items must be chosen. Two independent choices:

**Error propagation** (``setting``), for variable v and one (annotation, prediction) pair;
"reached" is decided by each side's own answers (:mod:`~verimod.tasks.toxirex.stopping`):

- ``propagated``: items where the annotation *or* the prediction reached v. The side that
  did not is labelled ``<not reached>``, so a missing or extra implication is an error on every
  later variable (a missed implication: gold class vs ``<not reached>``; an extra one:
  ``<not reached>`` is a gold class that the prediction misses).
- ``conditional``: items where *both* reached v.
- ``optimistic``: items where the annotation reached v; the prediction's value for v is used
  even if its own earlier answers stopped it (models that predict every variable at once), as
  if those earlier answers had been right; no value at all is ``<not reached>``.
- ``cond-tokens``: ``conditional`` items whose most relevant token selection
  (:data:`RELEVANT_TOKENS`: ``subjectTokens`` for subject variables, ``otherTokens`` for
  ``other``, ``implTokens`` for category, polarity and temporality) has a Jaccard index ≥ the
  threshold (0.5) between prediction and annotation; other variables have no cond-tokens
  items.

An unparseable or missing prediction is ``<invalid>`` on every variable: wrong wherever it is
counted (propagated, optimistic), never reached (so absent from conditional and cond-tokens);
reports give the number of invalid predictions beside every score.

**Several annotations per comment** (``mode``):

- ``all``: every annotation is an item (a comment with k annotations counts k times);
- ``random``: one annotation per comment drawn uniformly, N times (``numpy.random.default_rng
  (seed)``; one draw matrix of shape N × comments, comments in id order, annotators in name
  order, shared by all variables); the metric's median over the draws is reported;
- ``max``: per comment the annotation most similar to the prediction on the variables ``on``:
  similarity = Σ_v s_v with s_v = 1 when neither side reached v, 0 when one did, else 1/0 for
  equal/unequal labels, the Jaccard index for token and multi-label variables (1 when both
  are empty), exact match of normalised text for free text; ties go to the first annotator;
- ``majority``: per comment one gold label per variable, the value given by more than half of
  the comment's annotators, "not reached" counting as a value (the paper's Table 10, "labels
  obtained by majority vote amongst annotators"). A multi-label value is one vote (the whole
  set); free text is compared normalised. Token selections: when more than half reached the
  variable, the tokens selected by more than half of all annotators. A variable without such
  a majority is *undecided* for that comment: the comment is left out of that variable's items
  (counted apart as ``n_no_majority``), never guessed.

Every sample of items (the draws of ``random``; the one list of the other modes) is scored
apart; a sample with no item for a variable gives no score (see
:mod:`~verimod.tasks.toxirex.evaluation`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

import numpy as np

from verimod.tasks.toxirex.evaluation_metrics import TokenUnit, jaccard
from verimod.tasks.toxirex.schema import AnnotationRecord, PredictionRecord, ToxicReasoning
from verimod.tasks.toxirex.stopping import VARIABLE_BY_NAME, reached_from_values, variable_values
from verimod.tasks.toxirex.summaries import normalize_text

Setting = Literal["propagated", "conditional", "optimistic", "cond-tokens"]
SETTINGS: tuple[Setting, ...] = ("propagated", "conditional", "optimistic", "cond-tokens")
Mode = Literal["all", "random", "max", "majority"]
MODES: tuple[Mode, ...] = ("all", "random", "max", "majority")
#: The annotator name of majority-vote items.
MAJORITY = "<majority>"
NOT_REACHED = "<not reached>"
INVALID = "<invalid>"
RELEVANT_TOKENS: dict[str, str] = {
    "specificity": "subjectTokens",
    "subject": "subjectTokens",
    "subjectGroupType": "subjectTokens",
    "other": "otherTokens",
    "implCategory": "implTokens",
    "implPolarity": "implTokens",
    "implTemporality": "implTokens",
}
DEFAULT_MAX_ON: tuple[str, ...] = ("toxicity", "counternarrative", "justInappropriate", "hasImplication", "implTokens")


@dataclass(frozen=True, slots=True)
class Side:
    """One annotation or prediction as flat values, the variables it reached, and validity;
    ``undecided``: the variables a majority-vote side has no majority on."""

    values: Mapping[str, Any]
    reached: frozenset[str]
    invalid: bool = False
    undecided: frozenset[str] = frozenset()

    @classmethod
    def of(cls, reasoning: ToxicReasoning | None) -> Side:
        """The side of a reasoning; None (unparseable or missing prediction) is invalid."""
        if reasoning is None:
            return cls({}, frozenset(), True)
        values = variable_values(reasoning)
        return cls(values, reached_from_values(values))


@dataclass(frozen=True, slots=True)
class CommentItem:
    """One comment: its annotations (annotator order) and the prediction."""

    comment_id: str
    annotations: tuple[tuple[str, Side], ...]
    pred: Side
    pred_reasoning: ToxicReasoning | None
    gold_reasonings: tuple[tuple[str, ToxicReasoning], ...]


@dataclass(frozen=True, slots=True)
class Pair:
    """One item: an annotation and the prediction for the same comment."""

    comment_id: str
    annotator: str
    gold: Side
    pred: Side


def comment_items(
    annotations: Sequence[AnnotationRecord], predictions: Sequence[PredictionRecord]
) -> tuple[list[CommentItem], int]:
    """Annotated comments in id order with their prediction, and how many predictions were missing.

    A comment without a prediction gets an invalid side (``missing``). Predictions of comments
    nobody annotated are ignored.
    """
    by_comment: dict[str, list[AnnotationRecord]] = {}
    for a in annotations:
        by_comment.setdefault(a.comment_id, []).append(a)
    preds = {p.comment_id: p for p in predictions}
    items = []
    missing = 0
    for comment_id in sorted(by_comment):
        golds = sorted(by_comment[comment_id], key=lambda a: a.annotator)
        record = preds.get(comment_id)
        missing += record is None
        reasoning = record.reasoning if record is not None else None
        items.append(
            CommentItem(
                comment_id,
                tuple((a.annotator, Side.of(a.reasoning)) for a in golds),
                Side.of(reasoning),
                reasoning,
                tuple((a.annotator, a.reasoning) for a in golds),
            )
        )
    return items, missing


def all_pairs(items: Sequence[CommentItem]) -> list[Pair]:
    """Mode ``all``: every annotation is an item."""
    return [Pair(i.comment_id, a, gold, i.pred) for i in items for a, gold in i.annotations]


def random_draws(items: Sequence[CommentItem], n_draws: int, seed: int) -> list[list[Pair]]:
    """Mode ``random``: ``n_draws`` samples of one annotation per comment (seeded)."""
    if n_draws < 1:
        raise ValueError("n_draws must be ≥ 1")
    if not items:
        return [[] for _ in range(n_draws)]
    sizes = np.array([len(i.annotations) for i in items])
    choices = np.random.default_rng(seed).integers(0, sizes, size=(n_draws, len(items)))
    return [
        [Pair(i.comment_id, *i.annotations[int(k)], i.pred) for i, k in zip(items, row, strict=True)] for row in choices
    ]


def _vote(side: Side, name: str, kind: str) -> Any:
    """One annotator's vote on a variable (hashable): its label, or ``<not reached>``."""
    if name not in side.reached:
        return NOT_REACHED
    value = side.values[name]
    if kind == "text":
        return normalize_text(value) if value is not None else NOT_REACHED
    if kind == "tokens":
        return tuple(value or ())
    return label(value, kind)


def majority_side(sides: Sequence[Side]) -> Side:
    """The majority-vote gold side of one comment's annotations (module docstring)."""
    values: dict[str, Any] = dict.fromkeys(VARIABLE_BY_NAME)
    reached: set[str] = set()
    undecided: set[str] = set()
    half = len(sides) / 2
    for name, variable in VARIABLE_BY_NAME.items():
        votes = [_vote(side, name, variable.kind) for side in sides]
        if variable.kind == "tokens":
            reachers = [side for side, vote in zip(sides, votes, strict=True) if vote != NOT_REACHED]
            if len(reachers) == half:
                undecided.add(name)  # as many reached it as did not
            if len(reachers) <= half:
                continue
            counts: dict[Any, int] = {}
            for side in reachers:
                for token in dict.fromkeys(side.values[name] or ()):
                    counts[token] = counts.get(token, 0) + 1
            values[name] = tuple(t for t, c in counts.items() if c > half)
            reached.add(name)
            continue
        winner = next((v for v in dict.fromkeys(votes) if votes.count(v) > half), None)
        if winner is None:
            undecided.add(name)
        elif winner != NOT_REACHED:
            source = sides[votes.index(winner)]
            values[name] = source.values[name]
            reached.add(name)
    return Side(values, frozenset(reached), False, frozenset(undecided))


def majority_pairs(items: Sequence[CommentItem]) -> list[Pair]:
    """Mode ``majority``: per comment one item, the majority-vote annotation (module docstring)."""
    return [Pair(i.comment_id, MAJORITY, majority_side([gold for _, gold in i.annotations]), i.pred) for i in items]


def _value_similarity(name: str, gold: Side, pred: Side) -> float:
    g_in, p_in = name in gold.reached, name in pred.reached
    if not g_in and not p_in:
        return 1.0
    if g_in != p_in:
        return 0.0
    g, p = gold.values[name], pred.values[name]
    kind = VARIABLE_BY_NAME[name].kind
    if kind in ("tokens", "multilabel"):
        score = jaccard([str(x) for x in g or ()], [str(x) for x in p or ()])
        return 1.0 if score is None else score
    if kind == "text":
        return float(normalize_text(g) == normalize_text(p))
    return float(g == p)


def similarity(gold: Side, pred: Side, on: Sequence[str]) -> float:
    """Similarity of an annotation to a prediction on the variables ``on`` (0 for an invalid prediction)."""
    if pred.invalid:
        return 0.0
    return sum(_value_similarity(name, gold, pred) for name in on)


def max_pairs(items: Sequence[CommentItem], on: Sequence[str] = DEFAULT_MAX_ON) -> list[Pair]:
    """Mode ``max``: per comment the annotation most similar to the prediction (first on ties)."""
    unknown = [v for v in on if v not in VARIABLE_BY_NAME]
    if unknown:
        raise ValueError(f"unknown variable(s) for max: {', '.join(unknown)}")
    out = []
    for i in items:
        scores = [similarity(gold, i.pred, on) for _, gold in i.annotations]
        best = int(np.argmax(scores))  # first maximum
        out.append(Pair(i.comment_id, *i.annotations[best], i.pred))
    return out


def label(value: Any, kind: str) -> Any:
    """A metric label: "yes"/"no" for booleans, enum values as strings, frozensets for multi-label;
    None (a reached variable left empty) is ``<not reached>``."""
    if value is None:
        return _sentinel(NOT_REACHED, kind)
    if kind == "multilabel":
        return frozenset(label(v, "categorical") for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value.value if isinstance(value, Enum) else str(value)


def _sentinel(text: str, kind: str) -> Any:
    return frozenset({text}) if kind == "multilabel" else text


def token_agreement(pair: Pair, tokens_variable: str, unit: TokenUnit = "token") -> float | None:
    """Jaccard index of a pair's selections for a token variable (None unless both reached it and
    at least one selected something)."""
    if tokens_variable not in pair.gold.reached or tokens_variable not in pair.pred.reached:
        return None
    return jaccard(pair.gold.values[tokens_variable], pair.pred.values[tokens_variable], unit)


def setting_labels(
    pairs: Sequence[Pair],
    variable: str,
    setting: Setting,
    token_threshold: float = 0.5,
    unit: TokenUnit = "token",
) -> tuple[list[Any], list[Any], int]:
    """``(gold labels, predicted labels, invalid count)`` of ``variable`` under ``setting``
    (items whose gold side is undecided on ``variable`` are left out)."""
    kind = VARIABLE_BY_NAME[variable].kind
    gold_labels: list[Any] = []
    pred_labels: list[Any] = []
    invalid = 0
    tokens_variable = RELEVANT_TOKENS.get(variable)
    if setting == "cond-tokens" and tokens_variable is None:
        return gold_labels, pred_labels, 0
    for pair in pairs:
        if variable in pair.gold.undecided:
            continue
        g_in = variable in pair.gold.reached
        p_in = variable in pair.pred.reached
        if setting in ("conditional", "cond-tokens"):
            if not (g_in and p_in):
                continue
            if setting == "cond-tokens":
                assert tokens_variable is not None
                score = token_agreement(pair, tokens_variable, unit)
                if score is None or score < token_threshold:
                    continue
            gold_labels.append(label(pair.gold.values[variable], kind))
            pred_labels.append(label(pair.pred.values[variable], kind))
            continue
        if setting == "propagated" and not (g_in or p_in):
            continue
        if setting == "optimistic" and not g_in:
            continue
        gold_labels.append(label(pair.gold.values[variable], kind) if g_in else _sentinel(NOT_REACHED, kind))
        if pair.pred.invalid:
            invalid += 1
            pred_labels.append(_sentinel(INVALID, kind))
            continue
        # optimistic: the prediction's value even beyond its own stop; propagated: only if reached
        value = pair.pred.values[variable] if setting == "optimistic" or p_in else None
        pred_labels.append(label(value, kind))
    return gold_labels, pred_labels, invalid
