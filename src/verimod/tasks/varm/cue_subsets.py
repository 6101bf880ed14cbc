"""Lexical-cue challenge subsets (see :mod:`verimod.tasks.varm.cues`): for each cue family,
the labelled items whose text bears a cue, sampled to an exact harmful : non-harmful ratio,
deterministically per seed; written as VARM references with ``meta.cues``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict

from verimod.core.errors import InputError, shown
from verimod.data.jsonl import write_jsonl
from verimod.tasks.varm.cue_lexicons import CueMatcher, Lexicon, matcher_of
from verimod.tasks.varm.schema import VarmReference

#: The paper's harmful : non-harmful ratio of each challenge subset.
DEFAULT_RATIO: Final = (60, 40)


# ------------------------------------------------------------------------------------ subsets


class FamilySubsetStats(BaseModel):
    """How one family's challenge subset was drawn.

    ``available_*``: labelled items whose text bears the family's cues (``unlabelled``:
    cue-bearing items without a reference label, never drawn). ``selected_*``: drawn, in the
    exact ratio. ``requested_*``: with ``per_family`` the requested split, else None (as many as
    the ratio allows). ``shortfall_*``: items of that side missing — with ``per_family``, to fill
    the request; without, to use every available item of the *other* side at the ratio. A side
    with a positive shortfall limited the subset."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    family: str
    lexicon_version: str
    available_harmful: int
    available_non_harmful: int
    unlabelled: int
    selected_harmful: int
    selected_non_harmful: int
    requested_harmful: int | None
    requested_non_harmful: int | None
    shortfall_harmful: int
    shortfall_non_harmful: int

    def shortfall_note(self) -> str | None:
        """One line describing a shortfall, or None when there is none."""
        parts = [
            f"{side} side short by {short} (has {available})"
            for side, short, available in (
                ("harmful", self.shortfall_harmful, self.available_harmful),
                ("non-harmful", self.shortfall_non_harmful, self.available_non_harmful),
            )
            if short
        ]
        return f"{self.family}: {'; '.join(parts)}" if parts else None


class CueSubsetSummary(BaseModel):
    """The settings and per-family statistics of a challenge subset (JSON-ready)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ratio: tuple[int, int]
    seed: int
    per_family: int | None
    lexicons: dict[str, str]
    n_references: int
    n_items: int
    families: list[FamilySubsetStats]


@dataclass(frozen=True)
class CueSubsetItem:
    """One reference drawn into at least one family's subset."""

    reference: VarmReference
    matches: dict[str, tuple[str, ...]]  # every family whose cues occur → the terms (evidence)
    subsets: tuple[str, ...]  # the families whose subset drew it


@dataclass(frozen=True)
class CueSubset:
    """The challenge subsets: items in reference order, and how each family's subset was drawn."""

    items: tuple[CueSubsetItem, ...]
    summary: CueSubsetSummary

    def ids_by_family(self) -> dict[str, set[str]]:
        """Family → ids of its subset (every family of the summary, possibly empty)."""
        ids: dict[str, set[str]] = {stats.family: set() for stats in self.summary.families}
        for item in self.items:
            for family in item.subsets:
                ids[family].add(item.reference.id)
        return ids

    def references(self) -> list[VarmReference]:
        """The items as VARM references whose ``meta.cues`` records ``subsets`` (the families
        that drew the item), ``matches`` (family → terms), ``seed``, ``ratio`` and ``lexicons``
        (family → version); other ``meta`` keys are kept."""
        common = {
            "seed": self.summary.seed,
            "ratio": list(self.summary.ratio),
            "lexicons": dict(self.summary.lexicons),
        }
        out = []
        for item in self.items:
            cues = {"subsets": list(item.subsets), "matches": {f: list(t) for f, t in item.matches.items()}, **common}
            meta = {**(item.reference.meta or {}), "cues": cues}
            out.append(item.reference.model_copy(update={"meta": meta}))
        return out


def _reduced(ratio: tuple[int, int]) -> tuple[int, int]:
    if len(ratio) != 2 or any(isinstance(r, bool) or not isinstance(r, int) or r < 1 for r in ratio):
        raise InputError.at("--ratio", None, None, f"must be two positive integers H:NH, got {shown(ratio)}")
    divisor = math.gcd(*ratio)
    return ratio[0] // divisor, ratio[1] // divisor


def _rank(seed: int, family: str, item_id: str) -> str:
    return hashlib.sha256(f"{seed}:{family}:{item_id}".encode("utf-8", "surrogatepass")).hexdigest()


