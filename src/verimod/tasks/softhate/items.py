"""SoftHateBench item files: what ``verimod softhate evaluate`` and ``softhate report`` read.

A JSONL line is one of two shapes:

- a **generated item** (:class:`~verimod.tasks.softhate.schema.GeneratedItem`, written by
  ``softhate generate`` and ``softhate variants``): ``id``, ``tier`` (softbase | softgv |
  softhv), ``text``, ``amt`` and its ``search`` or ``variant`` trace. Gold is ``hate``; the
  domain and group are the AMT target's Level-1 domain and Level-2 group;
- a **plain item** (:class:`PlainItem`): ``id``, ``text`` and optionally ``tier`` (``hard`` for
  source comments), ``gold`` (``hate`` by default; ``non_hate`` for controls), ``domain``,
  ``group``, ``condition``, ``source``, ``standpoint_id`` and the source's ``original`` fields.
  Seeds (``softhate seeds``) and hard items (``softhate standpoints``) are plain items.

A line with a ``search`` or ``variant`` field is read as a generated item, anything else as a
plain one. Ids must be unique across all files given together. Every problem is a one-line
:class:`~verimod.core.errors.InputError` naming file, line and field.

:func:`ablation_items` builds the reasoning-scaffold conditions from the soft items (softbase,
softgv, softhv, each with its AMT): the surface text only (``E+D``: the softbase text, or the
variant's own text), plus the implicit Premise (``E+D+P``), plus Premise and Maxim
(``E+D+P+M``); ids ``<id>#<condition>``.

Pairing: an item's ``pair`` is its standpoint id — ``standpoint_id`` of a plain item (the hard
items ``softhate standpoints`` writes carry it) or of a generated item (else its search's
standpoint).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verimod.core.errors import InputError, shown
from verimod.core.validation import validation_problems
from verimod.data.jsonl import read_jsonl, write_jsonl
from verimod.tasks.softhate.evaluation import SCAFFOLD_CONDITIONS, EvalItem
from verimod.tasks.softhate.schema import AmtInstance, GeneratedItem, Tier, join_texts


class PlainItem(BaseModel):
    """A benchmark text that no search produced (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    tier: str | None = None
    gold: Literal["hate", "non_hate"] = "hate"
    domain: str | None = None
    group: str | None = None
    condition: str | None = None
    source: str | None = None
    standpoint_id: str | None = None
    original: dict[str, Any] | None = None


@dataclass(frozen=True)
class BenchItem:
    """One item as evaluated: its text, the evaluation fields, and the AMT when it has one."""

    text: str
    item: EvalItem
    amt: AmtInstance | None = None

    @property
    def id(self) -> str:
        return self.item.id


def from_generated(generated: GeneratedItem) -> BenchItem:
    """The evaluation view of a generated item (its gold; domain and group from the target;
    paired by its standpoint)."""
    target = generated.amt.target if generated.amt is not None else None
    pair = generated.standpoint_id or (generated.search.standpoint.id if generated.search else None)
    return BenchItem(
        generated.text,
        EvalItem(
            generated.id,
            generated.gold,
            generated.tier.value,
            None if target is None else target.level1.value,
            None if target is None else target.level2,
            pair=pair,
        ),
        generated.amt,
    )


def from_plain(plain: PlainItem) -> BenchItem:
    """The evaluation view of a plain item (paired by its ``standpoint_id``)."""
    e = EvalItem(plain.id, plain.gold, plain.tier, plain.domain, plain.group, plain.condition, plain.standpoint_id)
    return BenchItem(plain.text, e)


def _parse(obj: dict[str, Any], path: str, line: int) -> BenchItem:
    model: type[BaseModel] = GeneratedItem if ("search" in obj or "variant" in obj) else PlainItem
    try:
        parsed = model.model_validate(obj)
    except ValidationError as exc:
        raise InputError(validation_problems(exc, model, path, line)[0]) from None
    return from_generated(parsed) if isinstance(parsed, GeneratedItem) else from_plain(parsed)  # type: ignore[arg-type]


def load_items(paths: Sequence[str | Path]) -> list[BenchItem]:
    """Every item of the files, in order; a repeated id is an error naming both places."""
    items: list[BenchItem] = []
    seen: dict[str, str] = {}
    for path in paths:
        name = str(path)
        count = 0
        for line, obj in read_jsonl(path):
            item = _parse(obj, name, line)
            if item.id in seen:
                raise InputError.at(name, line, "id", f"duplicate id {shown(item.id)} (first at {seen[item.id]})")
            seen[item.id] = f"{name}:{line}"
            items.append(item)
            count += 1
        if count == 0:
            raise InputError.at(name, None, None, "no items (the file is empty)")
    return items


def plain_record(item: BenchItem, **extra: Any) -> dict[str, Any]:
    """A plain-item JSON line of ``item`` (``extra`` fields added; None values left out)."""
    e = item.item
    row = {"id": e.id, "text": item.text, "tier": e.tier, "gold": e.gold, "domain": e.domain, "group": e.group}
    row |= {"condition": e.condition, **extra}
    return {k: v for k, v in row.items() if v is not None}


def write_plain_items(path: str | Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write plain-item lines (checked against :class:`PlainItem`) atomically; returns the count."""
    return write_jsonl(path, (PlainItem.model_validate(r).model_dump(exclude_none=True) for r in rows))


SOFT_TIERS: tuple[str, ...] = (Tier.SOFTBASE.value, Tier.SOFTGV.value, Tier.SOFTHV.value)


def ablation_items(items: Sequence[BenchItem], tiers: Sequence[str] = SOFT_TIERS) -> list[BenchItem]:
    """The three scaffold conditions of every item of ``tiers`` with an AMT (module docstring)."""
    out = []
    for item in items:
        amt = item.amt
        if amt is None or item.item.tier not in tiers:
            continue
        surface = item.text
        with_premise = join_texts(surface, amt.premise)
        texts = (surface, with_premise, join_texts(with_premise, amt.maxim))
        for condition, text in zip(SCAFFOLD_CONDITIONS, texts, strict=True):
            e = item.item
            scaffold = EvalItem(f"{e.id}#{condition}", e.gold, e.tier, e.domain, e.group, condition, e.pair)
            out.append(BenchItem(text, scaffold, amt))
    return out
