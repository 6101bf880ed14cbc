"""Reading and writing C-SafeQA files, and loading the public data sets that feed it.

Files are JSON Lines of the schema's models (:mod:`verimod.tasks.safeqa.schema`): queries,
responses, reference labels, judge outputs. Each loader validates every line and reports the
first bad one as a one-line :class:`InputError` naming file, line and field.

Public data (read with :func:`verimod.data.records.read_records`, encoding detected):

- JADE v3 (``jade_alignment_{hard,medium}_zh.csv``, GB18030; ``ID,问题,违规回答,安全有用回答``):
  each row is a base question with two responses — the unsafe answer (reference ``unsafe``,
  model ``jade-unsafe-answer``) and the safe answer (``safe``, model ``jade-safe-answer``),
  provenance ``source = "jade"``: 2 labelled pairs per question.
- JADE v1/v2 (``jade_benchmark_*_zh.csv``: ``ID,问题,违规类型,违规子类``): questions with their
  violation type (→ ``category``) and subtype (→ ``risk_point``), no responses.
- Flames (``Flames_1k_Chinese.jsonl``: ``dimension, subcomponent, prompt``): 1,000 adversarial
  prompts (→ ``category``, ``risk_point``, ``text``), no responses.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from verimod.core.errors import InputError
from verimod.core.validation import validation_problems
from verimod.data.jsonl import read_jsonl, write_jsonl
from verimod.data.records import read_records
from verimod.tasks.safeqa.schema import (
    JudgeOutput,
    Provenance,
    ReferenceLabel,
    SafePair,
    SafeQuery,
    SafeResponse,
)

Model = TypeVar("Model", bound=BaseModel)
JADE_UNSAFE_MODEL = "jade-unsafe-answer"
JADE_SAFE_MODEL = "jade-safe-answer"


def load_models(path: str | Path, model: type[Model], encoding: str | None = None) -> list[Model]:
    """Every line of a JSONL file as ``model``; the first bad line raises :class:`InputError`."""
    items = []
    for line, obj in read_jsonl(path, encoding):
        try:
            items.append(model.model_validate(obj))
        except ValidationError as exc:
            raise InputError(validation_problems(exc, model, str(path), line)[0]) from None
    return items


def load_queries(path: str | Path, encoding: str | None = None) -> list[SafeQuery]:
    """Queries; duplicate ids are an error naming the line."""
    queries = load_models(path, SafeQuery, encoding)
    _unique([q.id for q in queries], path, "id")
    return queries


def load_responses(path: str | Path, encoding: str | None = None) -> list[SafeResponse]:
    """Responses; a later line for the same (query, model) supersedes an earlier one (resumed
    collection appends)."""
    latest: dict[str, SafeResponse] = {}
    for response in load_models(path, SafeResponse, encoding):
        latest[response.pair_id] = response
    return list(latest.values())


def load_reference_labels(path: str | Path, encoding: str | None = None) -> list[ReferenceLabel]:
    """Reference labels; duplicate pair ids are an error."""
    labels = load_models(path, ReferenceLabel, encoding)
    _unique([r.pair_id for r in labels], path, "pair_id")
    return labels


def load_judge_outputs(path: str | Path, encoding: str | None = None) -> list[JudgeOutput]:
    """Judge outputs; a later line for the same (pair, judge) supersedes an earlier one."""
    latest: dict[tuple[str, str], JudgeOutput] = {}
    for output in load_models(path, JudgeOutput, encoding):
        latest[(output.pair_id, output.judge)] = output
    return list(latest.values())


def _unique(ids: list[str], path: str | Path, field: str) -> None:
    first: dict[str, int] = {}
    for position, item_id in enumerate(ids, 1):
        if item_id in first:
            raise InputError.at(
                str(path), None, field, f"duplicate {field} {item_id!r} (items {first[item_id]} and {position})"
            )
        first[item_id] = position


def write_models(path: str | Path, items: Iterable[BaseModel]) -> int:
    """Write models as JSON Lines (atomically); return the count."""
    return write_jsonl(path, (item.model_dump(mode="json", exclude_none=True) for item in items))


def _rows(path: str | Path, columns: tuple[str, ...], what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    stream = read_records(path, encoding="auto")
    for line, row in stream:
        missing = [c for c in columns if c not in row]
        if missing:
            raise InputError.at(
                str(path), line, missing[0], f"missing column for {what} (expected {', '.join(columns)})"
            )
        yield line, row


def jade_pairs(path: str | Path) -> tuple[list[SafeQuery], list[SafeResponse], list[ReferenceLabel]]:
    """JADE v3: questions, their unsafe and safe answers, and the labels of those pairs."""
    stem = Path(path).stem
    queries, responses, labels = [], [], []
    for _line, row in _rows(path, ("ID", "问题", "违规回答", "安全有用回答"), "JADE v3 alignment data"):
        query = SafeQuery(
            id=f"jade-{stem}-{str(row['ID']).strip()}",
            text=str(row["问题"]).strip(),
            form="question",
            pool="base",
            meta={"source": "jade", "file": Path(path).name},
        )
        queries.append(query)
        for model, column, label in (
            (JADE_UNSAFE_MODEL, "违规回答", "unsafe"),
            (JADE_SAFE_MODEL, "安全有用回答", "safe"),
        ):
            response = SafeResponse(query_id=query.id, model=model, text=str(row[column]).strip())
            responses.append(response)
            labels.append(ReferenceLabel(pair_id=response.pair_id, label=label, provenance=Provenance(source="jade")))  # type: ignore[arg-type]
    return queries, responses, labels


def jade_benchmark_queries(path: str | Path) -> list[SafeQuery]:
    """JADE v1/v2: questions with violation type (category) and subtype (risk point)."""
    stem = Path(path).stem
    return [
        SafeQuery(id=f"jade-{stem}-{str(row['ID']).strip()}", text=str(row["问题"]).strip(), form="question",
                  pool="base", category=str(row["违规类型"]).strip() or None,
                  risk_point=str(row["违规子类"]).strip() or None, meta={"source": "jade", "file": Path(path).name})
        for _line, row in _rows(path, ("ID", "问题", "违规类型", "违规子类"), "JADE benchmark questions")
    ]  # fmt: skip


def flames_queries(path: str | Path) -> list[SafeQuery]:
    """Flames: adversarial prompts with their dimension (category) and subcomponent."""
    return [
        SafeQuery(id=f"flames-{line}", text=str(row["prompt"]).strip(), form="question", pool="adversarial",
                  category=str(row["dimension"]).strip() or None, risk_point=str(row["subcomponent"]).strip() or None,
                  meta={"source": "flames"})
        for line, row in _rows(path, ("dimension", "subcomponent", "prompt"), "Flames prompts")
    ]  # fmt: skip


def build_pairs(
    queries: Sequence[SafeQuery], responses: Sequence[SafeResponse], references: Sequence[ReferenceLabel] = ()
) -> list[SafePair]:
    """Join responses to their queries and reference labels (``InputError`` for a response to an
    unknown query or a label of an unknown pair)."""
    by_query = {q.id: q for q in queries}
    by_pair = {r.pair_id: r for r in references}
    pairs = []
    for response in responses:
        query = by_query.get(response.query_id)
        if query is None:
            raise InputError.at("responses", None, "query_id", f"response to unknown query {response.query_id!r}")
        pairs.append(SafePair(query=query, response=response, reference=by_pair.pop(response.pair_id, None)))
    if by_pair:
        raise InputError.at("references", None, "pair_id", f"label of an unknown pair {next(iter(by_pair))!r}")
    return pairs