def _draw(
    harmful: int, non_harmful: int, unit: tuple[int, int], per_family: int | None
) -> tuple[int, int | None, int, int]:
    """Units drawn, units requested (None: as many as possible), harmful and non-harmful shortfall."""
    a, b = unit
    possible = min(harmful // a, non_harmful // b)
    if per_family is None:
        short_h = max(0, math.ceil(non_harmful / b) * a - harmful)
        short_nh = max(0, math.ceil(harmful / a) * b - non_harmful)
        return possible, None, short_h, short_nh
    wanted = per_family // (a + b)
    return min(possible, wanted), wanted, max(0, wanted * a - harmful), max(0, wanted * b - non_harmful)


def build_cue_subset(
    references: Sequence[VarmReference],
    family_lexicons: Iterable[Lexicon] | CueMatcher,
    ratio: tuple[int, int] = DEFAULT_RATIO,
    seed: int = 0,
    per_family: int | None = None,
) -> CueSubset:
    """Draw one challenge subset per cue family with an exact harmful : non-harmful ratio.

    For each family, the pool is the references with a label whose text bears one of the
    family's terms. With the ratio reduced to lowest terms a:b (60:40 → 3:2), the family's subset
    has k·a harmful and k·b non-harmful items, k as large as the pool allows — and, with
    ``per_family=N``, at most N // (a+b) (N is rounded down to whole ratio units). Which items
    are drawn on each side is decided by ranking them on sha256(seed, family, id): deterministic
    per seed, independent of the input order and of the other families. A shortfall (a side too
    small) is reported in the family's :class:`FamilySubsetStats`. An item may bear several
    families' cues and be drawn into several subsets; it appears once in the result.

    Raises :class:`InputError` for a bad ``ratio`` or ``per_family`` and ``ValueError`` for
    duplicate reference ids or lexicon families."""
    unit = _reduced(ratio)
    if per_family is not None and per_family < sum(unit):
        raise InputError.at(
            "--per-family", None, None, f"must be at least {sum(unit)} for the ratio {ratio[0]}:{ratio[1]}"
        )
    ids = [r.id for r in references]
    if len(set(ids)) != len(ids):
        raise ValueError("references must have distinct ids")
    matcher = matcher_of(family_lexicons)
    matches = [matcher.match(r.text) for r in references]
    drawn: list[list[str]] = [[] for _ in references]
    stats = []
    for family in matcher.families:
        pools: dict[str, list[int]] = {"harmful": [], "non_harmful": []}
        unlabelled = 0
        for index, (reference, found) in enumerate(zip(references, matches, strict=True)):
            if family in found:
                if reference.label is None:
                    unlabelled += 1
                else:
                    pools[reference.label].append(index)
        units, wanted, short_h, short_nh = _draw(len(pools["harmful"]), len(pools["non_harmful"]), unit, per_family)
        for side, size in (("harmful", units * unit[0]), ("non_harmful", units * unit[1])):
            ranked = sorted(pools[side], key=lambda i: (_rank(seed, family, references[i].id), i))
            for index in ranked[:size]:
                drawn[index].append(family)
        stats.append(
            FamilySubsetStats(
                family=family,
                lexicon_version=matcher.versions[family],
                available_harmful=len(pools["harmful"]),
                available_non_harmful=len(pools["non_harmful"]),
                unlabelled=unlabelled,
                selected_harmful=units * unit[0],
                selected_non_harmful=units * unit[1],
                requested_harmful=None if wanted is None else wanted * unit[0],
                requested_non_harmful=None if wanted is None else wanted * unit[1],
                shortfall_harmful=short_h,
                shortfall_non_harmful=short_nh,
            )
        )
    items = tuple(
        CueSubsetItem(reference, found, tuple(families))
        for reference, found, families in zip(references, matches, drawn, strict=True)
        if families
    )
    summary = CueSubsetSummary(
        ratio=(ratio[0], ratio[1]),
        seed=seed,
        per_family=per_family,
        lexicons=dict(matcher.versions),
        n_references=len(references),
        n_items=len(items),
        families=stats,
    )
    return CueSubset(items, summary)


def write_cue_subset(path: str | Path, subset: CueSubset) -> int:
    """Write the subset as a VARM reference JSONL file (atomically); return the line count.

    Each line is the reference with ``meta.cues`` (see :meth:`CueSubset.references`); the file
    reads back with :func:`verimod.tasks.varm.io.load_references`."""
    rows = (r.model_dump(mode="json", exclude_none=True) for r in subset.references())
    return write_jsonl(path, rows)


def cue_subset_ids(references: Iterable[VarmReference], source: str = "references") -> dict[str, set[str]]:
    """Family → ids, from the ``meta.cues.subsets`` of references written by
    :func:`write_cue_subset` (or of a run evaluated on such a file). References without
    ``meta.cues`` are skipped; a malformed one is an :class:`InputError` naming ``source``."""
    ids: dict[str, set[str]] = {}
    for reference in references:
        cues = (reference.meta or {}).get("cues")
        if cues is None:
            continue
        families = cues.get("subsets") if isinstance(cues, dict) else None
        if not isinstance(families, list) or not all(isinstance(f, str) for f in families):
            raise InputError.at(
                source, None, "meta.cues.subsets", f"item {shown(reference.id)}: must be a list of family names"
            )
        for family in families:
            ids.setdefault(family, set()).add(reference.id)
    return ids
