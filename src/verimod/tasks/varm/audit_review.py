"""Rationale audit, human side: what to audit, routing to review, review sheets, and the audit
table.

**Sources** (:func:`audit_sources`): a run directory (its stored outputs, system = the run's
model label) or a reference file (its reference rationales ``cot``, system = ``reference``).
With one source an item's audit id is the item id; with several it is ``<source>/<item id>``
(source = the run id or the file's stem) so that every rationale keeps its own id.

**Routing** (:func:`route`): an item goes to human review when a proxy check failed
(``proxy:<dimension>``), the judges' majority failed (``judge_fail:<dimension>``) or did not
reach a majority (``judge_undecided:<dimension>``), or the passes were not unanimous
(``non_unanimous:<dimension>``). Of the remaining items a seeded sample is rechecked too
(``sampled``): ⌈rate · n⌉ of them (rate default 0.1), the first of
``numpy.random.default_rng(seed).permutation`` over them in id order.

**Sheets** (:func:`write_sheet`, :func:`read_decisions`): one row per routed item with the
input, rationale, record, reference, proxy failures, judge votes and the routing reasons, and
empty columns for the reviewer: ``groundedness``, ``adequacy``, ``coherence`` (pass / fail;
also 是/否, yes/no, 1/0), corrected reference fields (``fix_target`` … ``fix_category``: empty =
unchanged, else an admissible value), ``reviewer`` and ``notes``. CSV (UTF-8 with BOM, so
spreadsheet programs read Chinese) or JSONL by the file's extension. Reading a filled sheet
checks every value and names file, line and field on the first bad one; rows without any
verdict or correction are skipped (not reviewed yet).

**Blinding** (``--blind``, the default for review): a blinded reviewer sees neither the system
that wrote a rationale nor the judges' votes. :func:`blind_reasons` keeps only the proxy
failures of the routing reasons (the judges' verdicts, and ``sampled`` — which says the judges
and proxies found nothing — are hidden). When the items come from several sources (runs or
files, whose ids carry the source), :func:`blind_order` interleaves them in a seeded order
(``numpy.random.default_rng(seed).permutation``), and :func:`blind_sheet` empties the
``system`` and ``judge_votes`` columns and writes codes (``b0001`` …, in that order) in place of
the source-prefixed audit ids; the key (code → audit id, :data:`BLIND_KEY` in the audit folder)
is read back by :func:`read_decisions`.

**Audit table** (:func:`audit_table`): per system and dimension, the final verdict of each
item — the reviewers' majority where reviewed (a tie is ``fail``; an adjudicator's verdict,
when given, replaces the others), else the judges' majority
(``undecided`` counts as unknown), else the proxies' verdict (``n/a`` unknown) — and the pass
rate over items with a known verdict, with its Wilson 95% interval and where the verdicts came
from.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from verimod.core.errors import InputError
from verimod.data.records import read_records
from verimod.stats import wilson_interval
from verimod.tasks.varm.audit_checks import DIMENSIONS, AuditItem, ItemAudit
from verimod.tasks.varm.audit_judge import MajorityVerdict
from verimod.tasks.varm.codebook import FIELDS, VOCABULARY
from verimod.tasks.varm.io import load_references
from verimod.tasks.varm.parser import parse_rationale
from verimod.tasks.varm.schema import VarmReference

FIX_COLUMNS: tuple[str, ...] = tuple(f"fix_{name}" for name in FIELDS)
SHEET_COLUMNS: tuple[str, ...] = (
    "item_id", "system", "text", "context", "rationale", "record", "reference", "route", "proxy_failures",
    "judge_votes", *DIMENSIONS, *FIX_COLUMNS, "reviewer", "notes",
)  # fmt: skip
BLIND_KEY = "blind_key.json"
_YES = frozenset({"pass", "yes", "y", "1", "true", "是", "合格", "通过"})
_NO = frozenset({"fail", "no", "n", "0", "false", "否", "不合格", "不通过"})


@dataclass(frozen=True)
class AuditSubject:
    """One audited rationale with the reference record it belongs to (if any)."""

    item: AuditItem
    reference: VarmReference | None
    item_id: str  # the id in the source (the audit id may carry a source prefix)


def _context(reference: VarmReference) -> str | None:
    context = reference.context
    return "\n".join(context) if isinstance(context, list) else context


def audit_sources(paths: Sequence[Path]) -> list[AuditSubject]:
    """The rationales of run directories and reference files (module docstring)."""
    from verimod.tasks.varm.evaluate import load_run

    prefixed = len(paths) > 1
    subjects: list[AuditSubject] = []
    for path in paths:
        if path.is_dir():
            run = load_run(path)
            system, source = run.store.manifest.model_label, run.store.manifest.run_id
            samples = run.store.samples()
            pairs = [(r, samples[(r.id, 0)].output if (r.id, 0) in samples else None) for r in run.references]
        else:
            references = load_references(path)
            system, source = "reference", path.stem
            missing = [r.id for r in references if r.cot is None]
            if missing:
                raise InputError.at(
                    str(path), None, "cot", f"{len(missing)} record(s) without a rationale, e.g. {missing[0]!r}"
                )
            pairs = [(r, r.cot) for r in references]
        for reference, rationale in pairs:
            audit_id = f"{source}/{reference.id}" if prefixed else reference.id
            item = AuditItem(audit_id, reference.text, rationale, _context(reference), system)
            subjects.append(AuditSubject(item, reference, reference.id))
    ids = Counter(s.item.id for s in subjects)
    repeated = [i for i, n in ids.items() if n > 1]
    if repeated:
        raise InputError.at(str(paths[0]), None, "id", f"duplicate audit id {repeated[0]!r} (give distinct sources)")
    return subjects


@dataclass(frozen=True)
class Routed:
    """An item sent to human review and why."""

    item_id: str
    reasons: tuple[str, ...]


def route(
    audits: Sequence[ItemAudit],
    judged: Mapping[str, Mapping[str, MajorityVerdict]] | None = None,
    *,
    sample_rate: float = 0.1,
    seed: int = 0,
) -> list[Routed]:
    """The items for human review, in input order (module docstring)."""
    import numpy as np

    if not 0.0 <= sample_rate <= 1.0:
        raise ValueError(f"sample_rate must be in [0, 1], got {sample_rate}")
    reasons: dict[str, list[str]] = {}
    for audit in audits:
        own = [f"proxy:{d}" for d, v in audit.verdicts.items() if v == "fail"]
        for dimension, verdict in (judged or {}).get(audit.item.id, {}).items():
            if verdict.verdict == "fail":
                own.append(f"judge_fail:{dimension}")
            elif verdict.verdict == "undecided":
                own.append(f"judge_undecided:{dimension}")
            elif not verdict.unanimous:
                own.append(f"non_unanimous:{dimension}")
        reasons[audit.item.id] = own
    clean = sorted(i for i, r in reasons.items() if not r)
    n_sample = math.ceil(sample_rate * len(clean))
    chosen = {clean[k] for k in np.random.default_rng(seed).permutation(len(clean))[:n_sample].tolist()}
    for item_id in chosen:
        reasons[item_id].append("sampled")
    return [Routed(a.item.id, tuple(reasons[a.item.id])) for a in audits if reasons[a.item.id]]


def _record_json(rationale: str | None) -> str:
    parsed = parse_rationale(rationale or "")
    return (
        "" if parsed.values is None else json.dumps(dict(zip(FIELDS, parsed.values, strict=True)), ensure_ascii=False)
    )


def sheet_rows(
    subjects: Sequence[AuditSubject],
    audits: Mapping[str, ItemAudit],
    routed: Sequence[Routed],
    judged: Mapping[str, Mapping[str, MajorityVerdict]] | None = None,
) -> list[dict[str, str]]:
    """One sheet row per routed item (module docstring)."""
    by_id = {s.item.id: s for s in subjects}
    rows = []
    for entry in routed:
        subject = by_id[entry.item_id]
        reference = subject.reference
        failures = [f"{c.check}: {c.detail}" for c in audits[entry.item_id].checks if c.verdict == "fail"]
        votes = (judged or {}).get(entry.item_id, {})
        row = {
            "item_id": entry.item_id,
            "system": subject.item.system or "",
            "text": subject.item.text,
            "context": subject.item.context or "",
            "rationale": subject.item.rationale or "",
            "record": _record_json(subject.item.rationale),
            "reference": "" if reference is None else json.dumps(
                {f: getattr(reference, f) for f in FIELDS if getattr(reference, f) is not None}, ensure_ascii=False
            ),
            "route": "; ".join(entry.reasons),
            "proxy_failures": " | ".join(failures),
            "judge_votes": "; ".join(f"{d}: {'/'.join(v.votes)}" for d, v in votes.items()),
        }  # fmt: skip
        rows.append(row | dict.fromkeys((*DIMENSIONS, *FIX_COLUMNS, "reviewer", "notes"), ""))
    return rows


def write_sheet(path: Path, rows: Sequence[Mapping[str, str]]) -> None:
    """CSV (UTF-8 with BOM) or JSONL by the extension."""
    if path.suffix.lower() == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        return
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(SHEET_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8-sig")


def blind_reasons(reasons: Sequence[str]) -> tuple[str, ...]:
    """The routing reasons a blinded reviewer sees: the proxy failures (module docstring)."""
    return tuple(r for r in reasons if r.startswith("proxy:"))


def source_of(audit_id: str, item_id: str) -> str:
    """The source part of an audit id (``""`` when the audit had one source)."""
    return audit_id[: -len(item_id) - 1] if audit_id != item_id and audit_id.endswith(f"/{item_id}") else ""


def blind_order(sources: Sequence[str], seed: int) -> list[int]:
    """Positions of items from ``sources`` in the order a blinded reviewer sees them: a seeded
    permutation when there are several sources, else the given order."""
    import numpy as np

    if len(set(sources)) < 2:
        return list(range(len(sources)))
    return [int(k) for k in np.random.default_rng(seed).permutation(len(sources))]


def blind_sheet(
    rows: Sequence[Mapping[str, str]], sources: Sequence[str], seed: int
) -> tuple[list[dict[str, str]], dict[str, str]]:
    """The sheet rows (from ``sources``, one per row) as a blinded reviewer gets them, and the
    key code → audit id (empty when one source: the ids then carry no source); module docstring."""
    order = blind_order(sources, seed)
    coded = len(set(sources)) > 1
    out: list[dict[str, str]] = []
    key: dict[str, str] = {}
    for number, k in enumerate(order, start=1):
        row = dict(rows[k])
        route = blind_reasons([r.strip() for r in row["route"].split(";") if r.strip()])
        row |= {"system": "", "judge_votes": "", "route": "; ".join(route)}
        if coded:
            code = f"b{number:04d}"
            key[code] = row["item_id"]
            row["item_id"] = code
        out.append(row)
    return out, key


@dataclass(frozen=True)
class Decision:
    """One reviewer's decision on one item."""

    item_id: str
    reviewer: str
    verdicts: dict[str, Literal["pass", "fail"]]
    corrections: dict[str, str] = field(default_factory=dict)
    notes: str = ""


