"""The adjudicated references of a review: corrections applied, checked, conflicts routed.

:func:`adjudicate` applies the reviewers' corrections (:class:`~.audit_review.Decision`) to the
reference records of the audited items (one record per source item id, whichever of its audit
ids the decisions name) and guarantees that what it returns would pass ``verimod validate``:

- **Conflicts are never settled by order.** When reviewers propose different values for one
  field of one item, the item is a :class:`Conflict` (every proposal with its reviewers), not
  "last one wins". An *adjudicator*'s decision on an item is final: its corrections replace
  every other reviewer's on that item (a field it leaves empty keeps the reference's value);
  two adjudicators who disagree are a conflict again. Reviewers who agree are no conflict.
- **Anchors follow the record.** When the corrected record has a reference rationale
  (``cot``) that parses, the anchor of every corrected field whose value no longer matches is
  rewritten to the canonical ``[TAG: value]`` of the new value, and the record says so in
  ``meta.review.rederived_anchors`` — the words around the anchor were not reviewed, and may
  need a look. Anchors of fields nobody corrected are left alone.
- **Every corrected record is validated** as ``verimod validate`` does (admissible values,
  completeness when the reference was complete, codebook constraints, rationale format and
  anchors equal to the record). A record that fails is a :class:`Refusal` naming the item, the
  first broken rule and the corrections behind it.

Records nobody corrected are returned unchanged. A corrected record carries ``meta.review``:
``corrected`` (fields), ``reviewers`` (everyone who decided the item), ``adjudicated_by`` (when
an adjudicator settled it) and ``rederived_anchors`` (when anchors were rewritten).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from verimod.tasks.varm.audit_review import AuditSubject, Decision
from verimod.tasks.varm.codebook import CANONICAL_TAGS, FIELDS
from verimod.tasks.varm.io import record_problems
from verimod.tasks.varm.parser import parse_rationale


@dataclass(frozen=True)
class Conflict:
    """Different values proposed for fields of one item: field → value → reviewers."""

    item_id: str
    audit_id: str  # the audit id of the item's first rationale (for the adjudication sheet)
    proposals: dict[str, dict[str, list[str]]]

    def describe(self) -> str:
        """``stance: ann → oppose_attack | bo → quote_or_report; label: …``"""
        return "; ".join(
            f"{name}: " + " | ".join(f"{', '.join(who)} → {value}" for value, who in values.items())
            for name, values in self.proposals.items()
        )


@dataclass(frozen=True)
class Refusal:
    """A corrected record that would not pass validation."""

    item_id: str
    field: str | None
    message: str
    corrections: dict[str, str]

    def describe(self) -> str:
        """One line: the item, the broken rule and the corrections behind it."""
        where = f"{self.field}: " if self.field else ""
        fixes = ", ".join(f"{k} = {v}" for k, v in self.corrections.items())
        return f"item {self.item_id!r}: {where}{self.message} (after the corrections {fixes})"


@dataclass
class Adjudication:
    """What :func:`adjudicate` found: the records, and the items it could not export."""

    records: list[dict[str, Any]] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    corrected: int = 0
    rederived: int = 0

    @property
    def ok(self) -> bool:
        """True when every record can be exported."""
        return not self.conflicts and not self.refusals


def rederive_anchors(cot: str, record: dict[str, Any], fields: Collection[str]) -> tuple[str, list[str]] | None:
    """``cot`` with the anchors of ``fields`` rewritten to the values of ``record`` where they
    differ, and the fields rewritten; None when ``cot`` does not parse (no anchors to follow)."""
    parsed = parse_rationale(cot)
    if parsed.values is None:
        return None
    changes = [
        (anchor.start, anchor.end, f"[{CANONICAL_TAGS[anchor.field]}: {record[anchor.field]}]", anchor.field)
        for anchor in parsed.anchors
        if anchor.field in fields and record.get(anchor.field) is not None and anchor.value != record[anchor.field]
    ]
    for start, end, text, _ in sorted(changes, reverse=True):
        cot = cot[:start] + text + cot[end:]
    return cot, [name for name in FIELDS if name in {c[3] for c in changes}]


def _resolve(
    decisions: Sequence[Decision], adjudicators: Collection[str]
) -> tuple[dict[str, str], dict[str, dict[str, list[str]]], list[str]]:
    """The corrections of one item, the conflicting proposals (empty when none) and the
    adjudicators whose decision settled it."""
    ruling = [d for d in decisions if d.reviewer in adjudicators]
    chosen = ruling or list(decisions)
    proposals: dict[str, dict[str, list[str]]] = {}
    for decision in chosen:
        for name, value in decision.corrections.items():
            who = proposals.setdefault(name, {}).setdefault(value, [])
            if decision.reviewer not in who:
                who.append(decision.reviewer)
    conflicts = {name: values for name, values in proposals.items() if len(values) > 1}
    corrections = {name: next(iter(values)) for name, values in proposals.items() if len(values) == 1}
    return corrections, conflicts, sorted({d.reviewer for d in ruling})


def adjudicate(
    subjects: Sequence[AuditSubject], decisions: Sequence[Decision], adjudicators: Collection[str] = ()
) -> Adjudication:
    """The reference records with the reviewers' corrections (module docstring)."""
    audit_ids: dict[str, list[str]] = {}
    for subject in subjects:
        if subject.reference is not None:
            audit_ids.setdefault(subject.item_id, []).append(subject.item.id)
    by_audit_id: dict[str, list[Decision]] = {}
    for decision in decisions:
        by_audit_id.setdefault(decision.item_id, []).append(decision)
    result = Adjudication()
    done: set[str] = set()
    for subject in subjects:
        reference = subject.reference
        if reference is None or subject.item_id in done:
            continue
        done.add(subject.item_id)
        own = [d for audit_id in audit_ids[subject.item_id] for d in by_audit_id.get(audit_id, [])]
        record = json.loads(reference.model_dump_json(exclude_none=True))
        corrections, conflicts, ruled_by = _resolve(own, adjudicators)
        if conflicts:
            result.conflicts.append(Conflict(subject.item_id, subject.item.id, conflicts))
            continue
        changed = {k: v for k, v in corrections.items() if record.get(k) != v}
        if not changed:
            result.records.append(record)
            continue
        record.update(changed)
        review: dict[str, Any] = {"corrected": sorted(changed), "reviewers": sorted({d.reviewer for d in own})}
        if ruled_by:
            review["adjudicated_by"] = ruled_by
        if record.get("cot") is not None:
            rederived = rederive_anchors(record["cot"], record, changed)
            if rederived is not None and rederived[1]:
                record["cot"], review["rederived_anchors"] = rederived
                result.rederived += 1
        record["meta"] = {**(record.get("meta") or {}), "review": review}
        complete = all(getattr(reference, name) is not None for name in FIELDS)
        problems = record_problems(record, require_complete=complete)
        if problems:
            first = problems[0]
            result.refusals.append(Refusal(subject.item_id, first.field, first.message, changed))
            continue
        result.corrected += 1
        result.records.append(record)
    return result
