"""Running a detector over SoftHateBench items through the engine, and reading the judgements.

:func:`run_detector` asks one backend about every (item, run) not yet answered in the output
file — concurrency, retries, backoff and the response cache are the engine's — and appends
one judgement line per finished request (flushed; a second start asks only what is missing,
failed requests included)::

    {"item_id": "sp-women/cause_effect", "run": 0, "model": "openai:qwen", "label": "hate",
     "raw": "Hateful", "p_hate": null, "reason": null}

``label`` is ``hate`` | ``non_hate`` | ``invalid`` (:mod:`verimod.tasks.softhate.detect`); a
request that failed after the engine's retries is a line with ``error`` and label
``invalid``. Run r is the request's ``repeat`` index with generation seed ``seed + r``: at
temperature 0 (the default) runs repeat one another, so spread across runs needs
``temperature > 0``.

Detector formats: ``prompt`` — the binary hateful / safe prompt (classifier backends answer
through ``label_probs``); a C-SafeQA guard format name (``llama-guard``, ``qwen3guard``,
``shieldgemma``, …) — the text is sent as the user turn and the guard's verdict normalised by
:func:`~verimod.tasks.softhate.detect.guard_normalizer` (unsafe → hate, optionally only for
the given hate categories).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, EngineStats, Outcome, run_requests
from verimod.core.errors import InputError
from verimod.core.resumable import AppendLog, finished_keys
from verimod.data.jsonl import read_jsonl
from verimod.models.base import ChatMessage, GenerationParams, ModelBackend
from verimod.tasks.softhate.detect import (
    DEFAULT_POSITIVE,
    DEFAULT_THRESHOLD,
    DETECTION_LABELS,
    NORMALIZER_VERSION,
    PROMPT_LABELS,
    DetectionLabel,
    build_messages,
    detector_prompt,
    from_response,
    guard_normalizer,
    normalize,
    request_for,
)
from verimod.tasks.softhate.evaluation import Judgement
from verimod.tasks.softhate.items import BenchItem

PROMPT_FORMAT = "prompt"


@dataclass(frozen=True)
class DetectorFormat:
    """How a detector is asked and read."""

    name: str
    messages: Callable[[str], tuple[ChatMessage, ...]] | None  # None: the detector prompt
    normalizer: Callable[[str | None], DetectionLabel]
    labels: tuple[str, ...] | None
    version: str


def detector_format(name: str, hate_categories: Collection[str] | None = None, language: str = "en") -> DetectorFormat:
    """``prompt`` (in ``language``) or a guard format (see the module docstring); unknown names
    raise with a hint."""
    if name == PROMPT_FORMAT:
        prompt = detector_prompt(language)
        return DetectorFormat(
            name,
            lambda text: build_messages(text, language),
            normalize,
            PROMPT_LABELS,
            f"{prompt.version}:{prompt.sha256[:16]}+{NORMALIZER_VERSION}",
        )

    def user_turn(text: str) -> tuple[ChatMessage, ...]:
        return (ChatMessage(role="user", content=text),)

    categories = sorted(hate_categories) if hate_categories else None
    return DetectorFormat(name, user_turn, guard_normalizer(name, categories), None, f"guard/{name}/{categories}")


def _key(row: dict[str, Any]) -> str:
    return f"{row.get('item_id')}::{row.get('run')}::{row.get('model')}"


async def run_detector(
    items: Sequence[BenchItem],
    backend: ModelBackend,
    out: str | Path,
    *,
    runs: int = 1,
    fmt: DetectorFormat | None = None,
    params: GenerationParams | None = None,
    positive: Collection[str] = DEFAULT_POSITIVE,
    threshold: float = DEFAULT_THRESHOLD,
    engine: EngineConfig | None = None,
    cache: ResponseCache | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> EngineStats:
    """Judge every (item, run) without an answer in ``out`` (see the module docstring)."""
    fmt = fmt or detector_format(PROMPT_FORMAT)
    params = params or GenerationParams(max_tokens=16)
    model = backend.spec
    done = finished_keys(out, _key)
    requests = []
    for run in range(runs):
        run_params = params.model_copy(update={"seed": (params.seed or 0) + run})
        for item in items:
            if f"{item.id}::{run}::{model}" in done:
                continue
            request = request_for(
                item.text, item.id, run_params, fmt.labels, fmt.messages or build_messages, repeat=run
            )
            requests.append(request)

    with AppendLog(out) as log:

        def record(outcome: Outcome) -> None:
            request = outcome.request
            row: dict[str, Any] = {"item_id": request.sample_id, "run": request.repeat, "model": model}
            if outcome.response is None:
                row |= {"label": "invalid", "error": str(outcome.error)}
            else:
                detection = from_response(outcome.response, positive, threshold, fmt.normalizer)
                row |= {"label": detection.label, "raw": outcome.response.text, "p_hate": detection.probability}
                row["reason"] = detection.reason
            log.write({k: v for k, v in row.items() if v is not None})
            if on_outcome is not None:
                on_outcome(outcome)

        return await run_requests(backend, requests, record, engine, cache, f"softhate-detect/{fmt.version}")


@dataclass(frozen=True)
class JudgementLine:
    """One line of a judgement file."""

    item_id: str
    run: int
    model: str
    label: str
    error: str | None = None


def load_judgements(path: str | Path) -> list[JudgementLine]:
    """Every line of a judgement file, checked; for an (item, run, model) judged more than once
    (a failed request retried later) the last line counts."""
    name = str(path)
    latest: dict[tuple[str, int, str], JudgementLine] = {}
    for line, row in read_jsonl(path):
        for field, kind in (("item_id", str), ("model", str), ("label", str)):
            if not isinstance(row.get(field), kind) or not row[field]:
                raise InputError.at(name, line, field, "must be a non-empty string")
        run = row.get("run", 0)
        if not isinstance(run, int) or isinstance(run, bool) or run < 0:
            raise InputError.at(name, line, "run", "must be a non-negative integer")
        if row["label"] not in DETECTION_LABELS:
            raise InputError.at(name, line, "label", f"must be one of {', '.join(DETECTION_LABELS)}")
        error = row.get("error")
        parsed = JudgementLine(row["item_id"], run, row["model"], row["label"], None if error is None else str(error))
        latest[(parsed.item_id, parsed.run, parsed.model)] = parsed
    return list(latest.values())


def judgements_of(lines: Sequence[JudgementLine], model: str) -> list[Judgement]:
    """The evaluation judgements of one model (a failed request is ``invalid``)."""
    return [Judgement(j.item_id, "invalid" if j.error else j.label, j.run) for j in lines if j.model == model]  # type: ignore[arg-type]
