"""Seeded, realistic corruptions of reference rationales: demonstration and benchmark outputs.

Each corruption imitates a failure seen in real model outputs — a wrong referent, quoted abuse
taken for the author's own, a right label with the wrong basis, lenient formatting, a broken
anchor. :func:`corrupt_rationale` applies one named corruption; :func:`demo_outputs` draws one
per item from :data:`DEFAULT_MIX` with a seeded generator, so the same seed gives the same file.
This is a stand-in for model outputs until a model is evaluated, and it says so wherever used.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Final

from verimod.tasks.varm.codebook import FIELDS, VOCABULARY
from verimod.tasks.varm.parser import parse_rationale
from verimod.tasks.varm.schema import VarmReference

HARMFUL_CATEGORIES: Final = tuple(c for c in VOCABULARY["category"] if c != "non_attack")
NON_ATTACK_STANCES: Final = ("oppose_attack", "quote_or_report", "neutral_mention")

#: Corruption name → weight in the demonstration mix (``keep`` = the reference rationale).
DEFAULT_MIX: Final = {
    "keep": 40,
    "wrong_target": 8,
    "partial_target": 6,
    "flip_label": 8,
    "wrong_category": 6,
    "wrong_stance": 5,
    "wrong_explicitness": 4,
    "wrong_type": 3,
    "lenient_format": 6,
    "inconsistent": 2,
    "drop_anchor": 3,
    "duplicate_anchor": 2,
    "swap_order": 2,
    "invalid_value": 2,
    "empty": 1,
    "missing": 2,
}


def _replace(cot: str, replacements: dict[str, str]) -> str:
    """Rewrite the canonical anchors of ``cot`` whose field is in ``replacements``."""
    result = parse_rationale(cot)
    pieces: list[str] = []
    cursor = 0
    for anchor in result.anchors:
        pieces.append(cot[cursor : anchor.start])
        written = cot[anchor.start : anchor.end]
        if anchor.field in replacements:
            tag = written[1 : written.index(":")]
            written = f"[{tag}: {replacements[anchor.field]}]"
        pieces.append(written)
        cursor = anchor.end
    pieces.append(cot[cursor:])
    return "".join(pieces)


def _other(values: Sequence[str], current: str, rng: random.Random) -> str:
    return rng.choice([v for v in values if v != current])


def corrupt_rationale(
    reference: VarmReference, kind: str, rng: random.Random, other_targets: Sequence[str] = ()
) -> str | None:
    """The reference rationale with corruption ``kind`` applied; None means "no prediction".

    Requires a reference ``cot`` that passes Format (the starter set's do).
    """
    cot = reference.cot
    if cot is None:
        raise ValueError(f"reference {reference.id} has no rationale to corrupt")
    anchors = {a.field: a for a in parse_rationale(cot).anchors}
    if kind == "keep":
        return cot
    if kind == "missing":
        return None
    if kind == "empty":
        return ""
    if kind == "wrong_target":
        pool = [t for t in other_targets if t != reference.target] or ["评论区的人"]
        return _replace(cot, {"target": rng.choice(pool)})
    if kind == "partial_target":
        target = reference.target
        if target == "no_clear_target" or len(target) < 2:
            return _replace(cot, {"target": "作者本人"})
        return _replace(cot, {"target": target[: max(1, len(target) // 2)]})
    if kind == "flip_label":
        if reference.label == "harmful":
            return _replace(cot, {"label": "non_harmful", "category": "non_attack"})
        return _replace(
            cot,
            {"stance": "attack_or_endorse", "label": "harmful", "category": rng.choice(HARMFUL_CATEGORIES)},
        )
    if kind == "wrong_category":
        if reference.label == "harmful":
            return _replace(cot, {"category": _other(HARMFUL_CATEGORIES, reference.category, rng)})
        return _replace(cot, {"label": "harmful", "category": rng.choice(HARMFUL_CATEGORIES)})
    if kind == "wrong_stance":
        if reference.label == "harmful":
            return _replace(
                cot,
                {"stance": rng.choice(NON_ATTACK_STANCES), "label": "non_harmful", "category": "non_attack"},
            )
        return _replace(cot, {"stance": _other(VOCABULARY["stance"], reference.stance, rng)})
    if kind == "wrong_explicitness":
        flipped = {"explicit": "implicit", "implicit": "explicit"}.get(reference.target_explicitness, "explicit")
        return _replace(cot, {"target_explicitness": flipped})
    if kind == "wrong_type":
        flipped = {"single": "group", "group": "single"}.get(reference.target_type, "group")
        return _replace(cot, {"target_type": flipped})
    if kind == "lenient_format":
        label = {"harmful": "Harmful", "non_harmful": "non-harmful"}[reference.label]
        text = _replace(cot, {"label": label, "stance": reference.stance.replace("_", " ")})
        return text.replace("[", "【", 2).replace("]", "】", 2).replace("[TY: ", "[TY：", 1)
    if kind == "inconsistent":
        category = "non_attack" if reference.label == "harmful" else rng.choice(HARMFUL_CATEGORIES)
        return _replace(cot, {"category": category})
    if kind == "drop_anchor":
        anchor = anchors[rng.choice(FIELDS[1:])]
        return cot[: anchor.start] + cot[anchor.end :]
    if kind == "duplicate_anchor":
        anchor = anchors["stance"]
        return cot + "再次确认" + cot[anchor.start : anchor.end] + "。"
    if kind == "swap_order":
        first, second = anchors["label"], anchors["category"]
        return (
            cot[: first.start]
            + cot[second.start : second.end]
            + cot[first.end : second.start]
            + cot[first.start : first.end]
            + cot[second.end :]
        )
    if kind == "invalid_value":
        return _replace(cot, {"label": {"harmful": "harmfull", "non_harmful": "probably fine"}[reference.label]})
    raise ValueError(f"unknown corruption {kind!r}; known: {', '.join(DEFAULT_MIX)}")


def demo_outputs(
    references: Sequence[VarmReference], seed: int = 0, mix: dict[str, int] | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """Seeded demonstration outputs: ``({id: output}, {id: corruption applied})``.

    Items drawn as ``missing`` get no output (they are scored as missing predictions).
    """
    weights = mix or DEFAULT_MIX
    rng = random.Random(seed)
    kinds = list(weights)
    targets = sorted({r.target for r in references if r.target != "no_clear_target"})
    outputs: dict[str, str] = {}
    applied: dict[str, str] = {}
    for reference in references:
        kind = rng.choices(kinds, weights=[weights[k] for k in kinds])[0]
        applied[reference.id] = kind
        output = corrupt_rationale(reference, kind, rng, targets)
        if output is not None:
            outputs[reference.id] = output
    return outputs, applied
