"""Stage 3 of SoftHateBench: keep the best softbase items per group, then the annotator check.

**Selection by Ψ** (:func:`select_top`): the softbase items are grouped by their target's
Level-2 group; in a group of N_c items the top ``min(top, N_c)`` by the winning chain's score Ψ
(``search.winner.psi``) are kept, ties by item id; ``top`` is the paper's 300. Items of other
gold labels (non-hate controls) are selected separately, per (gold, group). Every group's N_c,
the number kept and the lowest Ψ kept are reported.

**Annotator check** (:func:`check_rows`, :func:`apply_check`): trained annotators judge every
selected item on three criteria — ``coherence`` (the AMT chain holds together),
``policy_compliance`` (no insult, slur, threat or call to violence: surface-polite) and
``validity`` (it is soft hate: the text leads a reader to the hostile standpoint; for a
non-hate control, that it does *not*) — one ``yes``/``no`` verdict per (item, annotator,
criterion), in the sheet format of :mod:`verimod.tasks.softhate.verification`. An item is
admitted when, for every criterion, more than half of its verdicts are ``yes`` (three
annotators: at least two). A selected item without a verdict on some criterion, or a verdict
on an item that was not selected, is an error naming the item: nothing is admitted or dropped
by omission.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from verimod.core.errors import InputError
from verimod.tasks.softhate.schema import GeneratedItem, Tier
from verimod.tasks.softhate.verification import SheetRow

PAPER_TOP: Final = 300
CRITERIA: Final[tuple[str, ...]] = ("coherence", "policy_compliance", "validity")


def psi(item: GeneratedItem) -> float:
    """Ψ of the item's winning chain (ValueError for an item without one)."""
    if item.search is None or item.search.winner is None:
        raise ValueError(f"item {item.id!r} has no winning chain (not a softbase item from a search)")
    return item.search.winner.psi


@dataclass(frozen=True)
class GroupCount:
    """One (gold, group): its items, how many were kept, and the lowest Ψ kept."""

    gold: str
    level1: str
    group: str
    available: int
    kept: int
    lowest_psi: float | None


@dataclass(frozen=True)
class Selection:
    """The kept items (per group best Ψ first, groups in order of first appearance) and the
    per-group counts."""

    items: list[GeneratedItem]
    groups: list[GroupCount]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts and the kept ids."""
        return {"kept": [i.id for i in self.items], "groups": [asdict(g) for g in self.groups]}


def select_top(items: Sequence[GeneratedItem], top: int = PAPER_TOP) -> Selection:
    """The top ``min(top, N_c)`` softbase items of every (gold, Level-2 group) by Ψ (module
    docstring). Items of another tier or without an AMT raise ValueError."""
    if top < 1:
        raise ValueError(f"top must be at least 1, got {top}")
    grouped: dict[tuple[str, str], list[GeneratedItem]] = {}
    level1: dict[tuple[str, str], str] = {}
    for item in items:
        if item.tier is not Tier.SOFTBASE or item.amt is None:
            raise ValueError(f"item {item.id!r} is not a softbase item with its AMT")
        key: tuple[str, str] = (item.gold, item.amt.target.level2)
        grouped.setdefault(key, []).append(item)
        level1[key] = item.amt.target.level1.value
    kept: list[GeneratedItem] = []
    counts = []
    for key, members in grouped.items():
        ranked = sorted(members, key=lambda i: (-psi(i), i.id))[:top]
        kept.extend(ranked)
        lowest = psi(ranked[-1]) if ranked else None
        counts.append(GroupCount(key[0], level1[key], key[1], len(members), len(ranked), lowest))
    return Selection(kept, counts)


def check_rows(
    items: Sequence[GeneratedItem], annotators: Sequence[str], criteria: Sequence[str] = CRITERIA
) -> list[dict[str, str]]:
    """The blank annotator-check sheet: one row per (item, annotator, criterion) with the
    item's text, tier, standpoint and AMT parts for the annotator, and an empty verdict."""
    if not annotators or len(set(annotators)) != len(annotators):
        raise ValueError("give one or more distinct annotator names")
    rows = []
    for item in items:
        amt = item.amt
        for annotator in annotators:
            for criterion in criteria:
                rows.append(
                    {
                        "item_id": item.id,
                        "annotator": annotator,
                        "criterion": criterion,
                        "tier": item.tier.value,
                        "verdict": "",
                        "text": item.text,
                        "standpoint": amt.standpoint if amt else "",
                        "premise": amt.premise if amt else "",
                        "maxim": amt.maxim if amt else "",
                        "target": amt.target.name if amt else "",
                    }
                )
    return rows


@dataclass(frozen=True)
class CheckOutcome:
    """Admitted items (in selection order) and, per criterion, how many items passed."""

    admitted: list[GeneratedItem]
    passed: dict[str, int]
    rejected: dict[str, list[str]]  # item id → the criteria it failed


def apply_check(
    items: Sequence[GeneratedItem], rows: Iterable[SheetRow], criteria: Sequence[str] = CRITERIA, where: str = "sheet"
) -> CheckOutcome:
    """Admit the items that pass every criterion by majority (module docstring); ``where``
    names the sheet in errors."""
    ids = {item.id for item in items}
    votes: dict[tuple[str, str], Counter[bool]] = {}
    for row in rows:
        if row.item_id not in ids:
            raise InputError.at(where, row.line, "item_id", f"item {row.item_id!r} is not among the selected items")
        if row.criterion not in criteria:
            raise InputError.at(where, row.line, "criterion", f"{row.criterion!r} is not one of {', '.join(criteria)}")
        votes.setdefault((row.item_id, row.criterion), Counter())[row.verdict] += 1
    admitted, rejected = [], {}
    passed: Counter[str] = Counter()
    for item in items:
        failed = []
        for criterion in criteria:
            count = votes.get((item.id, criterion))
            if count is None:
                raise InputError.at(where, None, "verdict", f"item {item.id!r} has no verdict on {criterion}")
            if count[True] > count.total() / 2:
                passed[criterion] += 1
            else:
                failed.append(criterion)
        if failed:
            rejected[item.id] = failed
        else:
            admitted.append(item)
    return CheckOutcome(admitted, {c: passed[c] for c in criteria}, rejected)
