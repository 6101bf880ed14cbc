"""Collecting target-model responses and judge verdicts through the evaluation engine.

Both append one JSON line per finished request to their output file as it arrives (flushed:
a killed collection loses at most what was in flight) and, when started again on the same
file, send only what has no answer there yet — requests that ended in an error are retried.
Concurrency, retries, backoff, timeouts and the response cache are the engine's
(:mod:`verimod.core.engine`, :mod:`verimod.core.cache`).

- :func:`collect_responses`: each query is sent as one user message; an answer is a
  :class:`SafeResponse` of the backend's model spec (an empty answer is kept: it counts as a
  safe refusal); a failed call is kept with its ``error`` and no text.
- :func:`judge_pairs`: each pair is sent in the judge format's input shape
  (:mod:`verimod.tasks.safeqa.judges`); the raw answer is normalised by the format into a
  :class:`JudgeOutput` (``invalid`` when unrecognised — counted, never guessed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, EngineStats, Outcome, run_requests
from verimod.core.resumable import AppendLog, finished_keys
from verimod.models.base import ChatMessage, GenerationParams, ModelBackend, ModelRequest
from verimod.tasks.safeqa.schema import JudgeOutput, SafePair, SafeQuery, SafeResponse

PROMPT_VERSION = "safeqa-collect/1"


async def collect_responses(
    queries: Sequence[SafeQuery],
    backend: ModelBackend,
    out: str | Path,
    params: GenerationParams | None = None,
    engine: EngineConfig | None = None,
    cache: ResponseCache | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> EngineStats:
    """Ask ``backend`` every query not yet answered in ``out`` (see the module docstring)."""
    path = Path(out)
    model = backend.spec
    done = finished_keys(path, lambda row: f"{row['query_id']}::{row['model']}")
    todo = [q for q in queries if f"{q.id}::{model}" not in done]
    requests = [
        ModelRequest(
            sample_id=q.id, messages=(ChatMessage(role="user", content=q.text),), params=params or GenerationParams(),
            input_text=q.text,
        )
        for q in todo
    ]  # fmt: skip
    writer = AppendLog(path)

    def record(outcome: Outcome) -> None:
        response = outcome.response
        if response is None:
            row = SafeResponse(query_id=outcome.request.sample_id, model=model, text="", error=str(outcome.error))
        else:
            row = SafeResponse(query_id=outcome.request.sample_id, model=model, text=response.text or "")
        writer.write(row.model_dump(exclude_none=True))
        if on_outcome is not None:
            on_outcome(outcome)

    try:
        return await run_requests(backend, requests, record, engine, cache, PROMPT_VERSION)
    finally:
        writer.close()


async def judge_pairs(
    pairs: Sequence[SafePair],
    backend: ModelBackend,
    judge: str,
    judge_format: str,
    out: str | Path,
    params: GenerationParams | None = None,
    engine: EngineConfig | None = None,
    cache: ResponseCache | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> EngineStats:
    """Have ``backend`` judge every pair not yet judged by ``judge`` in ``out``."""
    from verimod.tasks.safeqa.judges import judge_formats, judge_output

    spec = judge_formats.get(judge_format)
    path = Path(out)
    done = finished_keys(path, lambda row: f"{row['pair_id']}||{row['judge']}")
    todo = [p for p in pairs if f"{p.pair_id}||{judge}" not in done]
    requests = [
        ModelRequest(
            sample_id=p.pair_id, messages=tuple(spec.build_messages(p.query.text, p.response.text)),
            params=params or GenerationParams(max_tokens=64), labels=tuple(spec.labels) if spec.labels else None,
        )
        for p in todo
    ]  # fmt: skip
    writer = AppendLog(path)

    def record(outcome: Outcome) -> None:
        pair_id = outcome.request.sample_id
        if outcome.response is None:
            row = JudgeOutput(pair_id=pair_id, judge=judge, label="invalid", error=str(outcome.error))
        else:
            row = judge_output(pair_id, judge, judge_format, outcome.response.text or "", outcome.response.label_probs)
        writer.write(row.model_dump(exclude_none=True))
        if on_outcome is not None:
            on_outcome(outcome)

    try:
        return await run_requests(
            backend, requests, record, engine, cache, f"safeqa-judge/{judge_format}/{json.dumps(spec.version)}"
        )
    finally:
        writer.close()
