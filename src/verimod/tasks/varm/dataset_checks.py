"""Data-set checks of a split reference file (``verimod validate --splits``).

- Every item has a ``split``.
- No near-duplicate pair (RapidFuzz ``fuzz.ratio`` ≥ ``threshold``, exact duplicates included)
  spans two splits: each such pair is reported at the later line, naming the other.
- Label and category proportions per split stay within ``max_drift_pp`` percentage points of
  the whole file's (over the items that carry the field) — or the drift is within chance: a
  drift is a problem only when it also differs significantly from the rest of the file, by a
  two-sided two-proportion z-test of the split against the other items (pooled proportion
  p̂, z = (p_split − p_rest) / √(p̂(1 − p̂)(1/n_split + 1/n_rest)), p-value erfc(|z|/√2)) at
  ``drift_alpha`` (default 0.01; 1.0 flags every drift over ``max_drift_pp``). A small split
  drifts by chance: 7 % of 415 items has a standard error of 1.25 points.
"""

from __future__ import annotations

import math
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
    drift_alpha: float = Field(0.01, ge=0, le=1)


def two_proportion_p_value(count_a: int, n_a: int, count_b: int, n_b: int) -> float:
    """Two-sided p-value of the pooled two-proportion z-test of count_a/n_a against count_b/n_b
    (1.0 when either group is empty or the pooled proportion is 0 or 1).

    >>> round(two_proportion_p_value(36, 415, 187, 2685), 3)
    0.203
    """
    if n_a == 0 or n_b == 0:
        return 1.0
    pooled = (count_a + count_b) / (n_a + n_b)
    if pooled in (0.0, 1.0):
        return 1.0
    z = (count_a / n_a - count_b / n_b) / math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    return math.erfc(abs(z) / math.sqrt(2))


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
                inside = part.get(value, 0)
                share = 100 * inside / total
                whole = 100 * count / len(carrying)
                p_value = two_proportion_p_value(inside, total, count - inside, len(carrying) - total)
                if abs(share - whole) > checks.max_drift_pp and p_value < checks.drift_alpha:
                    problems.append(
                        Problem(
                            path,
                            None,
                            "split",
                            f"split {split!r}: {field} {value!r} is {share:.1f}% vs "
                            f"{whole:.1f}% overall (drift {share - whole:+.1f} pp > {checks.max_drift_pp:g}, "
                            f"p = {p_value:.2g} < {checks.drift_alpha:g} against the other splits)",
                        )
                    )
    return problems
