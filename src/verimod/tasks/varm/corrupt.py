"""Seeded, realistic corruptions of reference rationales: demonstration and benchmark outputs.

Each corruption imitates a failure seen in real model outputs — a wrong referent, quoted abuse
taken for the author's own, a right label with the wrong basis, lenient formatting, a broken
anchor. Corruptions are registered with :func:`corruption` together with their weight in the
demonstration mix; :func:`corrupt_rationale` applies one by name and :func:`demo_outputs`
draws one per item with a seeded generator, so the same seed gives the same file. These are a
stand-in for model outputs until a model is evaluated, and they say so wherever used.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from verimod.core.errors import did_you_mean
from verimod.tasks.varm.codebook import FIELDS, NO_CLEAR_TARGET, VOCABULARY
from verimod.tasks.varm.parser import Anchor, parse_rationale
from verimod.tasks.varm.schema import VarmRecord, VarmReference

HARMFUL_CATEGORIES: Final = tuple(c for c in VOCABULARY["category"] if c != "non_attack")
NON_ATTACK_STANCES: Final = ("oppose_attack", "quote_or_report", "neutral_mention")


@dataclass(frozen=True)
class Sample:
    """What a corruption works on: the reference, its canonical rationale and anchors."""

    reference: VarmReference
    record: VarmRecord
    cot: str
    anchors: dict[str, Anchor]
    rng: random.Random
    other_targets: Sequence[str]

    def replace(self, **values: str) -> str:
        """The rationale with the anchors of the named fields rewritten to ``values``."""
        pieces: list[str] = []
        cursor = 0
        for field in FIELDS:
            anchor = self.anchors[field]
            pieces.append(self.cot[cursor : anchor.start])
            written = self.cot[anchor.start : anchor.end]
            if field in values:
                written = f"[{anchor.tag}: {values[field]}]"
            pieces.append(written)
            cursor = anchor.end
        pieces.append(self.cot[cursor:])
        return "".join(pieces)

    def span(self, field: str) -> str:
        """The written anchor of ``field``."""
        anchor = self.anchors[field]
        return self.cot[anchor.start : anchor.end]


Corruption = Callable[[Sample], str | None]
CORRUPTIONS: dict[str, Corruption] = {}
#: Corruption name → weight in the demonstration mix (``keep`` = the reference rationale).
DEFAULT_MIX: dict[str, int] = {}


def corruption(name: str, weight: int) -> Callable[[Corruption], Corruption]:
    """Register a corruption under ``name`` with its weight in :data:`DEFAULT_MIX`."""

    def register(function: Corruption) -> Corruption:
        if name in CORRUPTIONS:
            raise ValueError(f"corruption {name!r} registered twice")
        CORRUPTIONS[name] = function
        DEFAULT_MIX[name] = weight
        return function

    return register


@corruption("keep", 40)
def _keep(s: Sample) -> str | None:
    return s.cot


@corruption("wrong_target", 8)
def _wrong_target(s: Sample) -> str | None:
    pool = [t for t in s.other_targets if t != s.record.target] or ["评论区的人"]
    return s.replace(target=s.rng.choice(pool))


@corruption("partial_target", 6)
def _partial_target(s: Sample) -> str | None:
    target = s.record.target
    if target == NO_CLEAR_TARGET or len(target) < 2:
        return s.replace(target="作者本人")
    return s.replace(target=target[: len(target) // 2])


@corruption("flip_label", 8)
def _flip_label(s: Sample) -> str | None:
    """Quoted or opposed abuse read as an attack, or an attack missed."""
    if s.record.label == "harmful":
        return s.replace(label="non_harmful", category="non_attack")
    return s.replace(stance="attack_or_endorse", label="harmful", category=s.rng.choice(HARMFUL_CATEGORIES))


@corruption("wrong_category", 6)
def _wrong_category(s: Sample) -> str | None:
    """Right label, wrong basis (a hidden record error when the label is harmful)."""
    if s.record.label == "harmful":
        return s.replace(category=s.rng.choice([c for c in HARMFUL_CATEGORIES if c != s.record.category]))
    return s.replace(label="harmful", category=s.rng.choice(HARMFUL_CATEGORIES))


@corruption("wrong_stance", 5)
def _wrong_stance(s: Sample) -> str | None:
    if s.record.label == "harmful":
        return s.replace(stance=s.rng.choice(NON_ATTACK_STANCES), label="non_harmful", category="non_attack")
    return s.replace(stance=s.rng.choice([v for v in VOCABULARY["stance"] if v != s.record.stance]))


@corruption("wrong_explicitness", 4)
def _wrong_explicitness(s: Sample) -> str | None:
    flipped = {"explicit": "implicit", "implicit": "explicit"}.get(s.record.target_explicitness, "explicit")
    return s.replace(target_explicitness=flipped)


@corruption("wrong_type", 3)
def _wrong_type(s: Sample) -> str | None:
    return s.replace(target_type={"single": "group", "group": "single"}.get(s.record.target_type, "group"))


@corruption("lenient_format", 6)
def _lenient_format(s: Sample) -> str | None:
    """Full-width brackets, a full-width colon and value aliases: parses, fails Format."""
    label = {"harmful": "Harmful", "non_harmful": "non-harmful"}[s.record.label]
    text = s.replace(stance=s.record.stance.replace("_", " "), label=label)
    text = text.replace("[", "【", 1).replace("]", "】", 1)
    return text.replace("[C: ", "[C：", 1)


@corruption("inconsistent", 2)
def _inconsistent(s: Sample) -> str | None:
    """A record that breaks the codebook (label and category disagree)."""
    category = "non_attack" if s.record.label == "harmful" else s.rng.choice(HARMFUL_CATEGORIES)
    return s.replace(category=category)


@corruption("drop_anchor", 3)
def _drop_anchor(s: Sample) -> str | None:
    anchor = s.anchors[s.rng.choice(FIELDS[1:])]
    return s.cot[: anchor.start] + s.cot[anchor.end :]


@corruption("duplicate_anchor", 2)
def _duplicate_anchor(s: Sample) -> str | None:
    return s.cot + "再次确认" + s.span("stance") + "。"


@corruption("swap_order", 2)
def _swap_order(s: Sample) -> str | None:
    """The label and category anchors trade places."""
    label, category = s.anchors["label"], s.anchors["category"]
    cot = s.cot
    return (
        cot[: label.start]
        + s.span("category")
        + cot[label.end : category.start]
        + s.span("label")
        + cot[category.end :]
    )


@corruption("invalid_value", 2)
def _invalid_value(s: Sample) -> str | None:
    return s.replace(label={"harmful": "harmfull", "non_harmful": "probably fine"}[s.record.label])


@corruption("empty", 1)
def _empty(s: Sample) -> str | None:
    return ""


@corruption("missing", 2)
def _missing(s: Sample) -> str | None:
    return None


def corrupt_rationale(
    reference: VarmReference, kind: str, rng: random.Random, other_targets: Sequence[str] = ()
) -> str | None:
    """The reference rationale with corruption ``kind`` applied; None means "no prediction".

    Requires a complete reference whose ``cot`` parses (the starter set's do).
    """
    if kind not in CORRUPTIONS:
        raise ValueError(
            f"unknown corruption {kind!r}{did_you_mean(kind, CORRUPTIONS)}; known: {', '.join(CORRUPTIONS)}"
        )
    if reference.cot is None:
        raise ValueError(f"reference {reference.id} has no rationale to corrupt")
    parsed = parse_rationale(reference.cot)
    if not parsed.ok:
        raise ValueError(f"reference {reference.id}: its rationale does not parse ({parsed.error_class})")
    anchors = {anchor.field: anchor for anchor in parsed.anchors}
    return CORRUPTIONS[kind](Sample(reference, reference.record(), reference.cot, anchors, rng, other_targets))


def demo_outputs(
    references: Sequence[VarmReference], seed: int = 0, mix: dict[str, int] | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """Seeded demonstration outputs: ``({id: output}, {id: corruption applied})``.

    Items drawn as ``missing`` get no output (they are scored as missing predictions).
    """
    weights = mix or DEFAULT_MIX
    rng = random.Random(seed)
    kinds = list(weights)
    targets = sorted({r.target for r in references if r.target is not None and r.target != NO_CLEAR_TARGET})
    outputs: dict[str, str] = {}
    applied: dict[str, str] = {}
    for reference in references:
        kind = rng.choices(kinds, weights=[weights[k] for k in kinds])[0]
        applied[reference.id] = kind
        output = corrupt_rationale(reference, kind, rng, targets)
        if output is not None:
            outputs[reference.id] = output
    return outputs, applied
