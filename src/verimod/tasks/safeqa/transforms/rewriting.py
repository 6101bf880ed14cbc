"""Model rewrites through the evaluation engine, validated, with rejected answers kept and retried.

:func:`run_rewrites` takes :class:`~.rewrite.RewriteTask` objects (translation, multilingual,
paraphrase, the declarative seed stage) and, round by round (attempt k = 1 … ``max_attempts``):

1. sends the attempt-k request of every task still open through
   :func:`verimod.core.engine.run_requests` — the engine's concurrency, retries with backoff,
   response cache (prompt version ``safeqa-rewrite/<instructions version>``) and ``on_outcome``
   progress callback apply;
2. cleans each answer (:func:`~.rewrite.clean_rewrite`) and runs the local checks of
   :func:`~.validate.check_rewrite`; a model call that failed after the engine's own retries
   counts as a rejected attempt (``model-error``);
3. sends the meaning-check requests of the answers that passed (:mod:`.meaning`) through the
   engine to the checker model, and accepts an answer only when that check passes too;
4. keeps every rejected answer as a :class:`Rejection` (attempt, text, reason, detail).

A task accepted at attempt k gets its text, the attempt number, the meaning verdict and the
earlier rejections; a task rejected ``max_attempts`` times gets none (its rejections say why).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, Outcome, run_requests
from verimod.models.base import ModelBackend, ModelRequest, ModelResponse
from verimod.tasks.safeqa.transforms.base import load_table
from verimod.tasks.safeqa.transforms.meaning import MeaningConfig, MeaningVerdict, check_requests, judge_meaning
from verimod.tasks.safeqa.transforms.rewrite import MAX_TOKENS, RewriteTask, clean_rewrite
from verimod.tasks.safeqa.transforms.validate import Limits, check_rewrite


class RewriteConfig(BaseModel):
    """How rewrites are asked for and validated (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(3, ge=1, le=20)
    retry_temperature: float = Field(0.7, ge=0.0)
    max_tokens: int = Field(MAX_TOKENS, ge=1)
    near_identity: float = Field(0.9, gt=0.0, le=1.0)
    max_length_ratio: float = Field(4.0, gt=1.0)
    meaning: MeaningConfig = MeaningConfig()


@dataclass(frozen=True, slots=True)
class Rejection:
    """A rejected rewrite: which task, which attempt, the text, and why."""

    key: str
    kind: str
    attempt: int
    text: str | None
    reason: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(slots=True)
class RewriteResult:
    """What became of one task: the accepted text (None when every attempt was rejected)."""

    task: RewriteTask
    text: str | None = None
    attempts: int = 0
    model: str | None = None
    meaning: MeaningVerdict | None = None
    rejections: list[Rejection] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        """True when an attempt passed every check."""
        return self.text is not None


def prompt_version() -> str:
    """The cache prompt version of rewrite requests (the instructions' version)."""
    return f"safeqa-rewrite/{load_table('instructions')['version']}"


async def run_rewrites(
    tasks: Sequence[RewriteTask],
    backend: ModelBackend,
    *,
    config: RewriteConfig | None = None,
    checker: ModelBackend | None = None,
    engine: EngineConfig | None = None,
    cache: ResponseCache | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[RewriteResult]:
    """Obtain a validated rewrite for every task (module docstring); results in the tasks' order.

    ``checker`` answers the meaning checks (default: ``backend`` itself); with
    ``config.meaning.mode == "none"`` no check request is sent.
    """
    config = config or RewriteConfig()
    limits = Limits(near_identity=config.near_identity, max_length_ratio=config.max_length_ratio)
    results = {task.key: RewriteResult(task) for task in tasks}
    if len(results) != len(tasks):
        raise ValueError("two rewrite tasks share one key")
    open_keys = [task.key for task in tasks]
    for attempt in range(1, config.max_attempts + 1):
        if not open_keys:
            break
        requests = [
            results[key].task.request(attempt, config.retry_temperature, config.max_tokens) for key in open_keys
        ]
        replies = await _ask(backend, requests, engine, cache, prompt_version(), on_outcome)
        answers = {key: replies[request.sample_id] for key, request in zip(open_keys, requests, strict=True)}
        candidates: dict[str, str] = {}
        for key in open_keys:
            result, (response, error) = results[key], answers[key]
            result.attempts = attempt
            if response is None:
                result.rejections.append(Rejection(key, result.task.kind, attempt, None, "model-error", error or ""))
                continue
            text = clean_rewrite(response.text or "")
            problem = check_rewrite(
                result.task.kind,
                result.task.seed_text,
                text,
                language=result.task.language,
                instruction_head=result.task.instruction_head,
                limits=limits,
            )
            if problem is not None:
                result.rejections.append(
                    Rejection(key, result.task.kind, attempt, text, problem.reason, problem.detail)
                )
            else:
                candidates[key] = text
                result.model = response.model
        verdicts = await _meaning_checks(
            candidates, results, attempt, config.meaning, checker or backend, engine, cache, on_outcome
        )
        for key, text in candidates.items():
            verdict = verdicts[key]
            result = results[key]
            if verdict.passed:
                result.text, result.meaning = text, verdict
            else:
                reason = "meaning-check-error" if verdict.error else "meaning"
                result.rejections.append(Rejection(key, result.task.kind, attempt, text, reason, verdict.detail))
        open_keys = [key for key in open_keys if not results[key].accepted]
    return [results[task.key] for task in tasks]


async def _ask(
    backend: ModelBackend,
    requests: Sequence[ModelRequest],
    engine: EngineConfig | None,
    cache: ResponseCache | None,
    version: str,
    on_outcome: Callable[[Outcome], None] | None,
) -> dict[str, tuple[ModelResponse | None, str | None]]:
    """One engine run: sample id → (the response, or None and the error of a call that failed)."""
    replies: dict[str, tuple[ModelResponse | None, str | None]] = {}

    def record(outcome: Outcome) -> None:
        error = None if outcome.error is None else f"{outcome.error.kind}: {outcome.error}"
        replies[outcome.request.sample_id] = (outcome.response, error)
        if on_outcome is not None:
            on_outcome(outcome)

    if requests:
        await run_requests(backend, requests, record, engine, cache, version)
    return replies


async def _meaning_checks(
    candidates: dict[str, str],
    results: dict[str, RewriteResult],
    attempt: int,
    meaning: MeaningConfig,
    checker: ModelBackend,
    engine: EngineConfig | None,
    cache: ResponseCache | None,
    on_outcome: Callable[[Outcome], None] | None,
) -> dict[str, MeaningVerdict]:
    """The meaning verdict of every candidate rewrite (one engine run for all of them)."""
    requests = []
    owner: dict[str, tuple[str, str]] = {}
    for key, text in candidates.items():
        check_key = key if attempt == 1 else f"{key}#{attempt}"
        for request in check_requests(meaning.mode, check_key, results[key].task.seed_text, text, meaning):
            requests.append(request)
            owner[request.sample_id] = (key, request.sample_id.rsplit("/", 1)[1])
    replies = await _ask(
        checker, requests, engine, cache, f"safeqa-meaning/{load_table('instructions')['version']}", on_outcome
    )
    answers: dict[str, dict[str, ModelResponse | None]] = {key: {} for key in candidates}
    errors: dict[str, list[str]] = {key: [] for key in candidates}
    for sample_id, (response, error) in replies.items():
        key, suffix = owner[sample_id]
        answers[key][suffix] = response
        if error is not None:
            errors[key].append(error)
    verdicts = {}
    for key in candidates:
        task = results[key].task
        verdict = judge_meaning(meaning.mode, task.seed_text, task.risk_terms, answers[key], meaning)
        if verdict.error and errors[key]:
            verdict = MeaningVerdict(False, None, f"{verdict.detail}: {'; '.join(errors[key])}", error=True)
        verdicts[key] = verdict
    return verdicts


def rewrite_meta(result: RewriteResult, backend_spec: str, meaning_mode: str) -> dict[str, Any]:
    """The meta of an accepted rewrite: backend and model, the accepted attempt's sample id, the
    instructions' version, the target language, the attempts, the rejected answers and the
    meaning verdict."""
    if result.text is None or result.meaning is None:
        raise ValueError(f"rewrite {result.task.key!r} was not accepted")
    attempt = result.attempts
    meta: dict[str, Any] = {
        "backend": backend_spec,
        "model": result.model,
        "sample_id": result.task.key if attempt == 1 else f"{result.task.key}#{attempt}",
        "instructions": load_table("instructions")["version"],
        "attempts": attempt,
        "rejected": [{k: v for k, v in r.to_dict().items() if k not in ("key", "kind")} for r in result.rejections],
        "meaning": {"mode": meaning_mode, "score": result.meaning.score, "detail": result.meaning.detail},
    }
    if result.task.language is not None:
        meta["language"] = result.task.language
    return meta
