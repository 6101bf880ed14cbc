"""SoftHateBench human verification: annotator sheets, majority pass rates, Wilson intervals
and Fleiss' κ.

**Human verification sheets** (:func:`read_sheet`, :func:`write_sheet`): one row per
(item, annotator, criterion) — columns ``item_id``, ``annotator``, ``verdict``, optional
``criterion`` (default ``validity``; the paper's criteria are soft-hate validity, AMT
coherence, target identifiable) and ``tier``. Verdicts: ``yes``/``no`` (also ``pass``/``fail``,
``true``/``false``, ``1``/``0``, case-insensitive; JSON booleans). CSV, TSV, JSON or JSONL.
Bad input raises a one-line :class:`~verimod.core.errors.InputError` naming file, line and
field. :func:`verification_summary` gives, per criterion and tier, the pass rate (an item
passes when **more than half** of its verdicts are yes — the paper's three-annotator majority;
a tie fails), its Wilson interval, and Fleiss' κ (:func:`verimod.stats.fleiss_kappa` over the
yes/no counts, items with ≥ 2 verdicts).

**Wilson interval** (:func:`wilson_interval`) for k successes in n trials, p̂ = k/n,
z = Φ⁻¹(1 − α/2):
    centre = (p̂ + z²/(2n)) / (1 + z²/n),
    half   = z / (1 + z²/n) · sqrt(p̂(1 − p̂)/n + z²/(4n²)),
    [centre − half, centre + half]  (NaN, NaN for n = 0);
equal to ``statsmodels.stats.proportion.proportion_confint(k, n, method="wilson")``.

**Agreement with the authors' labels** (:func:`agreement_summary`, the paper's perception
check): on a ``hateful`` criterion, an item agrees when its majority verdict (more than half
``yes`` → hateful; more than half ``no`` → not hateful; a tie agrees with neither) equals its
gold label; the share of agreeing items, its Wilson interval and Fleiss' κ, overall and per
gold label.

>>> [round(x, 3) for x in wilson_interval(425, 500)]   # the paper's Softbase validity: 85.0% of 500
[0.816, 0.879]
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from verimod.core.errors import InputError, did_you_mean, shown
from verimod.data.jsonl import atomic_write, write_jsonl
from verimod.data.records import Format, read_records
from verimod.stats import RatingTable, fleiss_kappa, wilson_interval
from verimod.tasks.softhate.evaluation import TIERS, json_ready

_YES = frozenset({"yes", "y", "pass", "true", "1"})
_NO = frozenset({"no", "n", "fail", "false", "0"})
DEFAULT_CRITERION = "validity"
SHEET_COLUMNS: tuple[str, ...] = ("item_id", "annotator", "criterion", "tier", "verdict")


@dataclass(frozen=True)
class SheetRow:
    """One verdict of one annotator on one item for one criterion (``line``: its source line)."""

    item_id: str
    annotator: str
    verdict: bool
    criterion: str = DEFAULT_CRITERION
    tier: str | None = None
    line: int | None = None


def _verdict(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = str(value).strip().casefold()
    return True if text in _YES else False if text in _NO else None


def _optional(path: str, line: int, record: Mapping[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise InputError.at(path, line, name, f"expected a string, got {shown(value)}")
    return str(value).strip()


def _required(path: str, line: int, record: Mapping[str, Any], name: str) -> str:
    value = _optional(path, line, record, name)
    if value is None:
        raise InputError.at(path, line, name, "missing value" if name in record else "missing field")
    return value


def read_sheet(path: str | Path, fmt: Format | None = None, encoding: str | None = "auto") -> list[SheetRow]:
    """Read a human verification sheet (module docstring); every problem is an
    :class:`~verimod.core.errors.InputError` naming file, line and field."""
    name = str(path)
    rows: list[SheetRow] = []
    seen: dict[tuple[str, str, str], int] = {}
    tiers: dict[str, tuple[str, int]] = {}
    for line, record in read_records(name, fmt, encoding):
        item_id = _required(name, line, record, "item_id")
        annotator = _required(name, line, record, "annotator")
        criterion = _optional(name, line, record, "criterion") or DEFAULT_CRITERION
        tier = _optional(name, line, record, "tier")
        if "verdict" not in record or record["verdict"] is None or str(record["verdict"]).strip() == "":
            raise InputError.at(name, line, "verdict", "missing value" if "verdict" in record else "missing field")
        verdict = _verdict(record["verdict"])
        if verdict is None:
            hint = did_you_mean(str(record["verdict"]).strip(), sorted(_YES | _NO))
            raise InputError.at(name, line, "verdict", f"{shown(record['verdict'])} is not yes or no{hint}")
        key = (item_id, annotator, criterion)
        if key in seen:
            message = f"annotator {annotator!r} already judged item {item_id!r} ({criterion}) at line {seen[key]}"
            raise InputError.at(name, line, "annotator", message)
        seen[key] = line
        if tier is not None:
            earlier = tiers.setdefault(item_id, (tier, line))
            if earlier[0] != tier:
                message = f"item {item_id!r} has tier {tier!r} here but {earlier[0]!r} at line {earlier[1]}"
                raise InputError.at(name, line, "tier", message)
        rows.append(SheetRow(item_id, annotator, verdict, criterion, tier, line))
    return rows


def write_sheet(rows: Iterable[SheetRow], path: str | Path) -> int:
    """Write a sheet as CSV (``.csv``) or JSONL (``.jsonl``), verdicts as yes/no, atomically;
    returns the number of rows."""
    name = str(path)
    records = [
        {
            "item_id": r.item_id,
            "annotator": r.annotator,
            "criterion": r.criterion,
            "tier": r.tier or "",
            "verdict": "yes" if r.verdict else "no",
        }
        for r in rows
    ]
    if name.endswith(".jsonl"):
        return write_jsonl(name, records)
    if not name.endswith(".csv"):
        raise InputError.at(name, None, None, "a sheet is written as .csv or .jsonl")
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=list(SHEET_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    atomic_write(name, [buffer.getvalue().encode("utf-8")])
    return len(records)


@dataclass(frozen=True)
class VerificationSummary:
    """One criterion on one tier (``None``: all tiers): items, verdicts, items passed by
    majority, pass rate, its Wilson interval and Fleiss' κ."""

    criterion: str
    tier: str | None
    n_items: int
    n_verdicts: int
    passed: int
    pass_rate: float
    wilson_low: float
    wilson_high: float
    fleiss_kappa: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN becomes None)."""
        return json_ready(asdict(self))


def _yes_no_table(votes: Iterable[Counter[bool]]) -> RatingTable:
    """Items × (yes, no) verdict counts, for Fleiss' κ."""
    return RatingTable.from_counts([[v[True], v[False]] for v in votes], categories=("yes", "no"))


