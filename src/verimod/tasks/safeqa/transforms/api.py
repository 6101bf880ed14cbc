"""One transformation at a time: :func:`transform`, :func:`atransform`, :func:`decode`, the
method listing and the rewrite request (see the package docstring for the contract).

Seeds: a base query, or an adversarial query that *no verimod transformation made* (``method``
None, e.g. a Flames prompt, adversarial already): the new query records ``seed_pool`` and
``seed_source`` in its meta, so an analysis can tell stacked transformations apart. A query
made by a transformation (``method`` set) is refused with :class:`AlreadyTransformedError`: a
transformed prompt belongs to the method of its primary transformation (C-SafeQA §3.5).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig
from verimod.models.base import ModelBackend, ModelRequest
from verimod.tasks.safeqa.schema import SafeQuery
from verimod.tasks.safeqa.transforms import rewrite
from verimod.tasks.safeqa.transforms.base import (
    VERSION,
    AlreadyTransformedError,
    Context,
    DeclarativeOnlyError,
    DecodeError,
    Draft,
    MissingBackendError,
    RewriteError,
    TransformError,
    TransformSpec,
    check_variant,
    risk_coverage,
    transforms,
)
from verimod.tasks.safeqa.transforms.keys import find_keys, lexicon
from verimod.tasks.safeqa.transforms.rewriting import RewriteConfig, RewriteResult, rewrite_meta, run_rewrites


@dataclass(frozen=True, slots=True)
class MethodInfo:
    """One row of the method listing (``--methods``)."""

    number: int
    name: str
    channel: str
    family: str
    target: str
    declarative_only: bool
    reversible: bool
    variants: tuple[str, ...]
    summary: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        data = asdict(self)
        data["variants"] = list(self.variants)
        return data


@dataclass(slots=True)
class Plan:
    spec: TransformSpec
    query: SafeQuery
    ctx: Context = field(repr=False)


def get_method(method: str) -> TransformSpec:
    """The registered transformation ``method`` (:class:`UnknownNameError` with did-you-mean)."""
    return transforms.get(method)


def list_methods() -> list[MethodInfo]:
    """All transformations in catalogue order (programmatic 1–14, template 15–18, llm-rewrite 19–21)."""
    specs = sorted((transforms.get(name) for name in transforms.names()), key=lambda s: s.number)
    return [
        MethodInfo(
            s.number, s.name, s.channel, s.family, s.target, s.declarative_only, s.reversible, s.variants, s.summary
        )
        for s in specs
    ]


def new_query_id(query_id: str, method: str, seed: int = 0, variant: str | None = None) -> str:
    """``<seed id>~<method>``, then ``~<variant>`` when forced and ``~<seed>`` when not 0."""
    parts = [query_id, method]
    if variant is not None:
        parts.append(variant)
    if seed != 0:
        parts.append(str(seed))
    return "~".join(parts)


def plan_transform(method: str, query: SafeQuery, seed: int, variant: str | None) -> Plan:
    spec = get_method(method)
    check_variant(spec, variant)
    if query.method is not None:
        raise AlreadyTransformedError(
            f"query {query.id!r} was made by transformation {query.method!r}: a transformed query belongs to the "
            "method of its primary transformation, so it is not transformed again"
        )
    if spec.declarative_only and query.form != "declarative":
        raise DeclarativeOnlyError(
            f"transformation {method!r} applies only to declarative seeds; query {query.id!r} is a {query.form}"
        )
    rng = random.Random(f"{seed}|{query.id}|{method}")
    ctx = Context(query, method, seed, rng, variant, new_query_id(query.id, method, seed, variant))
    return Plan(spec, query, ctx)


def _finish(plan: Plan, draft: Draft) -> SafeQuery:
    spec, query, ctx = plan.spec, plan.query, plan.ctx
    meta = {
        "version": VERSION,
        "seed": ctx.seed,
        "channel": spec.channel,
        "family": spec.family,
        "variant": ctx.chosen,
        **draft.meta,
    }
    if spec.channel == "programmatic":
        meta["lexicon"] = lexicon().version
    if "edits" in meta:
        meta["risk_coverage"] = risk_coverage(query.text, find_keys(query), meta["edits"])
    if query.pool != "base":
        meta["seed_pool"] = query.pool
        meta["seed_source"] = (query.meta or {}).get("source")
    return SafeQuery(
        id=ctx.new_id,
        text=draft.text,
        form=query.form,
        pool="adversarial",
        seed_id=query.id,
        method=spec.name,
        risk_point=query.risk_point,
        category=query.category,
        meta=meta,
    )


def missing_backend(method: str) -> MissingBackendError:
    """The error for llm-rewrite method(s) called without a backend."""
    return MissingBackendError(
        f"transformation {method!r} rewrites through a model: pass backend= (e.g. "
        "verimod.models.registry.create_backend('openai:<model>'), or 'scripted:<file.jsonl>' in tests)"
    )


def transform(
    method: str, query: SafeQuery, seed: int = 0, backend: ModelBackend | None = None, *, variant: str | None = None
) -> SafeQuery:
    """Apply transformation ``method`` to the seed ``query`` (see the module docstring).

    llm-rewrite methods need ``backend`` and run through :func:`atransform` with ``asyncio.run``
    (inside a running event loop, ``await atransform(...)`` instead). ``variant`` forces one of the
    method's variants (an encoding scheme, a template id, a language…) instead of drawing it.
    """
    plan = plan_transform(method, query, seed, variant)
    if plan.spec.apply is not None:
        return _finish(plan, plan.spec.apply(plan.ctx))
    if backend is None:
        raise missing_backend(method)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if running:
        raise TransformError(f"transform({method!r}) was called inside a running event loop: await atransform(...)")
    return asyncio.run(atransform(method, query, seed, backend, variant=variant))


async def atransform(
    method: str,
    query: SafeQuery,
    seed: int = 0,
    backend: ModelBackend | None = None,
    *,
    variant: str | None = None,
    config: RewriteConfig | None = None,
    checker: ModelBackend | None = None,
    engine: EngineConfig | None = None,
    cache: ResponseCache | None = None,
) -> SafeQuery:
    """:func:`transform` for async code (the only way to run llm-rewrite methods inside an event loop).

    An llm-rewrite method goes through :func:`~.rewriting.run_rewrites` (the engine, validation,
    up to ``config.max_attempts`` attempts); when every attempt is rejected it raises
    :class:`RewriteError` listing the reasons.
    """
    plan = plan_transform(method, query, seed, variant)
    if plan.spec.apply is not None:
        return _finish(plan, plan.spec.apply(plan.ctx))
    if backend is None:
        raise missing_backend(method)
    config = config or RewriteConfig()
    (result,) = await run_rewrites(
        [rewrite_task_of(plan)], backend, config=config, checker=checker, engine=engine, cache=cache
    )
    return finish_rewrite(plan, result, backend.spec, config.meaning.mode)


def rewrite_task_of(plan: Plan) -> rewrite.RewriteTask:
    """The rewrite task of an llm-rewrite plan."""
    assert plan.spec.rewrite is not None
    task = plan.spec.rewrite(plan.ctx)
    assert isinstance(task, rewrite.RewriteTask)
    return task


def finish_rewrite(plan: Plan, result: RewriteResult, backend_spec: str, meaning_mode: str) -> SafeQuery:
    """The new query of an accepted rewrite; :class:`RewriteError` (with the reasons) when none was."""
    if not result.accepted:
        reasons = "; ".join(f"attempt {r.attempt}: {r.reason} ({r.detail})" for r in result.rejections)
        raise RewriteError(f"{plan.spec.name}: every rewrite of {plan.query.id!r} was rejected — {reasons}")
    assert result.text is not None
    return _finish(plan, Draft(result.text, rewrite_meta(result, backend_spec, meaning_mode)))


def rewrite_request(method: str, query: SafeQuery, seed: int = 0, *, variant: str | None = None) -> ModelRequest:
    """The first-attempt model request an llm-rewrite method sends for ``query`` (to inspect, or to script answers)."""
    plan = plan_transform(method, query, seed, variant)
    if plan.spec.channel != "llm-rewrite":
        raise TransformError(f"transformation {method!r} is {plan.spec.channel}: it sends no model request")
    request, _ = rewrite.prepare(plan.ctx, method)
    return request


def decode(method: str, text: str, meta: Mapping[str, Any]) -> str:
    """The seed text of a reversible transformation's output: ``decode(m, q'.text, q'.meta) == q.text``.

    Raises :class:`TransformError` for a method that is not reversible (llm-rewrite) and
    :class:`DecodeError` when the text does not match the meta.
    """
    spec = get_method(method)
    if spec.decoder is None:
        raise TransformError(f"transformation {method!r} ({spec.channel}) is not reversible")
    try:
        return spec.decoder(text, meta)
    except (KeyError, TypeError, ValueError, IndexError, StopIteration) as exc:
        if isinstance(exc, DecodeError):
            raise
        raise DecodeError(f"{method}: the meta does not decode this text ({type(exc).__name__}: {exc})") from None