def _cell(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value).strip()


def read_decisions(path: Path, key: Mapping[str, str] | None = None) -> list[Decision]:
    """The filled rows of a review sheet (module docstring); ``key`` maps the codes of a
    blinded sheet back to audit ids."""
    name = str(path)
    out = []
    for line, row in read_records(path):
        item_id = _cell(row.get("item_id"))
        verdicts: dict[str, Literal["pass", "fail"]] = {}
        for dimension in DIMENSIONS:
            value = _cell(row.get(dimension)).casefold()
            if not value:
                continue
            if value not in _YES | _NO:
                raise InputError.at(name, line, dimension, f"must be pass or fail, got {value!r}")
            verdicts[dimension] = "pass" if value in _YES else "fail"
        corrections = {}
        for column, field_name in zip(FIX_COLUMNS, FIELDS, strict=True):
            value = _cell(row.get(column))
            if not value:
                continue
            allowed = VOCABULARY.get(field_name)
            if allowed is not None and value not in allowed:
                raise InputError.at(name, line, column, f"must be one of {', '.join(allowed)}, got {value!r}")
            corrections[field_name] = value
        if not verdicts and not corrections:
            continue
        if not item_id:
            raise InputError.at(name, line, "item_id", "missing")
        reviewer = _cell(row.get("reviewer"))
        if not reviewer:
            raise InputError.at(name, line, "reviewer", "a decision needs the reviewer's name")
        item_id = (key or {}).get(item_id, item_id)
        out.append(Decision(item_id, reviewer, verdicts, corrections, _cell(row.get("notes"))))
    return out


