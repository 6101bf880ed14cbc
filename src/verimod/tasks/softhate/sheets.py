"""Sampling human-verification sheets for SoftHateBench (the paper's Section 6).

Two kinds, both seeded (the same items, seed and size give the same sheet):

- **structure** (:func:`sample_structure`): ``n`` tier-matched triples — the softbase, softgv
  and softhv items made from one standpoint (the paper: 500 triples, 1,500 items) — drawn
  uniformly from the standpoints that have all three; each item is judged on ``validity``
  (soft-hate validity), ``coherence`` (AMT coherence) and ``target_identifiable``. Only items
  of one gold label (``hate`` by default) are drawn.
- **perception** (:func:`sample_perception`): ``n`` hate and ``n`` non-hate items (balanced;
  the paper: 500 in all), drawn uniformly from the given tiers and shuffled; each is judged on
  ``hateful``. The item's gold label is not on the sheet: the report reads it from the items
  and gives the share of items whose majority verdict agrees
  (:func:`verimod.tasks.softhate.verification.agreement_summary`).

A sheet is a CSV with one row per (item, annotator, criterion): ``item_id``, ``annotator``,
``criterion``, ``tier``, an empty ``verdict`` for the annotator to fill (yes / no), and the
``text``. Asking for more triples or items than exist is an error that says how many exist.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from verimod.data.jsonl import atomic_write
from verimod.tasks.softhate.items import BenchItem

STRUCTURE_CRITERIA: Final[tuple[str, ...]] = ("validity", "coherence", "target_identifiable")
PERCEPTION_CRITERIA: Final[tuple[str, ...]] = ("hateful",)
TRIPLE_TIERS: Final[tuple[str, ...]] = ("softbase", "softgv", "softhv")
SHEET_FIELDS: Final[tuple[str, ...]] = ("item_id", "annotator", "criterion", "tier", "verdict", "text")


def sample_structure(items: Sequence[BenchItem], n: int, seed: int = 0, gold: str = "hate") -> list[BenchItem]:
    """``n`` tier-matched triples (module docstring), triples in sampled order, each as
    softbase, softgv, softhv. A standpoint with several items of a tier (several loci)
    contributes its first of each."""
    triples: dict[str, dict[str, BenchItem]] = {}
    for item in items:
        e = item.item
        if e.gold == gold and e.pair is not None and e.tier in TRIPLE_TIERS and e.condition is None:
            triples.setdefault(e.pair, {}).setdefault(e.tier, item)
    complete = sorted(pair for pair, found in triples.items() if len(found) == len(TRIPLE_TIERS))
    if n > len(complete):
        raise ValueError(f"asked for {n} triples, but only {len(complete)} standpoints have all of {TRIPLE_TIERS}")
    chosen = random.Random(seed).sample(complete, n)
    return [triples[pair][tier] for pair in chosen for tier in TRIPLE_TIERS]


def sample_perception(
    items: Sequence[BenchItem], n: int, seed: int = 0, tiers: Sequence[str] = TRIPLE_TIERS
) -> list[BenchItem]:
    """``n`` hate and ``n`` non-hate items of ``tiers``, shuffled (module docstring)."""
    rng = random.Random(seed)
    chosen: list[BenchItem] = []
    for gold in ("hate", "non_hate"):
        pool = sorted(
            (i for i in items if i.item.gold == gold and i.item.tier in tiers and i.item.condition is None),
            key=lambda i: i.id,
        )
        if n > len(pool):
            raise ValueError(f"asked for {n} {gold} items, but the tiers {', '.join(tiers)} hold {len(pool)}")
        chosen.extend(rng.sample(pool, n))
    rng.shuffle(chosen)
    return chosen


def sheet_rows(items: Sequence[BenchItem], annotators: Sequence[str], criteria: Sequence[str]) -> list[dict[str, str]]:
    """One blank row per (item, annotator, criterion), in that order."""
    if not annotators or len(set(annotators)) != len(annotators):
        raise ValueError("give one or more distinct annotator names")
    return [
        {"item_id": i.id, "annotator": a, "criterion": c, "tier": i.item.tier or "", "verdict": "", "text": i.text}
        for i in items
        for a in annotators
        for c in criteria
    ]


def write_blank_sheet(rows: Sequence[dict[str, str]], path: str | Path) -> int:
    """Write sheet rows as UTF-8 CSV (the columns of the first row), atomically; the count."""
    buffer = io.StringIO(newline="")
    fields = list(rows[0]) if rows else list(SHEET_FIELDS)
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(path, [buffer.getvalue().encode("utf-8")])
    return len(rows)
