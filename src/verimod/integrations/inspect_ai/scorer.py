"""The VARM scorer and metrics for inspect_ai, computed by verimod's own parser and scorer.

- :func:`varm_scorer` parses each sample's completion with verimod's parser and scores it
  against the reference record the sample carries in ``metadata["reference"]``. The per-sample
  value is ``{"parse", "format", "j"}`` (0/1), the answer is the raw completion, and the
  metadata hold the parsed record, the per-field correctness, T-F1 and the epoch.
- The metrics are corpus-level, exactly as ``verimod score`` computes them: each one re-scores
  the scored samples with :class:`~verimod.tasks.varm.scorer.VarmScorer` (from the references
  and raw completions, never from per-sample means) and reports one key of
  :class:`~verimod.tasks.varm.scorer.VarmScores`: the five macro-F1s, T-F1, Parse, Format,
  JREM, HER-C and HER-L, fractions in [0, 1]. A metric that is undefined (HER-C with no
  correctly categorised parsed output; a field no reference carries) is NaN, never 0 or 1.
- :func:`first_epoch` is the tasks' epoch reducer: with ``--epochs N`` a sample is scored on
  its first epoch's completion, as verimod scores repeat 0; the others stay in the log.

Samples that end in an error never reach an inspect scorer, so inspect's metrics are over the
samples it scored (inspect reports the errors apart); ``verimod import inspect LOG`` scores
every sample, an errored one as a model error, as ``verimod eval`` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    ScoreReducer,
    Target,
    metric,
    score_reducer,
    scorer,
)
from inspect_ai.solver import TaskState

from verimod.integrations.varm_metrics import ScoresMemo, metric_value
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import VarmScorer, VarmScores


def sample_reference(metadata: dict[str, Any] | None) -> VarmReference:
    """The reference record a VARM sample carries (``metadata["reference"]``)."""
    if not metadata or "reference" not in metadata:
        raise ValueError("a VARM sample needs its reference record in metadata['reference']")
    return VarmReference.model_validate(metadata["reference"])


_MEMO = ScoresMemo()


def varm_scores(sample_scores: Sequence[SampleScore]) -> VarmScores:
    """verimod's scores of a list of inspect sample scores (references from the sample
    metadata, outputs from the score answers)."""

    def score() -> VarmScores:
        scorer = VarmScorer()
        for sample_score in sample_scores:
            reference = sample_reference(sample_score.sample_metadata)
            scorer.add(reference.id, reference, sample_score.score.answer)
        return scorer.scores()

    return _MEMO.get(list(sample_scores), score)


def _metric_of(key: str) -> Callable[[], Metric]:
    def compute(sample_scores: list[SampleScore]) -> float:
        return metric_value(varm_scores(sample_scores), key)

    def factory() -> Metric:
        return compute  # type: ignore[return-value]  # a MetricProtocol: list[SampleScore] -> Value

    factory.__name__ = key
    factory.__qualname__ = key
    factory.__doc__ = f"VARM ``{key}`` over the scored samples, computed by verimod's scorer (NaN: undefined)."
    return metric(factory)


label_macro_f1 = _metric_of("label_macro_f1")
category_macro_f1 = _metric_of("category_macro_f1")
target_char_f1 = _metric_of("target_char_f1")
target_type_macro_f1 = _metric_of("target_type_macro_f1")
explicitness_macro_f1 = _metric_of("explicitness_macro_f1")
stance_macro_f1 = _metric_of("stance_macro_f1")
parse_rate = _metric_of("parse_rate")
format_rate = _metric_of("format_rate")
jrem = _metric_of("jrem")
her_c = _metric_of("her_c")
her_l = _metric_of("her_l")

VARM_METRICS: Final = (
    label_macro_f1,
    category_macro_f1,
    target_char_f1,
    target_type_macro_f1,
    explicitness_macro_f1,
    stance_macro_f1,
    parse_rate,
    format_rate,
    jrem,
    her_c,
    her_l,
)


@scorer(metrics=[factory() for factory in VARM_METRICS])
def varm_scorer() -> Scorer:
    """Parse the completion into a VARM record and score it against the sample's reference."""

    async def score(state: TaskState, target: Target) -> Score:
        reference = sample_reference(state.metadata)
        output = state.output.completion
        item = VarmScorer().add(reference.id, reference, output)
        record = None if item.values is None else dict(zip(FIELDS, item.values, strict=True))
        explanation = (
            f"{item.error_class}: {item.detail or ''}".strip()
            if record is None
            else "; ".join(f"{field}={value}" for field, value in record.items())
        )
        return Score(
            value={"parse": int(item.status == "ok"), "format": int(item.format_ok), "j": item.j},
            answer=output,
            explanation=explanation,
            metadata={
                "epoch": state.epoch,
                "status": item.status,
                "error_class": item.error_class,
                "record": record,
                "correct": dict(zip(FIELDS, item.correct, strict=True)),
                "target_char_f1": item.target_char_f1,
            },
        )

    return score


@score_reducer
def first_epoch() -> ScoreReducer:
    """The score of a sample's first epoch (verimod scores repeat 0)."""

    def reduce(scores: list[Score]) -> Score:
        return min(scores, key=lambda s: (s.metadata or {}).get("epoch", math.inf))

    return reduce
