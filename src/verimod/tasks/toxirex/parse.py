"""Validating an LLM's JSON output into the toxic reasoning schema. Nothing is silently dropped.

Input: the raw text a model returned for one rendered sub-thread (a
:class:`~verimod.tasks.toxirex.schema.ThreadReasoning`: ``{"comments": [{"messageNr": 1, ...}]}``)
or for one comment (a :class:`~verimod.tasks.toxirex.schema.ToxicReasoning`).

Extraction (deterministic, recorded in ``ParseResult.extracted``): surrounding whitespace is
ignored; a leading ``<think>…</think>`` block is removed; a text that is one fenced code block
(```` ```json … ``` ````) is unwrapped. Nothing else is searched for: prose around the JSON is
invalid JSON.

Failure classes (:class:`ErrorClass`), each with the JSON path of the field (dotted,
``comments.2.propositionComposition.implPolarity``; None for the whole text) and a message:

- ``invalid_json``: empty output, not JSON, NaN/Infinity, truncated text;
- ``schema_violation``: valid JSON that the schema refuses — wrong top-level type, missing
  or unknown field, a value outside a vocabulary, a duplicate key, a repeated or out-of-range
  ``messageNr``;
- ``stopping_violation``: schema-valid, but a field is filled although an earlier answer
  stopped the annotation, or missing although reached
  (:func:`~verimod.tasks.toxirex.stopping.stopping_violations`); ``allow_unreached=True``
  accepts filled fields beyond a stop (models that predict every variable).

Thread outputs are validated message by message: a bad entry fails only its own message when
its ``messageNr`` can be read; otherwise the failure belongs to the whole thread and every
message without a valid entry is failed with it. :func:`comment_predictions` turns a result
into one :class:`~verimod.tasks.toxirex.schema.PredictionRecord` per comment of the thread:
a valid entry → its reasoning; a failed one → ``errorClass`` (scored invalid, never dropped);
no entry → not toxic (``absent="not_toxic"``: the model annotates only comments it finds
toxic or counter-narrative, as in the paper) or a ``missing`` failure (``absent="invalid"``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import ValidationError

from verimod.core.errors import one_line, shown
from verimod.tasks.toxirex.schema import MessageReasoning, PredictionRecord, ToxicReasoning
from verimod.tasks.toxirex.stopping import stopping_violations

PARSER_VERSION = "toxirex-json/1"
_THINK = re.compile(r"^\s*<think>.*?</think>", re.DOTALL)
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(.*)\n[ \t]*```$", re.DOTALL)


class ErrorClass(StrEnum):
    """Why an output could not be used."""

    INVALID_JSON = "invalid_json"
    SCHEMA_VIOLATION = "schema_violation"
    STOPPING_VIOLATION = "stopping_violation"


@dataclass(frozen=True, slots=True)
class ParseFailure:
    """One problem: its class, the JSON path (None: the whole output) and a one-line message."""

    error_class: ErrorClass
    path: str | None
    message: str
    message_nr: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return one_line(f"{self.error_class.value}: {where}{self.message}")


@dataclass(frozen=True)
class ParseResult:
    """The outcome of parsing one output.

    ``messages``: valid entries by message number (thread scope) or ``{0: reasoning}``
    (comment scope); ``failures``: every problem found; ``extracted``: the text was unwrapped.
    """

    raw: str
    messages: dict[int, ToxicReasoning] = field(default_factory=dict)
    failures: tuple[ParseFailure, ...] = ()
    extracted: bool = False
    parser_version: str = PARSER_VERSION

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return not self.failures

    @property
    def error_class(self) -> ErrorClass | None:
        """The class of the first failure, or None."""
        return self.failures[0].error_class if self.failures else None

    def thread_failures(self) -> tuple[ParseFailure, ...]:
        """Failures not attributable to one message."""
        return tuple(f for f in self.failures if f.message_nr is None)

    def failures_of(self, message_nr: int) -> tuple[ParseFailure, ...]:
        """Failures of one message."""
        return tuple(f for f in self.failures if f.message_nr == message_nr)


def _extract(raw: str) -> tuple[str, bool]:
    text = raw.strip()
    extracted = False
    think = _THINK.match(text)
    if think:
        text, extracted = text[think.end() :].strip(), True
    fence = _FENCE.match(text)
    if fence:
        text, extracted = fence.group(1).strip(), True
    return text, extracted


class _DuplicateKeyError(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _decode(text: str) -> tuple[Any, ParseFailure | None]:
    if not text:
        return None, ParseFailure(ErrorClass.INVALID_JSON, None, "empty output")
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_reject_constant), None
    except _DuplicateKeyError as exc:
        return None, ParseFailure(ErrorClass.SCHEMA_VIOLATION, None, f"duplicate key {shown(str(exc))}")
    except json.JSONDecodeError as exc:
        message = f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        return None, ParseFailure(ErrorClass.INVALID_JSON, None, message)
    except (ValueError, RecursionError) as exc:
        return None, ParseFailure(ErrorClass.INVALID_JSON, None, f"invalid JSON: {exc}")


def _schema_failures(exc: ValidationError, prefix: str, message_nr: int | None) -> list[ParseFailure]:
    out = []
    for error in exc.errors():
        path = ".".join([prefix, *(str(p) for p in error["loc"])]).strip(".") or None
        kind = error["type"]
        if kind == "missing":
            message = "missing required field"
        elif kind == "extra_forbidden":
            message = "unknown field"
        else:
            message = f"{str(error['msg']).removeprefix('Value error, ')} (got {shown(error.get('input'))})"
        out.append(ParseFailure(ErrorClass.SCHEMA_VIOLATION, path, message, message_nr))
    return out


def _stopping_failures(
    reasoning: ToxicReasoning, prefix: str, message_nr: int | None, allow_unreached: bool
) -> list[ParseFailure]:
    return [
        ParseFailure(ErrorClass.STOPPING_VIOLATION, f"{prefix}.{v.path}".strip("."), v.message, message_nr)
        for v in stopping_violations(reasoning, allow_unreached)
    ]


def parse_comment_output(raw: str, *, allow_unreached: bool = False) -> ParseResult:
    """Parse one :class:`ToxicReasoning` (comment scope); a valid one is ``messages[0]``."""
    text, extracted = _extract(raw)
    obj, failure = _decode(text)
    if failure is not None:
        return ParseResult(raw, failures=(failure,), extracted=extracted)
    if not isinstance(obj, dict):
        failure = ParseFailure(ErrorClass.SCHEMA_VIOLATION, None, f"expected a JSON object, got {shown(obj)}")
        return ParseResult(raw, failures=(failure,), extracted=extracted)
    try:
        reasoning = ToxicReasoning.model_validate(obj)
    except ValidationError as exc:
        return ParseResult(raw, failures=tuple(_schema_failures(exc, "", None)), extracted=extracted)
    failures = _stopping_failures(reasoning, "", None, allow_unreached)
    messages = {} if failures else {0: reasoning}
    return ParseResult(raw, messages, tuple(failures), extracted)


def _message_nr(entry: Any) -> int | None:
    if isinstance(entry, dict):
        nr = entry.get("messageNr", entry.get("message_nr"))
        if isinstance(nr, int) and not isinstance(nr, bool) and nr >= 1:
            return nr
    return None


def parse_thread_output(raw: str, n_messages: int | None = None, *, allow_unreached: bool = False) -> ParseResult:
    """Parse a sub-thread output (see the module docstring); ``n_messages`` bounds ``messageNr``."""
    text, extracted = _extract(raw)
    obj, failure = _decode(text)
    if failure is not None:
        return ParseResult(raw, failures=(failure,), extracted=extracted)
    failures: list[ParseFailure] = []
    if not isinstance(obj, dict):
        failure = ParseFailure(ErrorClass.SCHEMA_VIOLATION, None, f"expected a JSON object, got {shown(obj)}")
        return ParseResult(raw, failures=(failure,), extracted=extracted)
    failures.extend(ParseFailure(ErrorClass.SCHEMA_VIOLATION, key, "unknown field") for key in obj if key != "comments")
    entries = obj.get("comments")
    if not isinstance(entries, list):
        message = "missing required field" if entries is None else f"must be a list, got {shown(entries)}"
        failures.append(ParseFailure(ErrorClass.SCHEMA_VIOLATION, "comments", message))
        return ParseResult(raw, failures=tuple(failures), extracted=extracted)
    messages: dict[int, ToxicReasoning] = {}
    first_index: dict[int, int] = {}
    for i, entry in enumerate(entries):
        prefix = f"comments.{i}"
        nr = _message_nr(entry)
        if nr is not None and nr in first_index:
            message = f"duplicate messageNr {nr} (first at comments.{first_index[nr]})"
            failures.append(ParseFailure(ErrorClass.SCHEMA_VIOLATION, f"{prefix}.messageNr", message, nr))
            messages.pop(nr, None)
            continue
        if nr is not None:
            first_index[nr] = i
        if nr is not None and n_messages is not None and nr > n_messages:
            message = f"messageNr {nr} is beyond the {n_messages} messages of the thread"
            failures.append(ParseFailure(ErrorClass.SCHEMA_VIOLATION, f"{prefix}.messageNr", message))
            continue
        try:
            reasoning = MessageReasoning.model_validate(entry)
        except ValidationError as exc:
            failures.extend(_schema_failures(exc, prefix, nr))
            continue
        found = _stopping_failures(reasoning, prefix, reasoning.message_nr, allow_unreached)
        failures.extend(found)
        if not found:
            messages[reasoning.message_nr] = ToxicReasoning.model_validate(
                reasoning.model_dump(exclude={"message_nr"}, by_alias=True)
            )
    for nr in {f.message_nr for f in failures if f.message_nr is not None}:
        messages.pop(nr, None)
    return ParseResult(raw, messages, tuple(failures), extracted)


_NOT_TOXIC = ToxicReasoning(toxicity=False, counternarrative=False)


def comment_predictions(
    result: ParseResult,
    comment_ids: Sequence[str],
    thread_id: str | None = None,
    *,
    absent: Literal["not_toxic", "invalid"] = "not_toxic",
    model: str | None = None,
) -> list[PredictionRecord]:
    """One prediction record per comment of the thread (``comment_ids[k]`` is message k + 1)."""
    thread_level = result.thread_failures()
    records = []
    for k, comment_id in enumerate(comment_ids, start=1):
        reasoning = result.messages.get(k)
        own = result.failures_of(k)
        failure: ParseFailure | None = None
        if own:
            failure = own[0]
        elif reasoning is None and thread_level:
            failure = thread_level[0]
        if failure is not None:
            reasoning = None
        elif reasoning is None and absent == "not_toxic":
            reasoning = _NOT_TOXIC
        common = {"threadId": thread_id, "commentId": comment_id, "model": model, "parserVersion": PARSER_VERSION}
        if reasoning is not None:
            records.append(PredictionRecord.model_validate({**common, "reasoning": reasoning}))
        elif failure is not None:
            records.append(
                PredictionRecord.model_validate(
                    {**common, "errorClass": failure.error_class.value, "error": str(failure)}
                )
            )
        else:
            records.append(
                PredictionRecord.model_validate({**common, "errorClass": "missing", "error": "no entry for message"})
            )
    return records
