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
  :class:`JudgeOutput` (``invalid`` when unrecognised — counted, never guessed — with the
  normaliser's reason).

Generation options (:class:`~verimod.models.base.GenerationParams`: max tokens, temperature,
top-p, seed, extra body such as ``{"chat_template_kwargs": {"enable_thinking": false}}``) are
the caller's; a judge without them uses its format's :attr:`~.judges.JudgeFormat.default_params`,
a target :data:`DEFAULT_TARGET_PARAMS`. They are recorded in every written line (``generation``,
:func:`generation_record`) with the answer's ``finish_reason`` (``length``: cut by the budget).
Resuming a file whose lines of the same model (or judge) were made with *other* options is an
:class:`~verimod.core.errors.InputError`: one file, one setting, so no result silently mixes two.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, EngineStats, Outcome, run_requests
from verimod.core.errors import InputError
from verimod.core.resumable import AppendLog, finished_keys
from verimod.data.jsonl import read_jsonl
from verimod.models.base import ChatMessage, GenerationParams, ModelBackend, ModelRequest
from verimod.tasks.safeqa.schema import JudgeOutput, SafePair, SafeQuery, SafeResponse

PROMPT_VERSION = "safeqa-collect/1"
#: Target-model generation when the caller gives none: deterministic, room for a full answer.
DEFAULT_TARGET_PARAMS = GenerationParams(max_tokens=1024)


def generation_record(params: GenerationParams) -> dict[str, Any]:
    """The generation options as written in each output line (every field, JSON-ready)."""
    return params.model_dump(mode="json")


def check_same_generation(
    path: Path, params: GenerationParams, owner: Callable[[dict[str, Any]], bool], who: str
) -> None:
    """:class:`InputError` when lines of ``path`` that ``owner`` selects record other options."""
    if not path.exists():
        return
    wanted = generation_record(params)
    for line, row in read_jsonl(path):
        given = row.get("generation")
        if owner(row) and given is not None and given != wanted:
            differing = sorted(k for k in set(given) | set(wanted) if given.get(k) != wanted.get(k))
            raise InputError.at(
                str(path), line, "generation",
                f"{who} already has outputs here made with other generation options ({', '.join(differing)}: "
                f"{ {k: given.get(k) for k in differing} } vs { {k: wanted.get(k) for k in differing} }); "
                "write to another file (or give the judge another --name)",
            )  # fmt: skip


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
    params = params or DEFAULT_TARGET_PARAMS
    done = finished_keys(path, lambda row: f"{row['query_id']}::{row['model']}")  # (also removes a torn last line)
    check_same_generation(path, params, lambda row: row.get("model") == model, f"model {model!r}")
    todo = [q for q in queries if f"{q.id}::{model}" not in done]
    requests = [
        ModelRequest(
            sample_id=q.id, messages=(ChatMessage(role="user", content=q.text),), params=params, input_text=q.text,
        )
        for q in todo
    ]  # fmt: skip
    generation = generation_record(params)
    writer = AppendLog(path)

    def record(outcome: Outcome) -> None:
        response = outcome.response
        query_id = outcome.request.sample_id
        if response is None:
            row = SafeResponse(query_id=query_id, model=model, text="", error=str(outcome.error), generation=generation)
        else:
            row = SafeResponse(
                query_id=query_id, model=model, text=response.text or "", finish_reason=response.finish_reason,
                generation=generation,
            )  # fmt: skip
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
    """Have ``backend`` judge every pair not yet judged by ``judge`` in ``out`` (``params``
    default: the format's :attr:`~.judges.JudgeFormat.default_params`)."""
    from verimod.tasks.safeqa.judges import judge_formats, judge_output

    spec = judge_formats.get(judge_format)
    params = params or spec.default_params
    path = Path(out)
    done = finished_keys(path, lambda row: f"{row['pair_id']}||{row['judge']}")  # (also removes a torn last line)
    check_same_generation(path, params, lambda row: row.get("judge") == judge, f"judge {judge!r}")
    todo = [p for p in pairs if f"{p.pair_id}||{judge}" not in done]
    responses = {p.pair_id: p.response.text for p in todo}
    requests = [
        ModelRequest(
            sample_id=p.pair_id, messages=tuple(spec.build_messages(p.query.text, p.response.text)),
            params=params, labels=tuple(spec.labels) if spec.labels else None,
        )
        for p in todo
    ]  # fmt: skip
    generation = generation_record(params)
    writer = AppendLog(path)

    def record(outcome: Outcome) -> None:
        pair_id = outcome.request.sample_id
        if outcome.response is None:
            row = JudgeOutput(
                pair_id=pair_id, judge=judge, label="invalid", error=str(outcome.error), format=judge_format,
                generation=generation,
            )  # fmt: skip
        else:
            row = judge_output(
                pair_id, judge, judge_format, outcome.response.text or "", outcome.response.label_probs,
                response_text=responses[pair_id],
            ).model_copy(
                update={"finish_reason": outcome.response.finish_reason, "generation": generation}
            )  # fmt: skip
        writer.write(row.model_dump(exclude_none=True))
        if on_outcome is not None:
            on_outcome(outcome)

    try:
        return await run_requests(
            backend, requests, record, engine, cache, f"safeqa-judge/{judge_format}/{json.dumps(spec.version)}"
        )
    finally:
        writer.close()
