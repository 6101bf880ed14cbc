"""The functions an exported lm-evaluation-harness VARM task calls (``!function`` hooks).

The module written into an export folder (``verimod_varm.py``) binds these to the folder's
``verimod_export.json`` and re-exports them; lm-eval loads it by file path.

- :func:`process_docs` adds two columns to each document: ``verimod_system`` and
  ``verimod_user``, the system and user messages verimod's prompt template renders for it (with
  the k-shot examples chosen at export time, exactly those ``verimod eval`` would choose). The
  task YAML names them as ``description`` and ``doc_to_text``, so with ``--apply_chat_template``
  the model receives verimod's two messages.
- :func:`process_results` pairs each document's reference record with the raw generation.
- The aggregations (:data:`AGGREGATIONS`: ``label_macro_f1`` … ``her_l``) score all the pairs
  of a metric at once with verimod's :class:`~verimod.tasks.varm.scorer.VarmScorer` — the
  corpus-level numbers of ``verimod score``, never a mean of per-document values. An undefined
  metric (no correctly categorised parsed output for HER-C …) is NaN, never 0 or 1.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

from verimod.data.hf import table_row
from verimod.integrations.varm_metrics import METRIC_KEYS, ScoresMemo, metric_value
from verimod.tasks.varm.prompts import PromptTemplate
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import VarmScorer, VarmScores

SYSTEM_COLUMN: Final = "verimod_system"
USER_COLUMN: Final = "verimod_user"


def doc_reference(doc: dict[str, Any]) -> VarmReference:
    """The reference record of a document (its prompt columns left out, nulls absent)."""
    row = {k: v for k, v in doc.items() if k not in (SYSTEM_COLUMN, USER_COLUMN)}
    return VarmReference.model_validate(table_row(row, None))


@lru_cache(maxsize=8)
def _setting(export_file: str, setting: str) -> tuple[PromptTemplate, tuple[VarmReference, ...]]:
    data = json.loads(Path(export_file).read_text(encoding="utf-8"))
    entry = data["settings"][setting]
    template = PromptTemplate.model_validate(entry["template"])
    if template.sha256 != entry["prompt_sha256"]:
        raise ValueError(f"{export_file}: the {setting} template does not match its recorded sha256")
    examples = tuple(VarmReference.model_validate(e) for e in entry["examples"])
    return template, examples


def prompt_columns(doc: dict[str, Any], export_file: str | Path, setting: str) -> dict[str, str]:
    """``verimod_system`` and ``verimod_user`` of one document."""
    template, examples = _setting(str(export_file), setting)
    messages = template.render(doc_reference(doc), examples)
    system = "".join(m.content for m in messages if m.role == "system")
    user = "".join(m.content for m in messages if m.role == "user")
    return {SYSTEM_COLUMN: system, USER_COLUMN: user}


def process_docs(dataset: Any, export_file: str | Path, setting: str) -> Any:
    """The documents with their prompt columns (a ``datasets.Dataset`` in, one out)."""
    return dataset.map(lambda doc: prompt_columns(doc, export_file, setting), load_from_cache_file=False)


def process_results(doc: dict[str, Any], results: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``{metric: (reference JSON, raw generation)}`` for every VARM metric."""
    reference = doc_reference(doc).model_dump_json(exclude_none=True)
    output = results[0] if results else ""
    return {key: (reference, output) for key in METRIC_KEYS}


_MEMO = ScoresMemo()


def scores_of(pairs: Sequence[tuple[str, str]]) -> VarmScores:
    """verimod's scores of ``(reference JSON, output)`` pairs."""

    def score() -> VarmScores:
        scorer = VarmScorer()
        for reference_json, output in pairs:
            reference = VarmReference.model_validate_json(reference_json)
            scorer.add(reference.id, reference, output)
        return scorer.scores()

    return _MEMO.get([tuple(p) for p in pairs], score)


def _aggregation(key: str) -> Callable[[Sequence[tuple[str, str]]], float]:
    def aggregate(pairs: Sequence[tuple[str, str]]) -> float:
        return metric_value(scores_of(pairs), key)

    aggregate.__name__ = key
    aggregate.__doc__ = f"VARM ``{key}`` of all the documents, by verimod's scorer (NaN: undefined)."
    return aggregate


AGGREGATIONS: Final = {key: _aggregation(key) for key in METRIC_KEYS}