@dataclass(frozen=True)
class DimensionRate:
    """One system's pass rate on one dimension."""

    system: str
    dimension: str
    passed: int
    known: int
    low: float
    high: float
    sources: dict[str, int]

    @property
    def rate(self) -> float:
        """passed / known (NaN without a known verdict)."""
        return self.passed / self.known if self.known else math.nan

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN becomes None)."""

        def clean(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {
            "system": self.system, "dimension": self.dimension, "passed": self.passed, "known": self.known,
            "rate": clean(self.rate), "wilson_low": clean(self.low), "wilson_high": clean(self.high),
            "sources": self.sources,
        }  # fmt: skip


def final_verdicts(
    audits: Sequence[ItemAudit],
    judged: Mapping[str, Mapping[str, MajorityVerdict]] | None,
    decisions: Sequence[Decision],
    adjudicators: Collection[str] = (),
) -> dict[str, dict[str, tuple[str, str]]]:
    """Item id → dimension → (verdict pass | fail | unknown, source human | judge | proxy);
    an adjudicator's verdicts on an item replace the other reviewers' (module docstring)."""
    human: dict[str, dict[str, list[str]]] = {}
    ruled = {(d.item_id, dim) for d in decisions if d.reviewer in adjudicators for dim in d.verdicts}
    for decision in decisions:
        for dimension, verdict in decision.verdicts.items():
            if (decision.item_id, dimension) in ruled and decision.reviewer not in adjudicators:
                continue
            human.setdefault(decision.item_id, {}).setdefault(dimension, []).append(verdict)
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for audit in audits:
        item_id = audit.item.id
        own: dict[str, tuple[str, str]] = {}
        for dimension in DIMENSIONS:
            votes = human.get(item_id, {}).get(dimension)
            judge = (judged or {}).get(item_id, {}).get(dimension)
            if votes:
                own[dimension] = ("pass" if votes.count("pass") > len(votes) / 2 else "fail", "human")
            elif judge is not None:
                own[dimension] = (judge.verdict if judge.verdict != "undecided" else "unknown", "judge")
            else:
                proxy = audit.verdicts[dimension]
                own[dimension] = (proxy if proxy != "n/a" else "unknown", "proxy")
        out[item_id] = own
    return out


def audit_table(
    audits: Sequence[ItemAudit],
    judged: Mapping[str, Mapping[str, MajorityVerdict]] | None = None,
    decisions: Sequence[Decision] = (),
    adjudicators: Collection[str] = (),
) -> list[DimensionRate]:
    """Per system and dimension: pass rate of the final verdicts with a Wilson 95% interval."""
    finals = final_verdicts(audits, judged, decisions, adjudicators)
    systems = list(dict.fromkeys(a.item.system or "" for a in audits))
    rows = []
    for system in systems:
        ids = [a.item.id for a in audits if (a.item.system or "") == system]
        for dimension in DIMENSIONS:
            verdicts = [finals[i][dimension] for i in ids]
            known = [v for v in verdicts if v[0] != "unknown"]
            passed = sum(1 for v in known if v[0] == "pass")
            low, high = wilson_interval(passed, len(known))
            rows.append(
                DimensionRate(system, dimension, passed, len(known), low, high, dict(Counter(s for _, s in known)))
            )
    return rows
