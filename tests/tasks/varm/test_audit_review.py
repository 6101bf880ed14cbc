"""Routing to human review, review sheets (CSV round trip, bad cells), final verdicts, the audit
table (Wilson against statsmodels) and corrected references."""

from __future__ import annotations

import csv
import io
import json

import pytest
from statsmodels.stats.proportion import proportion_confint

from tests.conftest import write_lines
from verimod.core.errors import InputError
from verimod.tasks.varm.audit_checks import AuditItem, CheckResult, ItemAudit
from verimod.tasks.varm.audit_export import adjudicate
from verimod.tasks.varm.audit_judge import MajorityVerdict
from verimod.tasks.varm.audit_review import (
    SHEET_COLUMNS,
    Decision,
    audit_sources,
    audit_table,
    read_decisions,
    route,
    sheet_rows,
    write_sheet,
)
from verimod.tasks.varm.starter import load_starter


def audit(item_id: str, system: str = "s", **verdicts: str) -> ItemAudit:
    checks = [CheckResult("c", dim, verdicts.get(dim, "pass")) for dim in ("groundedness", "adequacy", "coherence")]  # type: ignore[arg-type]
    return ItemAudit(AuditItem(item_id, "text", "rationale", system=system), checks)


def judged(verdict: str, unanimous: bool) -> dict[str, MajorityVerdict]:
    votes = ("pass", "pass", "pass") if unanimous else ("pass", "pass", "fail")
    return {d: MajorityVerdict(verdict, votes, unanimous) for d in ("groundedness", "adequacy", "coherence")}  # type: ignore[arg-type]


def write_csv(path, rows) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(SHEET_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)


def test_route_reasons_and_seeded_sample():
    audits = [audit("a", adequacy="fail")] + [audit(f"c{k}") for k in range(20)] + [audit("j"), audit("u"), audit("n")]
    judges = {f"c{k}": judged("pass", True) for k in range(20)}
    judges |= {"j": judged("fail", True), "u": judged("undecided", False), "n": judged("pass", False)}
    routed = {r.item_id: r.reasons for r in route(audits, judges, sample_rate=0.1, seed=3)}
    assert routed["a"] == ("proxy:adequacy",)
    assert routed["j"][0] == "judge_fail:groundedness" and routed["u"][0] == "judge_undecided:groundedness"
    assert routed["n"] == ("non_unanimous:groundedness", "non_unanimous:adequacy", "non_unanimous:coherence")
    sampled = sorted(i for i, r in routed.items() if r == ("sampled",))
    assert len(sampled) == 2  # ⌈0.1 · 20⌉
    assert sampled == sorted(
        r.item_id for r in route(audits, judges, sample_rate=0.1, seed=3) if r.reasons == ("sampled",)
    )
    assert len([r for r in route(audits, judges, sample_rate=0.0) if r.reasons == ("sampled",)]) == 0
    with pytest.raises(ValueError):
        route(audits, judges, sample_rate=1.5)


def test_sheet_round_trip_and_bad_cells(tmp_path):
    refs = load_starter("dev")[:3]
    path = write_lines(tmp_path / "refs.jsonl", [json.loads(r.model_dump_json(exclude_none=True)) for r in refs])
    subjects = audit_sources([path])
    audits = {s.item.id: audit(s.item.id) for s in subjects}
    routed = route(list(audits.values()), sample_rate=1.0)
    sheet = tmp_path / "review.csv"
    write_sheet(sheet, sheet_rows(subjects, audits, routed))
    raw = sheet.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # BOM: spreadsheet programs read the Chinese text
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    assert list(rows[0]) == list(SHEET_COLUMNS) and [r["item_id"] for r in rows] == [r.id for r in refs]
    assert json.loads(rows[0]["reference"])["label"] == refs[0].label
    rows[0] |= {"groundedness": "pass", "adequacy": "否", "reviewer": "ann", "notes": "泛泛而谈"}
    rows[1] |= {"fix_label": "non_harmful", "fix_category": "non_attack", "reviewer": "bo"}
    filled = tmp_path / "filled.csv"
    write_csv(filled, rows)
    decisions = read_decisions(filled)
    assert decisions == [
        Decision(refs[0].id, "ann", {"groundedness": "pass", "adequacy": "fail"}, {}, "泛泛而谈"),
        Decision(refs[1].id, "bo", {}, {"label": "non_harmful", "category": "non_attack"}, ""),
    ]
    rows[2] |= {"coherence": "fine", "reviewer": "cy"}
    write_csv(filled, rows)
    with pytest.raises(InputError, match=r"filled.csv:4: field 'coherence': must be pass or fail"):
        read_decisions(filled)
    rows[2] |= {"coherence": "pass", "reviewer": "", "fix_stance": "attack"}
    write_csv(filled, rows)
    with pytest.raises(InputError, match=r"field 'fix_stance': must be one of"):
        read_decisions(filled)
    corrected = adjudicate(subjects, decisions).records
    assert [r["id"] for r in corrected] == [r.id for r in refs]
    assert (corrected[1]["label"], corrected[1]["category"]) == ("non_harmful", "non_attack")
    assert corrected[1]["meta"]["review"] == {
        "corrected": ["category", "label"], "reviewers": ["bo"], "rederived_anchors": ["label", "category"]
    }  # fmt: skip
    assert "[L: non_harmful]" in corrected[1]["cot"] and "[C: non_attack]" in corrected[1]["cot"]
    assert corrected[0] == json.loads(refs[0].model_dump_json(exclude_none=True))


def test_audit_table_final_verdicts_and_wilson():
    audits = [audit(f"a{k}", "A", adequacy="fail" if k < 3 else "pass") for k in range(10)]
    audits += [audit(f"b{k}", "B", groundedness="n/a") for k in range(4)]
    judges = {"a0": judged("pass", True), "a1": judged("undecided", False)}
    decisions = [Decision("a0", "r1", {"adequacy": "fail"}), Decision("a0", "r2", {"adequacy": "pass"})]
    rows = {(r.system, r.dimension): r for r in audit_table(audits, judges, decisions)}
    adequacy = rows[("A", "adequacy")]
    # a0: reviewers tie → fail (human); a1: judges undecided → unknown; a2: proxy fail; a3…a9: proxy pass
    assert (adequacy.passed, adequacy.known) == (7, 9)
    assert adequacy.sources == {"human": 1, "proxy": 8}  # a1's unknown judge verdict is not counted
    assert (adequacy.low, adequacy.high) == pytest.approx(proportion_confint(7, 9, method="wilson"), abs=1e-12)
    grounded = rows[("A", "groundedness")]
    assert (grounded.passed, grounded.known) == (9, 9)  # a0 judge pass, a1 unknown, the rest proxy pass
    assert rows[("B", "groundedness")].known == 0 and rows[("B", "groundedness")].to_dict()["rate"] is None


def test_sources_need_rationales_and_distinct_ids(tmp_path):
    rows = [json.loads(r.model_dump_json(exclude_none=True)) for r in load_starter("dev")[:2]]
    rows[1].pop("cot")
    path = write_lines(tmp_path / "refs.jsonl", rows)
    with pytest.raises(InputError, match=r"refs\.jsonl: field 'cot'"):
        audit_sources([path])
    rows[1]["cot"] = rows[0]["cot"]
    one = write_lines(tmp_path / "one.jsonl", rows)
    two = write_lines(tmp_path / "two.jsonl", rows)
    ids = [s.item.id for s in audit_sources([one, two])]
    assert ids == [f"one/{rows[0]['id']}", f"one/{rows[1]['id']}", f"two/{rows[0]['id']}", f"two/{rows[1]['id']}"]
