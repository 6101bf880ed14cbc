"""Reading and writing ToxiREX annotation and prediction files (JSON Lines).

Annotation line (:class:`~verimod.tasks.toxirex.schema.AnnotationRecord`)::

    {"threadId": "zh-01", "commentId": "zh-01-c3", "annotator": "a1", "lang": "zh",
     "reasoning": {"toxicity": true, "counternarrative": false, "justInappropriate": false, ...}}

Prediction line (:class:`~verimod.tasks.toxirex.schema.PredictionRecord`): ``commentId`` and
either ``reasoning`` or ``errorClass`` (+ ``error``), optionally ``threadId``, ``model``,
``parserVersion``.

Every problem is a one-line :class:`~verimod.core.errors.InputError` naming file, line and
field (``reasoning.propositionComposition.implPolarity``): bad JSON, schema violations, a
stopping-logic violation (:mod:`~verimod.tasks.toxirex.stopping`), an annotator annotating the
same comment twice, a comment predicted twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from verimod.core.errors import InputError, shown
from verimod.core.validation import validation_problems
from verimod.data.jsonl import read_jsonl, write_jsonl
from verimod.tasks.toxirex.schema import AnnotationRecord, PredictionRecord, ToxicReasoning
from verimod.tasks.toxirex.stopping import stopping_violations

Record = TypeVar("Record", bound=BaseModel)


def _records(path: str | Path, model: type[Record], encoding: str | None) -> Iterable[tuple[int, Record]]:
    for line, obj in read_jsonl(path, encoding):
        try:
            yield line, model.model_validate(obj)
        except ValidationError as exc:
            raise InputError(validation_problems(exc, model, str(path), line)[0]) from None


def _check_stopping(reasoning: ToxicReasoning, path: str | Path, line: int, allow_unreached: bool) -> None:
    violations = stopping_violations(reasoning, allow_unreached)
    if violations:
        raise InputError.at(str(path), line, f"reasoning.{violations[0].path}", violations[0].message)


def load_annotations(path: str | Path, encoding: str | None = None) -> list[AnnotationRecord]:
    """Every annotation of a JSONL file; the first bad line raises :class:`InputError`."""
    out = []
    seen: dict[tuple[str, str], int] = {}
    for line, record in _records(path, AnnotationRecord, encoding):
        _check_stopping(record.reasoning, path, line, False)
        key = (record.comment_id, record.annotator)
        if key in seen:
            message = (
                f"annotator {shown(record.annotator)} already annotated {shown(record.comment_id)} on line {seen[key]}"
            )
            raise InputError.at(str(path), line, "annotator", message)
        seen[key] = line
        out.append(record)
    if not out:
        raise InputError.at(str(path), None, None, "no annotations (the file is empty)")
    return out


def load_predictions(
    path: str | Path, encoding: str | None = None, allow_unreached: bool = False
) -> list[PredictionRecord]:
    """Every prediction of a JSONL file (``allow_unreached``: models that fill every variable)."""
    out = []
    seen: dict[str, int] = {}
    for line, record in _records(path, PredictionRecord, encoding):
        if record.reasoning is not None:
            _check_stopping(record.reasoning, path, line, allow_unreached)
        if record.comment_id in seen:
            message = f"comment {shown(record.comment_id)} already predicted on line {seen[record.comment_id]}"
            raise InputError.at(str(path), line, "commentId", message)
        seen[record.comment_id] = line
        out.append(record)
    return out


def write_records(path: str | Path, records: Iterable[BaseModel]) -> int:
    """Write annotation or prediction records as JSONL (JSON names, nulls left out); returns the count."""
    return write_jsonl(path, (r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in records))