def _slice_order(key: tuple[str, str | None]) -> tuple[Any, ...]:
    criterion, tier = key
    return criterion, tier is not None, TIERS.index(tier) if tier in TIERS else len(TIERS), tier or ""


def verification_summary(
    rows: Iterable[SheetRow], tiers: Mapping[str, str] | None = None, confidence: float = 0.95
) -> list[VerificationSummary]:
    """Per criterion, for all items and per tier (from the sheet's ``tier`` column, else from
    ``tiers``): majority pass rate with its Wilson interval and Fleiss' κ (module docstring)."""
    counts: dict[tuple[str, str], Counter[bool]] = {}
    tier_of: dict[str, str | None] = {}
    for row in rows:
        counts.setdefault((row.criterion, row.item_id), Counter())[row.verdict] += 1
        tier_of[row.item_id] = row.tier or (tiers or {}).get(row.item_id)
    slices: dict[tuple[str, str | None], list[Counter[bool]]] = {}
    for (criterion, item_id), votes in counts.items():
        slices.setdefault((criterion, None), []).append(votes)
        if tier_of[item_id] is not None:
            slices.setdefault((criterion, tier_of[item_id]), []).append(votes)
    out = []
    for criterion, tier in sorted(slices, key=_slice_order):
        items = slices[(criterion, tier)]
        passed = sum(1 for v in items if v[True] > (v[True] + v[False]) / 2)
        low, high = wilson_interval(passed, len(items), confidence)
        table = _yes_no_table(items)
        out.append(
            VerificationSummary(
                criterion,
                tier,
                len(items),
                sum(v.total() for v in items),
                passed,
                passed / len(items),
                low,
                high,
                fleiss_kappa(table),
            )
        )
    return out


@dataclass(frozen=True)
class AgreementSummary:
    """Agreement of majority verdicts with gold labels on one criterion (``gold``: None for
    all items, else one gold label)."""

    criterion: str
    gold: str | None
    n_items: int
    agree: int
    rate: float
    wilson_low: float
    wilson_high: float
    fleiss_kappa: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN becomes None)."""
        return json_ready(asdict(self))


def agreement_summary(
    rows: Iterable[SheetRow], gold: Mapping[str, str], criterion: str = "hateful", confidence: float = 0.95
) -> list[AgreementSummary]:
    """Agreement with ``gold`` (item id → ``hate`` | ``non_hate``) of the majority verdicts on
    ``criterion`` (module docstring); items without a gold label raise ValueError."""
    counts: dict[str, Counter[bool]] = {}
    for row in rows:
        if row.criterion == criterion:
            counts.setdefault(row.item_id, Counter())[row.verdict] += 1
    missing = [i for i in counts if i not in gold]
    if missing:
        raise ValueError(f"item {missing[0]!r} on the sheet has no gold label among the items")
    out = []
    for label in (None, "hate", "non_hate"):
        ids = [i for i in counts if label is None or gold[i] == label]
        if not ids:
            continue
        agree = 0
        for item_id in ids:
            votes = counts[item_id]
            majority = True if votes[True] > votes[False] else False if votes[False] > votes[True] else None
            agree += majority is not None and majority == (gold[item_id] == "hate")
        low, high = wilson_interval(agree, len(ids), confidence)
        table = _yes_no_table([counts[i] for i in ids])
        out.append(
            AgreementSummary(criterion, label, len(ids), agree, agree / len(ids), low, high, fleiss_kappa(table))
        )
    return out
