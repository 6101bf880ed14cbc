"""Data-set checks of a split reference file (``verimod validate --splits``).

- Every item has a ``split``.
- No near-duplicate pair (RapidFuzz ``fuzz.ratio`` ≥ ``threshold``, exact duplicates included)
  spans two splits: each such pair is reported at the later line, naming the other.
- Label and category proportions per split stay within ``max_drift_pp`` percentage points of
  the whole file's (over the items that carry the field).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from verimod.core.errors import Problem
from verimod.data.neardup import near_duplicate_pairs
from verimod.tasks.varm.schema import VarmReference

DRIFT_FIELDS = ("label", "category")


class SplitChecks(BaseModel):
    """Settings of the split checks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    threshold: float = Field(95.0, ge=0, le=100)
    max_drift_pp: float = Field(1.0, ge=0)


def split_problems(path: str, items: Sequence[tuple[int, VarmReference]], checks: SplitChecks) -> list[Problem]:
    """Problems of the split checks over ``(line, reference)`` items (see the module docstring)."""
    problems = [Problem(path, line, "split", "missing (every item needs a split)") for line, r in items if not r.split]
    texts = [r.text for _, r in items]
    for i, j, score in near_duplicate_pairs(texts, checks.threshold):
        (line_i, a), (line_j, b) = items[int(i)], items[int(j)]
        if a.split != b.split:
            problems.append(
                Problem(
                    path,
                    line_j,
                    "split",
                    f"near-duplicate (fuzz.ratio {score:.1f}) of line {line_i} "
                    f"in split {a.split!r} but in split {b.split!r}: near-duplicates must share a split",
                )
            )
    splits = sorted({r.split for _, r in items if r.split})
    for field in DRIFT_FIELDS:
        carrying = [r for _, r in items if getattr(r, field) is not None and r.split]
        overall = Counter(getattr(r, field) for r in carrying)
        for split in splits:
            part = Counter(getattr(r, field) for r in carrying if r.split == split)
            total = sum(part.values())
            if total == 0:
                continue
            for value, count in sorted(overall.items()):
                share = 100 * part.get(value, 0) / total
                whole = 100 * count / len(carrying)
                if abs(share - whole) > checks.max_drift_pp:
                    problems.append(
                        Problem(
                            path,
                            None,
                            "split",
                            f"split {split!r}: {field} {value!r} is {share:.1f}% vs "
                            f"{whole:.1f}% overall (drift {share - whole:+.1f} pp > {checks.max_drift_pp:g})",
                        )
                    )
    return problems
