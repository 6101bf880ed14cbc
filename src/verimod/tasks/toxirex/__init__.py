"""ToxiREX: toxic reasoning in conversational context (Schouten et al.).

A comment is annotated — by people or by a model — with the toxic reasoning schema: four
first questions (toxicity, counternarrative, justInappropriate, hasImplication) decide
whether it is annotated in full; then the implication as free text, its proposition
composition (category, polarity, temporality, specificity, subject, optional other, topic and
token spans) and the stakeholders' attitudes (author belief, desire, intent; general-public
and expert belief).

Modules:

- :mod:`~verimod.tasks.toxirex.schema`: pydantic models and the JSON Schema for structured outputs;
- :mod:`~verimod.tasks.toxirex.stopping`: the stopping logic and the flat variable view;
- :mod:`~verimod.tasks.toxirex.parse`: model output → validated records, with failure classes;
- :mod:`~verimod.tasks.toxirex.mappings`: schema traits ↔ categories of existing taxonomies (data);
- :mod:`~verimod.tasks.toxirex.summaries`: summary sentences (English, Chinese) and their accuracy;
- :mod:`~verimod.tasks.toxirex.evaluation` (with ``evaluation_items``, ``evaluation_metrics``):
  propagated / conditional / optimistic / cond-tokens scoring, all / random / max annotations,
  weighted P/R/F1 vs the Prior baseline, Jaccard, ordinal attitude errors;
- :mod:`~verimod.tasks.toxirex.agreement`: Fleiss' κ per variable, the disagreement sheet;
- :mod:`~verimod.tasks.toxirex.io`: annotation and prediction files;
- ``subthreads`` and ``render``: sub-thread extraction and prompt rendering.
"""

from verimod.tasks.toxirex.evaluation import EvaluationReport, evaluate
from verimod.tasks.toxirex.io import load_annotations, load_predictions, write_records
from verimod.tasks.toxirex.parse import ErrorClass, ParseResult, comment_predictions, parse_thread_output
from verimod.tasks.toxirex.schema import (
    AnnotationRecord,
    PredictionRecord,
    ThreadReasoning,
    ToxicReasoning,
    response_format,
    toxic_reasoning_json_schema,
)

__all__ = [
    "AnnotationRecord",
    "ErrorClass",
    "EvaluationReport",
    "ParseResult",
    "PredictionRecord",
    "ThreadReasoning",
    "ToxicReasoning",
    "comment_predictions",
    "evaluate",
    "load_annotations",
    "load_predictions",
    "parse_thread_output",
    "response_format",
    "toxic_reasoning_json_schema",
    "write_records",
]
