"""Predicting toxic reasoning for sub-threads through the evaluation engine.

Each sub-thread is one request: the system prompt (``resources/toxirex/prompt.json``, English
or Chinese, with the thread-scope JSON Schema of
:func:`~verimod.tasks.toxirex.schema.toxic_reasoning_json_schema` inlined) and the sub-thread
rendered as annotators saw it (:func:`~verimod.tasks.toxirex.render.render_subthread`, no
comment marked). The same schema goes to the backend as structured output
(:class:`~verimod.models.base.StructuredOutput`): OpenAI-compatible servers get
``response_format = json_schema``, the gguf backend a grammar; backends without constrained
decoding just read the prompt. The model returns one entry per toxic or counter-narrative
comment.

Outputs, both resumable:

- the *raw log* (``<out>.raw.jsonl`` unless given): one line per finished request —
  ``thread_id``, ``model``, ``text`` (or ``error`` when the request failed after the engine's
  retries), ``finish_reason``. A second start on the same log asks only the threads without an
  answer from this model, so failed requests are retried;
- the *predictions* (``out``): rebuilt from the raw log after every start, one
  :class:`~verimod.tasks.toxirex.schema.PredictionRecord` per comment of every sub-thread —
  the parsed reasoning, or the failure class (``invalid_json``, ``schema_violation``,
  ``stopping_violation``, ``missing``; ``request_failed`` when the request itself failed).
  Nothing is dropped: every comment of the input has exactly one line.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, EngineStats, Outcome, run_requests
from verimod.core.resumable import AppendLog, finished_keys
from verimod.data.jsonl import read_jsonl
from verimod.models.base import GenerationParams, ModelBackend, ModelRequest, StructuredOutput
from verimod.resources import resource_path
from verimod.tasks.toxirex.io import write_records
from verimod.tasks.toxirex.parse import PARSER_VERSION, comment_predictions, parse_thread_output
from verimod.tasks.toxirex.render import Language, subthread_messages
from verimod.tasks.toxirex.schema import PredictionRecord, toxic_reasoning_json_schema
from verimod.tasks.toxirex.subthreads import SubThread

Absent = Literal["not_toxic", "invalid"]


@cache
def _prompts() -> dict[str, Any]:
    result: dict[str, Any] = json.loads(resource_path("toxirex/prompt.json").read_text(encoding="utf-8"))
    return result


def prompt_version() -> str:
    """The prompt's version plus the parser's: part of every cache key."""
    return f"{_prompts()['version']}+{PARSER_VERSION}"


def system_prompt(language: Language = "en") -> str:
    """The instructions with the thread-scope JSON Schema inlined."""
    template: str = _prompts()["system"][language]
    schema = json.dumps(toxic_reasoning_json_schema("thread"), ensure_ascii=False, separators=(",", ":"))
    return template.replace("{schema}", schema)


def prediction_request(
    thread: SubThread, language: Language = "en", params: GenerationParams | None = None
) -> ModelRequest:
    """The request for one sub-thread (see the module docstring); ``params`` gain the schema."""
    params = params or GenerationParams(max_tokens=2048)
    structured = StructuredOutput(json_schema=toxic_reasoning_json_schema("thread"))
    return ModelRequest(
        sample_id=thread.thread_id,
        messages=tuple(subthread_messages(thread, None, system=system_prompt(language), language=language)),
        params=params.model_copy(update={"structured": structured}),
    )


def raw_log_path(out: str | Path) -> Path:
    """The default raw log beside a prediction file: ``preds.jsonl`` → ``preds.raw.jsonl``."""
    out = Path(out)
    return out.with_name(f"{out.stem}.raw{out.suffix or '.jsonl'}")


@dataclass(frozen=True)
class PredictionSummary:
    """What one start did and what the prediction file now holds."""

    stats: EngineStats
    n_threads: int
    n_comments: int
    outcomes: dict[str, int]  # "ok" or the error class → comments


def predictions_from_log(
    threads: Sequence[SubThread],
    raw_log: str | Path,
    model: str,
    *,
    absent: Absent = "not_toxic",
    allow_unreached: bool = False,
) -> list[PredictionRecord]:
    """One record per comment of ``threads`` from the log's answers of ``model`` (the last
    answer of a thread wins; a thread with only failed requests → ``request_failed``)."""
    answers: dict[str, dict[str, Any]] = {}
    for _line, row in read_jsonl(raw_log) if Path(raw_log).exists() else ():
        if row.get("model") != model:
            continue
        thread_id = str(row.get("thread_id"))
        if not row.get("error") or thread_id not in answers or answers[thread_id].get("error"):
            answers[thread_id] = row
    records: list[PredictionRecord] = []
    for thread in threads:
        answer = answers.get(thread.thread_id)
        common = {"threadId": thread.thread_id, "model": model, "parserVersion": PARSER_VERSION}
        if answer is None or answer.get("error"):
            failed = {**common, "errorClass": "request_failed"}
            failed["error"] = "never asked" if answer is None else f"request failed: {answer['error']}"
            records.extend(PredictionRecord.model_validate({**failed, "commentId": c}) for c in thread.comment_ids)
            continue
        result = parse_thread_output(str(answer.get("text") or ""), len(thread), allow_unreached=allow_unreached)
        records.extend(comment_predictions(result, thread.comment_ids, thread.thread_id, absent=absent, model=model))
    return records


async def predict_subthreads(
    threads: Sequence[SubThread],
    backend: ModelBackend,
    out: str | Path,
    *,
    raw_log: str | Path | None = None,
    language: Language = "en",
    params: GenerationParams | None = None,
    engine: EngineConfig | None = None,
    cache: ResponseCache | None = None,
    absent: Absent = "not_toxic",
    allow_unreached: bool = False,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> PredictionSummary:
    """Ask ``backend`` every sub-thread without an answer in the raw log, then rewrite ``out``."""
    model = backend.spec
    log_path = Path(raw_log) if raw_log is not None else raw_log_path(out)
    done = finished_keys(log_path, lambda row: f"{row.get('thread_id')}::{row.get('model')}")
    todo = [t for t in threads if f"{t.thread_id}::{model}" not in done]
    requests = [prediction_request(t, language, params) for t in todo]

    with AppendLog(log_path) as log:

        def record(outcome: Outcome) -> None:
            response = outcome.response
            row: dict[str, Any] = {"thread_id": outcome.request.sample_id, "model": model}
            if response is None:
                row["error"] = str(outcome.error)
            else:
                row |= {"text": response.text or "", "finish_reason": response.finish_reason}
            log.write(row)
            if on_outcome is not None:
                on_outcome(outcome)

        stats = await run_requests(backend, requests, record, engine, cache, f"{prompt_version()}/{language}")
    records = predictions_from_log(threads, log_path, model, absent=absent, allow_unreached=allow_unreached)
    write_records(out, records)
    outcomes = Counter(r.error_class or "ok" for r in records)
    return PredictionSummary(stats, len(threads), len(records), dict(sorted(outcomes.items())))
