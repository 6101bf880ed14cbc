"""Reading and writing C-SafeQA files, and loading the public data sets that feed it.

Files are JSON Lines of the schema's models (:mod:`verimod.tasks.safeqa.schema`): queries,
responses, reference labels, judge outputs. Each loader validates every line and reports the
first bad one as a one-line :class:`InputError` naming file, line and field.

Public data (read with :func:`verimod.data.records.read_records`, encoding detected):

- JADE v3 (``jade_alignment_{hard,medium}_zh.csv``, GB18030; ``ID,问题,违规回答,安全有用回答``):
  each row is a base question with two responses — the unsafe answer (reference ``unsafe``,
  model ``jade-unsafe-answer``) and the safe answer (``safe``, model ``jade-safe-answer``),
  provenance ``source = "jade"`` and ``source_label`` = that gold label: 2 labelled pairs per
  question. The v3 files carry no category: :func:`attach_jade_categories` joins them from the
  v1/v2 files (below) by question text.
- JADE v1/v2 (``jade_benchmark_*_zh.csv``: ``ID,问题,违规类型,违规子类``): questions with their
  violation type (→ ``category``) and subtype (→ ``risk_point``), no responses.
- Flames (``Flames_1k_Chinese.jsonl``: ``dimension, subcomponent, prompt``): 1,000 prompts that are
  adversarial already (→ ``pool = "adversarial"``, ``method`` None, ``category``, ``risk_point``,
  ``text``), no responses. They are valid seeds of further transformations (the new queries
  record ``seed_pool`` / ``seed_source``), see :mod:`verimod.tasks.safeqa.transforms`.

Every imported query's ``form`` comes from its text (:func:`~.transforms.declarative.form_of`:
a question when it ends with ``？`` / ``?`` or 吗 / 呢, else declarative — a third of JADE's
"questions" are statements such as 我需要…方法。), recorded as ``meta["form_rule"]``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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
FORM_RULE = "final punctuation"
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


def _form(text: str) -> Any:
    from verimod.tasks.safeqa.transforms.declarative import form_of

    return form_of(text)


def jade_pairs(path: str | Path) -> tuple[list[SafeQuery], list[SafeResponse], list[ReferenceLabel]]:
    """JADE v3: questions, their unsafe and safe answers, and the gold labels of those pairs."""
    stem = Path(path).stem
    queries, responses, labels = [], [], []
    for _line, row in _rows(path, ("ID", "问题", "违规回答", "安全有用回答"), "JADE v3 alignment data"):
        text = str(row["问题"]).strip()
        query = SafeQuery(
            id=f"jade-{stem}-{str(row['ID']).strip()}",
            text=text,
            form=_form(text),
            pool="base",
            meta={"source": "jade", "file": Path(path).name, "form_rule": FORM_RULE},
        )
        queries.append(query)
        for model, column, label in (
            (JADE_UNSAFE_MODEL, "违规回答", "unsafe"),
            (JADE_SAFE_MODEL, "安全有用回答", "safe"),
        ):
            response = SafeResponse(query_id=query.id, model=model, text=str(row[column]).strip())
            responses.append(response)
            provenance = Provenance(source="jade", source_label=label)  # type: ignore[arg-type]
            labels.append(ReferenceLabel(pair_id=response.pair_id, label=label, provenance=provenance))  # type: ignore[arg-type]
    return queries, responses, labels


def jade_benchmark_queries(path: str | Path) -> list[SafeQuery]:
    """JADE v1/v2: questions with violation type (category) and subtype (risk point)."""
    stem = Path(path).stem
    return [
        SafeQuery(id=f"jade-{stem}-{str(row['ID']).strip()}", text=(text := str(row["问题"]).strip()), form=_form(text),
                  pool="base", category=str(row["违规类型"]).strip() or None,
                  risk_point=str(row["违规子类"]).strip() or None,
                  meta={"source": "jade", "file": Path(path).name, "form_rule": FORM_RULE})
        for _line, row in _rows(path, ("ID", "问题", "违规类型", "违规子类"), "JADE benchmark questions")
    ]  # fmt: skip


def flames_queries(path: str | Path) -> list[SafeQuery]:
    """Flames: adversarial prompts (pool ``adversarial``, no method) with their dimension (category)
    and subcomponent (risk point)."""
    return [
        SafeQuery(id=f"flames-{line}", text=(text := str(row["prompt"]).strip()), form=_form(text), pool="adversarial",
                  category=str(row["dimension"]).strip() or None, risk_point=str(row["subcomponent"]).strip() or None,
                  meta={"source": "flames", "form_rule": FORM_RULE})
        for line, row in _rows(path, ("dimension", "subcomponent", "prompt"), "Flames prompts")
    ]  # fmt: skip


class JoinStats(BaseModel):
    """How a category join went: queries matched, unmatched, and matched with conflicting labels."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    queries: int
    matched: int
    unmatched: int
    conflicts: int = Field(description="matched questions the v1/v2 files label in more than one way")
    files: list[str]


def _join_key(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split())


def attach_jade_categories(
    queries: Sequence[SafeQuery], benchmark_files: Sequence[str | Path]
) -> tuple[list[SafeQuery], JoinStats]:
    """Give queries the category and risk point of the same question in the JADE v1/v2 files.

    Questions match on their text after NFKC and removal of whitespace. A query that already has
    a category keeps it. When the files label one question in several ways (84 questions of the
    public files do), the first label in file order (then row order) is used and every candidate
    is kept in ``meta["jade_join"]["candidates"]``; ``meta["jade_join"]`` also names the file and
    ID the label came from. Returns the queries (new objects) and the join counts.
    """
    index: dict[str, list[tuple[str | None, str | None, str, str]]] = {}
    for path in benchmark_files:
        for item in jade_benchmark_queries(path):
            entry = (item.category, item.risk_point, Path(path).name, item.id)
            index.setdefault(_join_key(item.text), []).append(entry)
    out: list[SafeQuery] = []
    matched = conflicts = 0
    for query in queries:
        found = index.get(_join_key(query.text))
        if not found or query.category is not None:
            out.append(query)
            continue
        matched += 1
        category, risk_point, file, item_id = found[0]
        join: dict[str, Any] = {"file": file, "id": item_id}
        labels = list(dict.fromkeys((c, r) for c, r, _f, _i in found))
        if len(labels) > 1:
            conflicts += 1
            join["candidates"] = [list(label) for label in labels]
        meta = {**(query.meta or {}), "jade_join": join}
        out.append(query.model_copy(update={"category": category, "risk_point": risk_point, "meta": meta}))
    stats = JoinStats(
        queries=len(queries),
        matched=matched,
        unmatched=len(queries) - matched,
        conflicts=conflicts,
        files=[Path(p).name for p in benchmark_files],
    )
    return out, stats


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
