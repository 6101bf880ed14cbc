"""One verified standpoint per seed (SoftHateBench stage 1 at the paper's scale).

The paper runs one reverse-AMT search per verified ``(S, [TG])`` — 16,426 searches from 16,426
voted seeds — and pairs each Hard item with the soft items made from it. This module turns
extractions into those standpoints:

1. every successful extraction's target phrase is resolved through the taxonomy
   (:meth:`~verimod.tasks.softhate.groups.GroupTaxonomy.match`; every resolution is recorded
   with its rule); unresolved phrases are counted under ``"<unresolved>"``;
2. a group with fewer than ``min_group`` resolved members is dropped with its members (the
   paper removes classes of fewer than 20);
3. each remaining member is checked by bidirectional entailment with its source sentence:
   ``P(standpoint ⊨ source) ≥ τ`` and ``P(source ⊨ standpoint) ≥ τ`` (τ = ``threshold``, the
   paper's τ_ent = 0.6); ``entailment=None`` checks nothing (``passed = None``, every member
   kept);
4. each member that passed becomes a :class:`~verimod.tasks.softhate.schema.Standpoint` with
   id ``sp-<seed id>`` (``/`` and whitespace in the seed id replaced by ``_``), ``source_id`` =
   the seed id and ``gold`` as given (``non_hate`` for non-hate controls). The id pairs the
   seed's Hard item with every soft item made from the standpoint.

Checks run concurrently, at most ``concurrency`` at a time; results keep the input order.
The per-group medoid (one standpoint per group) is
:func:`verimod.tasks.softhate.standpoints.select_group_standpoints`.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from verimod.core.errors import one_line
from verimod.tasks.softhate.groups import GroupTaxonomy, Resolution
from verimod.tasks.softhate.schema import Gold, Standpoint
from verimod.tasks.softhate.scorers import ScoringError
from verimod.tasks.softhate.standpoints import (
    CHECK_FIELDS,
    UNRESOLVED,
    AsyncEntailment,
    Extraction,
    check_selection_args,
)

RESOLUTION_FIELDS: Final = ("item_id", "target", "group", "level1", "method", "form", "score", "reason")


def standpoint_id(seed_id: str) -> str:
    """``sp-<seed id>`` with ``/`` and whitespace replaced by ``_`` (module docstring)."""
    return "sp-" + re.sub(r"[/\s]", "_", seed_id)


def resolution_record(item_id: str, resolution: Resolution) -> dict[str, Any]:
    """One JSON-ready line of the resolution table (:data:`RESOLUTION_FIELDS`)."""
    group = resolution.group
    values = (
        item_id,
        resolution.phrase,
        group.name if group else None,
        group.level1.value if group else None,
        resolution.method,
        resolution.form,
        resolution.score,
        resolution.reason,
    )
    return dict(zip(RESOLUTION_FIELDS, values, strict=True))


@dataclass(frozen=True)
class SeedSelection:
    """The outcome of :func:`select_seed_standpoints`.

    ``standpoints``: one per verified seed, in input order. ``members``: group name → the ids of
    the extractions resolved to it. ``dropped``: group name or ``"<unresolved>"`` → the reason.
    ``checks``: one ``{"group", "item_id", "forward", "backward", "passed", "error"}`` per
    checked member, in input order. ``resolutions``: one record per successful extraction
    (:func:`resolution_record`).
    """

    standpoints: list[Standpoint]
    members: dict[str, list[str]]
    dropped: dict[str, str]
    checks: list[dict[str, Any]]
    resolutions: list[dict[str, Any]]

    def method_counts(self) -> dict[str, int]:
        """How many target phrases each resolution rule settled."""
        return dict(Counter(r["method"] for r in self.resolutions))


async def select_seed_standpoints(
    extractions: Sequence[Extraction],
    taxonomy: GroupTaxonomy,
    *,
    entailment: AsyncEntailment | None,
    min_group: int = 20,
    threshold: float = 0.6,
    gold: Gold = "hate",
    concurrency: int = 16,
) -> SeedSelection:
    """Resolve, filter by group size and check every extraction (module docstring).

    A :class:`~verimod.tasks.softhate.scorers.ScoringError` from ``entailment`` fails that
    check (its value is None, ``error`` holds the message); other exceptions propagate.
    """
    check_selection_args(min_group, threshold, [e.item_id for e in extractions])
    if concurrency < 1:
        raise ValueError(f"concurrency must be ≥ 1, got {concurrency}")
    ids = [standpoint_id(e.item_id) for e in extractions]
    repeated = [i for i, n in Counter(ids).items() if n > 1]
    if repeated:
        raise ValueError(f"two seeds give the standpoint id {repeated[0]!r} (seed ids must differ beyond / and spaces)")
    resolved: list[tuple[Extraction, Resolution]] = []
    records = []
    for e in extractions:
        if not e.ok:
            continue
        assert e.target is not None
        resolution = taxonomy.match(e.target)
        records.append(resolution_record(e.item_id, resolution))
        resolved.append((e, resolution))
    members: dict[str, list[str]] = {}
    for e, resolution in resolved:
        if resolution.group is not None:
            members.setdefault(resolution.group.name, []).append(e.item_id)
    dropped = {name: f"fewer than {min_group} items" for name, ids_ in members.items() if len(ids_) < min_group}
    unresolved = sum(1 for _, r in resolved if r.group is None)
    if unresolved:
        dropped[UNRESOLVED] = f"target phrase not in the taxonomy: {unresolved} items"
    kept = [(e, r) for e, r in resolved if r.group is not None and r.group.name not in dropped]
    limit = asyncio.Semaphore(concurrency)

    async def check(e: Extraction, group_name: str) -> dict[str, Any]:
        if entailment is None:
            return dict(zip(CHECK_FIELDS, (group_name, e.item_id, None, None, None, None), strict=True))
        assert e.standpoint is not None
        values: list[float | None] = []
        error = None
        async with limit:
            for premise, hypothesis in ((e.standpoint, e.source_text), (e.source_text, e.standpoint)):
                try:
                    values.append(float(await entailment(premise, hypothesis)))
                except ScoringError as exc:
                    values.append(None)
                    error = error or one_line(str(exc))
        passed = all(v is not None and v >= threshold for v in values)
        return dict(zip(CHECK_FIELDS, (group_name, e.item_id, values[0], values[1], passed, error), strict=True))

    checks = await asyncio.gather(*(check(e, r.group.name) for e, r in kept if r.group is not None))
    standpoints = []
    for (e, resolution), result in zip(kept, checks, strict=True):
        if result["passed"] is False:
            continue
        assert e.standpoint is not None and resolution.group is not None
        sp_id = standpoint_id(e.item_id)
        standpoints.append(
            Standpoint(id=sp_id, text=e.standpoint, target=resolution.group, source_id=e.item_id, gold=gold)
        )
    return SeedSelection(standpoints, members, dropped, list(checks), records)
