"""An audit folder (``verimod review audit``) as a review queue.

:func:`load_queue` reads ``items.jsonl``, ``checks.jsonl`` and ``routing.jsonl`` (and the judge
votes of ``judgements.jsonl`` when present): the queue is the routed items in routing order.
:func:`highlight` cuts a rationale into segments, each with the CSS classes of what covers it —
``anchor anchor-<field>`` for the six anchors, ``evidence`` for spans a failed check cited — so
the page can mark them; the text of each segment is escaped by the template, never trusted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verimod.core.errors import InputError
from verimod.data.jsonl import read_jsonl
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.parser import parse_rationale


@dataclass(frozen=True)
class QueueItem:
    """One routed item with everything the reviewer sees."""

    id: str
    item_id: str
    system: str
    text: str
    context: str | None
    rationale: str
    reference: dict[str, Any] | None
    reasons: tuple[str, ...]
    checks: tuple[dict[str, Any], ...]
    votes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def record(self) -> dict[str, str] | None:
        """The record parsed from the rationale (None when it does not parse)."""
        parsed = parse_rationale(self.rationale)
        return None if parsed.values is None else dict(zip(FIELDS, parsed.values, strict=True))

    @property
    def failed_checks(self) -> list[dict[str, Any]]:
        """The checks that failed, with their details."""
        return [c for c in self.checks if c.get("verdict") == "fail"]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [row for _, row in read_jsonl(path)] if path.exists() else []


def audit_seed(audit_dir: Path) -> int:
    """The seed ``review audit`` recorded in the folder's ``summary.json`` (0 when absent)."""
    path = audit_dir / "summary.json"
    if not path.is_file():
        return 0
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError.at(str(path), None, None, f"not JSON: {exc}") from None
    seed = summary.get("seed", 0) if isinstance(summary, dict) else 0
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else 0


def load_queue(audit_dir: Path) -> list[QueueItem]:
    """The routed items of an audit folder, in routing order."""
    for name in ("items.jsonl", "checks.jsonl", "routing.jsonl"):
        if not (audit_dir / name).is_file():
            raise InputError.at(str(audit_dir / name), None, None, "missing: run `verimod review audit` first")
    items = {row["id"]: row for row in _lines(audit_dir / "items.jsonl")}
    checks = {row["id"]: row for row in _lines(audit_dir / "checks.jsonl")}
    votes: dict[str, dict[str, list[str]]] = {}
    for row in _lines(audit_dir / "judgements.jsonl"):
        for dimension, vote in (row.get("votes") or {}).items():
            votes.setdefault(row["item_id"], {}).setdefault(dimension, []).append(str(vote))
    queue = []
    for line, row in read_jsonl(audit_dir / "routing.jsonl"):
        item = items.get(row.get("id"))
        if item is None:
            raise InputError.at(
                str(audit_dir / "routing.jsonl"), line, "id", f"no item {row.get('id')!r} in items.jsonl"
            )
        queue.append(
            QueueItem(
                id=item["id"],
                item_id=item.get("item_id", item["id"]),
                system=item.get("system") or "",
                text=item["text"],
                context=item.get("context"),
                rationale=item.get("rationale") or "",
                reference=item.get("reference"),
                reasons=tuple(row.get("reasons", [])),
                checks=tuple(checks.get(item["id"], {}).get("checks", [])),
                votes=votes.get(item["id"], {}),
            )
        )
    return queue


@dataclass(frozen=True)
class Segment:
    """A run of rationale text with the classes that cover it."""

    text: str
    classes: str


def highlight(rationale: str, evidence: Sequence[tuple[int, int]]) -> list[Segment]:
    """The rationale as segments (module docstring)."""
    marks: list[set[str]] = [set() for _ in rationale]
    for anchor in parse_rationale(rationale).anchors:
        for k in range(max(0, anchor.start), min(len(rationale), anchor.end)):
            marks[k] |= {"anchor", f"anchor-{anchor.field}"}
    for start, end in evidence:
        for k in range(max(0, start), min(len(rationale), end)):
            marks[k].add("evidence")
    segments: list[Segment] = []
    for k, ch in enumerate(rationale):
        classes = " ".join(sorted(marks[k]))
        if segments and segments[-1].classes == classes:
            segments[-1] = Segment(segments[-1].text + ch, classes)
        else:
            segments.append(Segment(ch, classes))
    return segments


def evidence_spans(item: QueueItem) -> list[tuple[int, int]]:
    """The spans cited by the item's failed checks."""
    return [(int(e["start"]), int(e["end"])) for c in item.failed_checks for e in c.get("evidence", [])]


def dumps(value: Any) -> str:
    """Compact JSON for display."""
    return json.dumps(value, ensure_ascii=False)
