"""Many reverse-AMT searches: the plan, resuming, running them in parallel, and the backend bound.

The paper runs one search per verified standpoint (16,426). :func:`plan_searches` pairs each
standpoint with its loci (``auto``: one locus per standpoint, drawn from its id and a seed —
:func:`~verimod.tasks.softhate.generate.choose_locus`; ``all``: the eight; or given names).
:func:`run_searches` runs up to ``parallel`` searches at once, each through the engine, and
hands every finished :class:`~verimod.tasks.softhate.schema.SearchTrace` to ``on_trace`` as
soon as it is done (the command appends it to ``searches.jsonl``; a killed run loses only the
searches in flight). :func:`finished_searches` reads what an earlier run finished and refuses
a file made with other search settings: a resumed benchmark never mixes two configurations.

:class:`~verimod.tasks.softhate.bounded.BoundedBackend` caps the requests in flight on one
backend across every concurrent search (each search's engine call has its own limit; the bound
holds the sum), so ``--max-concurrency`` keeps its meaning however many searches run at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig
from verimod.core.errors import InputError
from verimod.core.validation import validation_problems
from verimod.data.jsonl import read_jsonl
from verimod.models.base import ModelBackend
from verimod.tasks.softhate.bounded import BoundedBackend
from verimod.tasks.softhate.generate import choose_locus, generate_amt
from verimod.tasks.softhate.schema import Locus, SearchConfig, SearchTrace, Standpoint
from verimod.tasks.softhate.scorers import LanguageScorer, NliScorer, SafetyCheck

Plan = list[tuple[Standpoint, Locus]]
__all__ = ["BoundedBackend", "Plan", "finished_searches", "plan_searches", "run_searches"]


def plan_searches(standpoints: Sequence[Standpoint], loci: str | Sequence[Locus] = "auto", seed: int = 0) -> Plan:
    """``(standpoint, locus)`` pairs in standpoint order (module docstring); repeated
    standpoint ids raise ValueError."""
    seen: set[str] = set()
    for standpoint in standpoints:
        if standpoint.id in seen:
            raise ValueError(f"standpoint id {standpoint.id!r} occurs twice")
        seen.add(standpoint.id)
    if loci == "auto":
        return [(s, choose_locus(s.id, seed)) for s in standpoints]
    chosen = list(Locus) if loci == "all" else [Locus(x) for x in loci]
    return [(s, locus) for s in standpoints for locus in chosen]


def _differences(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key in sorted(set(a) | set(b)):
        left, right = a.get(key), b.get(key)
        if isinstance(left, dict) and isinstance(right, dict):
            out.extend(_differences(left, right, f"{prefix}{key}."))
        elif left != right:
            out.append(f"{prefix}{key}: {left!r} there, {right!r} now")
    return out


def finished_searches(path: str | Path, config: SearchConfig | None = None) -> dict[tuple[str, Locus], SearchTrace]:
    """The traces of ``path`` by ``(standpoint id, locus)`` (the last line of a key wins; none
    when the file is absent). With ``config``, a trace made with other settings is an
    :class:`~verimod.core.errors.InputError` naming the line and the settings that differ."""
    name = str(path)
    if not Path(name).exists():
        return {}
    wanted = config.model_dump(mode="json") if config is not None else None
    latest: dict[tuple[str, Locus], SearchTrace] = {}
    for line, obj in read_jsonl(name):
        try:
            trace = SearchTrace.model_validate(obj)
        except ValidationError as exc:
            raise InputError(validation_problems(exc, SearchTrace, name, line)[0]) from None
        if wanted is not None:
            found = trace.config.model_dump(mode="json")
            if found != wanted:
                changed = "; ".join(_differences(found, wanted)[:3])
                message = f"a search made with other settings ({changed}); resume with the same options"
                raise InputError.at(name, line, "config", message + " or write to another --out folder")
        latest[(trace.standpoint.id, trace.locus)] = trace
    return latest


async def run_searches(
    plan: Plan,
    *,
    generator: ModelBackend,
    nli: NliScorer,
    lms: Sequence[LanguageScorer],
    safety: SafetyCheck,
    config: SearchConfig,
    on_trace: Callable[[SearchTrace], None],
    parallel: int = 8,
    engine: EngineConfig | None = None,
    cache: ResponseCache | None = None,
) -> int:
    """Run every search of ``plan``, at most ``parallel`` at once; ``on_trace`` gets each trace
    as it finishes (in completion order). Returns the number run. An exception in one search
    (a bug, not a model failure — those are rejections in its trace) cancels the others."""
    if parallel < 1:
        raise ValueError(f"parallel must be at least 1, got {parallel}")
    slots = asyncio.Semaphore(parallel)

    async def one(standpoint: Standpoint, locus: Locus) -> None:
        async with slots:
            trace = await generate_amt(
                standpoint, locus, generator=generator, nli=nli, lms=lms, safety=safety, config=config,
                engine=engine, cache=cache,
            )  # fmt: skip
        on_trace(trace)

    tasks = [asyncio.ensure_future(one(s, locus)) for s, locus in plan]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
    return len(plan)
