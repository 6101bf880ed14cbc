"""Many seeds × many methods: :func:`transform_all` / :func:`atransform_all`, which skip — and
count, with the reason — what cannot be made instead of failing the batch."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from verimod.models.base import ModelBackend
from verimod.tasks.safeqa.schema import SafeQuery
from verimod.tasks.safeqa.transforms.api import atransform, get_method, missing_backend, transform
from verimod.tasks.safeqa.transforms.base import (
    DeclarativeOnlyError,
    NotApplicableError,
    RewriteError,
    TransformError,
    TransformSpec,
)

SkipKind = Literal["declarative-only", "not-applicable", "rewrite-failed"]


@dataclass(frozen=True, slots=True)
class Skip:
    """A (seed, method) pair :func:`transform_all` did not produce, and why."""

    query_id: str
    method: str
    kind: SkipKind
    detail: str


class TransformedQueries(list[SafeQuery]):
    """The queries :func:`transform_all` produced (a list), with what it skipped and why."""

    def __init__(self, queries: Iterable[SafeQuery] = (), skipped: Iterable[Skip] = ()) -> None:
        super().__init__(queries)
        self.skipped: list[Skip] = list(skipped)

    def skip_counts(self) -> Counter[tuple[str, str]]:
        """``(method, kind)`` → number of seeds skipped."""
        return Counter((s.method, s.kind) for s in self.skipped)


def _validate_methods(methods: Sequence[str], backend: ModelBackend | None) -> list[TransformSpec]:
    specs = [get_method(m) for m in methods]
    needs_model = [s.name for s in specs if s.channel == "llm-rewrite"]
    if needs_model and backend is None:
        raise missing_backend(", ".join(needs_model))
    return specs


def transform_all(
    queries: Iterable[SafeQuery],
    methods: Sequence[str],
    seed: int = 0,
    backend: ModelBackend | None = None,
    *,
    max_concurrency: int = 16,
) -> TransformedQueries:
    """Every method on every seed, seed-major, skipping (and counting, with the reason) what cannot be made.

    Skips: a declarative-only method on a question seed (``declarative-only``), a seed the method
    finds nothing to change in (``not-applicable``), a failed model rewrite (``rewrite-failed``).
    Unknown methods, and llm-rewrite methods without a backend, raise before any work is done.
    """
    queries = list(queries)
    _validate_methods(methods, backend)
    if backend is not None and any(get_method(m).channel == "llm-rewrite" for m in methods):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(atransform_all(queries, methods, seed, backend, max_concurrency=max_concurrency))
        raise TransformError(
            "transform_all() with llm-rewrite methods was called inside an event loop: await atransform_all"
        )
    out = TransformedQueries()
    for query in queries:
        for method in methods:
            try:
                out.append(transform(method, query, seed))
            except (DeclarativeOnlyError, NotApplicableError, RewriteError) as exc:
                out.skipped.append(_skip(query, method, exc))
    return out


async def atransform_all(
    queries: Iterable[SafeQuery],
    methods: Sequence[str],
    seed: int = 0,
    backend: ModelBackend | None = None,
    *,
    max_concurrency: int = 16,
) -> TransformedQueries:
    """:func:`transform_all` for async code; model rewrites run ``max_concurrency`` at a time."""
    queries = list(queries)
    _validate_methods(methods, backend)
    gate = asyncio.Semaphore(max_concurrency)

    async def one(query: SafeQuery, method: str) -> SafeQuery | Skip:
        async with gate:
            try:
                return await atransform(method, query, seed, backend)
            except (DeclarativeOnlyError, NotApplicableError, RewriteError) as exc:
                return _skip(query, method, exc)

    results = await asyncio.gather(*(one(q, m) for q in queries for m in methods))
    out = TransformedQueries()
    for result in results:
        _collect(out, result)
    return out


def _skip(query: SafeQuery, method: str, exc: TransformError) -> Skip:
    kind: SkipKind = (
        "declarative-only"
        if isinstance(exc, DeclarativeOnlyError)
        else "not-applicable"
        if isinstance(exc, NotApplicableError)
        else "rewrite-failed"
    )
    return Skip(query.id, method, kind, str(exc))


def _collect(out: TransformedQueries, result: SafeQuery | Skip) -> None:
    if isinstance(result, Skip):
        out.skipped.append(result)
    else:
        out.append(result)
