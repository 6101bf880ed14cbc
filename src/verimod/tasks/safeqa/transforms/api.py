"""One transformation at a time: :func:`transform`, :func:`atransform`, :func:`decode`, the
method listing and the rewrite request (see the package docstring for the contract)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from verimod.models.base import ModelBackend, ModelRequest
from verimod.tasks.safeqa.schema import SafeQuery
from verimod.tasks.safeqa.transforms import rewrite
from verimod.tasks.safeqa.transforms.base import (
    VERSION,
    Context,
    DeclarativeOnlyError,
    DecodeError,
    Draft,
    MissingBackendError,
    TransformError,
    TransformSpec,
    check_variant,
    transforms,
)
from verimod.tasks.safeqa.transforms.keys import lexicon


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
class _Plan:
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


def _plan(method: str, query: SafeQuery, seed: int, variant: str | None) -> _Plan:
    spec = get_method(method)
    check_variant(spec, variant)
    if query.pool != "base":
        raise TransformError(
            f"query {query.id!r} is already adversarial (method {query.method!r}): transformations apply to base "
            "queries, and a transformed query belongs to the method of its primary transformation"
        )
    if spec.declarative_only and query.form != "declarative":
        raise DeclarativeOnlyError(
            f"transformation {method!r} applies only to declarative seeds; query {query.id!r} is a {query.form}"
        )
    rng = random.Random(f"{seed}|{query.id}|{method}")
    ctx = Context(query, method, seed, rng, variant, new_query_id(query.id, method, seed, variant))
    return _Plan(spec, query, ctx)


def _finish(plan: _Plan, draft: Draft) -> SafeQuery:
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
    """Apply transformation ``method`` to the base query ``query`` (see the module docstring).

    llm-rewrite methods need ``backend`` and run their one model call with ``asyncio.run`` (inside
    a running event loop, ``await atransform(...)`` instead). ``variant`` forces one of the
    method's variants (an encoding scheme, a template id, a language…) instead of drawing it.
    """
    plan = _plan(method, query, seed, variant)
    if plan.spec.apply is not None:
        return _finish(plan, plan.spec.apply(plan.ctx))
    if backend is None:
        raise missing_backend(method)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(atransform(method, query, seed, backend, variant=variant))
    raise TransformError(f"transform({method!r}) was called inside a running event loop: await atransform(...)")


async def atransform(
    method: str, query: SafeQuery, seed: int = 0, backend: ModelBackend | None = None, *, variant: str | None = None
) -> SafeQuery:
    """:func:`transform` for async code (the only way to run llm-rewrite methods inside an event loop)."""
    plan = _plan(method, query, seed, variant)
    if plan.spec.apply is not None:
        return _finish(plan, plan.spec.apply(plan.ctx))
    if backend is None:
        raise missing_backend(method)
    assert plan.spec.rewrite is not None
    return _finish(plan, await plan.spec.rewrite(plan.ctx, backend))


def rewrite_request(method: str, query: SafeQuery, seed: int = 0, *, variant: str | None = None) -> ModelRequest:
    """The model request an llm-rewrite method sends for ``query`` (to inspect, or to script answers)."""
    plan = _plan(method, query, seed, variant)
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
