"""Many seeds × many methods: :func:`transform_all` / :func:`atransform_all`, which skip — and
record, with the reason — what cannot be made instead of failing the batch.

Nothing is dropped silently. Three records come back with the queries
(:class:`TransformedQueries`):

- ``skipped``: one :class:`Skip` per (seed, method) not made — ``declarative-only`` (a
  declarative-only method on a question seed), ``not-applicable`` (nothing to change),
  ``already-transformed`` (the seed was made by a transformation), ``rewrite-rejected`` (every
  model rewrite was refused by the validation, or the model failed every attempt);
- ``methods_not_run``: method → reason, for a whole method left out (llm-rewrite methods without
  a backend, when ``without_backend="skip"``);
- ``rejected``: every rejected rewrite attempt (:class:`~.rewriting.Rejection`), accepted or not
  in the end.

:meth:`TransformedQueries.method_summary` gives, per method, the queries made, the skips by kind,
the rejected attempts and the mean risk-term coverage of the edit-based methods.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, Outcome
from verimod.models.base import ModelBackend
from verimod.tasks.safeqa.schema import SafeQuery
from verimod.tasks.safeqa.transforms.api import (
    Plan,
    finish_rewrite,
    get_method,
    missing_backend,
    plan_transform,
    rewrite_task_of,
    transform,
)
from verimod.tasks.safeqa.transforms.base import (
    AlreadyTransformedError,
    DeclarativeOnlyError,
    NotApplicableError,
    RewriteError,
    TransformError,
    TransformSpec,
)
from verimod.tasks.safeqa.transforms.rewriting import Rejection, RewriteConfig, run_rewrites

SkipKind = Literal["declarative-only", "not-applicable", "already-transformed", "rewrite-rejected"]
SKIP_KINDS: tuple[SkipKind, ...] = ("declarative-only", "not-applicable", "already-transformed", "rewrite-rejected")
_SKIPPED_ERRORS = (DeclarativeOnlyError, NotApplicableError, AlreadyTransformedError, RewriteError)


@dataclass(frozen=True, slots=True)
class Skip:
    """A (seed, method) pair :func:`transform_all` did not produce, and why."""

    query_id: str
    method: str
    kind: SkipKind
    detail: str


class TransformedQueries(list[SafeQuery]):
    """The queries :func:`transform_all` produced (a list), with what it skipped and why."""

    def __init__(
        self,
        queries: Iterable[SafeQuery] = (),
        skipped: Iterable[Skip] = (),
        methods_not_run: dict[str, str] | None = None,
        rejected: Iterable[Rejection] = (),
    ) -> None:
        super().__init__(queries)
        self.skipped: list[Skip] = list(skipped)
        self.methods_not_run: dict[str, str] = dict(methods_not_run or {})
        self.rejected: list[Rejection] = list(rejected)

    def skip_counts(self) -> Counter[tuple[str, str]]:
        """``(method, kind)`` → number of seeds skipped."""
        return Counter((s.method, s.kind) for s in self.skipped)

    def method_summary(self, methods: Sequence[str]) -> list[dict[str, Any]]:
        """Per method (in ``methods`` order): ``made``, ``skipped`` (kind → count), ``not_run``
        (the reason, or None), ``rejected_attempts``, and ``risk_coverage`` — the mean of the made
        queries' ``meta["risk_coverage"]["rate"]`` over those that have risk terms (None when no
        query has one or the method makes no edits) with ``risk_terms_missed`` (occurrences left
        in clear, summed)."""
        made = Counter(q.method for q in self)
        skips = self.skip_counts()
        rejected = Counter(r.kind for r in self.rejected)
        rows = []
        for method in methods:
            rates = [
                float(cov["rate"])
                for q in self
                if q.method == method and (cov := (q.meta or {}).get("risk_coverage")) and cov.get("rate") is not None
            ]
            missed = sum(
                int(cov["occurrences"]) - int(cov["hit"])
                for q in self
                if q.method == method and (cov := (q.meta or {}).get("risk_coverage"))
            )
            rows.append(
                {
                    "method": method,
                    "made": made.get(method, 0),
                    "skipped": {kind: skips[(method, kind)] for kind in SKIP_KINDS if skips[(method, kind)]},
                    "not_run": self.methods_not_run.get(method),
                    "rejected_attempts": rejected.get(method, 0),
                    "risk_coverage": sum(rates) / len(rates) if rates else None,
                    "risk_terms_missed": missed if rates else None,
                }
            )
        return rows


def _validate_methods(
    methods: Sequence[str], backend: ModelBackend | None, without_backend: Literal["raise", "skip"]
) -> tuple[list[TransformSpec], dict[str, str]]:
    specs = [get_method(m) for m in methods]
    needs_model = [s.name for s in specs if s.channel == "llm-rewrite"]
    if needs_model and backend is None:
        if without_backend == "raise":
            raise missing_backend(", ".join(needs_model))
        reason = "llm-rewrite method: rewrites through a model and no model was given (--model)"
        return [s for s in specs if s.channel != "llm-rewrite"], {name: reason for name in needs_model}
    return specs, {}


def transform_all(
    queries: Iterable[SafeQuery],
    methods: Sequence[str],
    seed: int = 0,
    backend: ModelBackend | None = None,
    *,
    max_concurrency: int = 16,
    without_backend: Literal["raise", "skip"] = "raise",
    config: RewriteConfig | None = None,
    checker: ModelBackend | None = None,
    cache: ResponseCache | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> TransformedQueries:
    """Every method on every seed, seed-major, skipping (and recording, with the reason) what cannot
    be made (module docstring).

    Unknown methods raise before any work is done; so do llm-rewrite methods without a backend,
    unless ``without_backend="skip"`` (they are then listed in ``methods_not_run``). With a
    backend, llm-rewrite methods run through :func:`atransform_all` (``asyncio.run``).
    """
    queries = list(queries)
    specs, not_run = _validate_methods(methods, backend, without_backend)
    if backend is not None and any(s.channel == "llm-rewrite" for s in specs):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(
                atransform_all(
                    queries, methods, seed, backend, max_concurrency=max_concurrency, config=config,
                    checker=checker, cache=cache, on_outcome=on_outcome,
                )
            )  # fmt: skip
        raise TransformError(
            "transform_all() with llm-rewrite methods was called inside an event loop: await atransform_all"
        )
    out = TransformedQueries(methods_not_run=not_run)
    for query in queries:
        for spec in specs:
            try:
                out.append(transform(spec.name, query, seed))
            except _SKIPPED_ERRORS as exc:
                out.skipped.append(_skip(query, spec.name, exc))
    return out


async def atransform_all(
    queries: Iterable[SafeQuery],
    methods: Sequence[str],
    seed: int = 0,
    backend: ModelBackend | None = None,
    *,
    max_concurrency: int = 16,
    without_backend: Literal["raise", "skip"] = "raise",
    config: RewriteConfig | None = None,
    checker: ModelBackend | None = None,
    engine: EngineConfig | None = None,
    cache: ResponseCache | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> TransformedQueries:
    """:func:`transform_all` for async code. Model rewrites go through
    :func:`~.rewriting.run_rewrites` (the engine with ``engine``, or ``max_concurrency`` requests
    in flight; the response ``cache``; validation and retries by ``config``; meaning checks by
    ``checker``); ``on_outcome`` sees every model call (progress)."""
    queries = list(queries)
    specs, not_run = _validate_methods(methods, backend, without_backend)
    config = config or RewriteConfig()
    slots: list[SafeQuery | Skip | Plan] = []
    for query in queries:
        for spec in specs:
            try:
                plan = plan_transform(spec.name, query, seed, None)
                slots.append(plan if spec.channel == "llm-rewrite" else transform(spec.name, query, seed))
            except _SKIPPED_ERRORS as exc:
                slots.append(_skip(query, spec.name, exc))
    plans = [slot for slot in slots if isinstance(slot, Plan)]
    out = TransformedQueries(methods_not_run=not_run)
    if plans:
        assert backend is not None
        results = await run_rewrites(
            [rewrite_task_of(p) for p in plans],
            backend,
            config=config,
            checker=checker,
            engine=engine or EngineConfig(max_concurrency=max_concurrency),
            cache=cache,
            on_outcome=on_outcome,
        )
        finished: dict[int, SafeQuery | Skip] = {}
        for plan, result in zip(plans, results, strict=True):
            out.rejected.extend(result.rejections)
            try:
                finished[id(plan)] = finish_rewrite(plan, result, backend.spec, config.meaning.mode)
            except RewriteError as exc:
                finished[id(plan)] = _skip(plan.query, plan.spec.name, exc)
        slots = [finished[id(slot)] if isinstance(slot, Plan) else slot for slot in slots]
    for slot in slots:
        if isinstance(slot, Skip):
            out.skipped.append(slot)
        elif isinstance(slot, SafeQuery):
            out.append(slot)
    return out


def _skip(query: SafeQuery, method: str, exc: TransformError) -> Skip:
    kind: SkipKind = (
        "declarative-only"
        if isinstance(exc, DeclarativeOnlyError)
        else "not-applicable"
        if isinstance(exc, NotApplicableError)
        else "already-transformed"
        if isinstance(exc, AlreadyTransformedError)
        else "rewrite-rejected"
    )
    return Skip(query.id, method, kind, str(exc))
