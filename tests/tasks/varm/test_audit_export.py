"""Adjudicated references: corrections that break the codebook are refused, anchors follow the
corrected record, conflicting reviewers go to adjudication (never "last one wins"), and what is
exported passes the same checks as ``verimod validate``."""

from __future__ import annotations

import json

from tests.conftest import write_lines
from verimod.tasks.varm.audit_export import adjudicate, rederive_anchors
from verimod.tasks.varm.audit_review import Decision, audit_sources
from verimod.tasks.varm.io import record_problems
from verimod.tasks.varm.parser import parse_rationale
from verimod.tasks.varm.starter import load_starter

NON_HARMFUL = {"label": "non_harmful", "category": "non_attack"}


def subjects_of(tmp_path, n: int = 3, edit=None):
    refs = [json.loads(r.model_dump_json(exclude_none=True)) for r in load_starter("dev")[:n]]
    if edit is not None:
        edit(refs)
    return audit_sources([write_lines(tmp_path / "refs.jsonl", refs)]), refs


def test_a_stance_correction_on_a_harmful_record_is_refused(tmp_path):
    subjects, refs = subjects_of(tmp_path)
    assert refs[0]["label"] == "harmful"
    result = adjudicate(subjects, [Decision(refs[0]["id"], "ann", {}, {"stance": "quote_or_report"})])
    assert not result.ok and result.conflicts == []
    (refusal,) = result.refusals
    line = refusal.describe()
    assert refs[0]["id"] in line and "label = harmful ⇒ stance = attack_or_endorse" in line
    assert "stance = quote_or_report" in line and "\n" not in line
    assert [r["id"] for r in result.records] == [refs[1]["id"], refs[2]["id"]]  # the refused one is not exported


def test_anchors_follow_the_corrected_record_and_the_record_validates(tmp_path):
    subjects, refs = subjects_of(tmp_path)
    decisions = [
        Decision(refs[0]["id"], "ann", {}, {"stance": "quote_or_report", **NON_HARMFUL}),
        Decision(refs[1]["id"], "bo", {}, {"target": "精神病患者"}),
    ]
    result = adjudicate(subjects, decisions)
    assert result.ok and result.corrected == 2 and result.rederived == 2
    first, second, third = result.records
    parsed = parse_rationale(first["cot"]).values
    assert parsed is not None and parsed[3:] == ("quote_or_report", "non_harmful", "non_attack")
    assert first["meta"]["review"]["rederived_anchors"] == ["stance", "label", "category"]

    # only the anchors changed: the text between them is the original
    def without(text: str, anchors: tuple[str, ...]) -> str:
        for anchor in anchors:
            text = text.replace(anchor, "")
        return text

    new, old = (
        ("[S: quote_or_report]", "[L: non_harmful]", "[C: non_attack]"),
        ("[S: attack_or_endorse]", "[L: harmful]", "[C: body_health]"),
    )
    assert without(first["cot"], new) == without(refs[0]["cot"], old)
    assert "[T: 精神病患者]" in second["cot"] and second["target"] == "精神病患者"
    assert third == refs[2]
    for record in result.records:  # the validator's own checks (fields, codebook, anchors = record)
        assert record_problems(record) == []


def test_conflicting_reviewers_go_to_adjudication_and_an_adjudicator_settles(tmp_path):
    subjects, refs = subjects_of(tmp_path)
    item = refs[0]["id"]
    decisions = [
        Decision(item, "ann", {}, {"stance": "oppose_attack", **NON_HARMFUL}),
        Decision(item, "bo", {}, {"stance": "quote_or_report", **NON_HARMFUL}),
        Decision(refs[1]["id"], "ann", {}, NON_HARMFUL),
        Decision(refs[1]["id"], "bo", {}, NON_HARMFUL),  # agreeing reviewers are no conflict
    ]
    for ordered in (decisions, decisions[::-1]):
        result = adjudicate(subjects, ordered)
        (conflict,) = result.conflicts
        assert conflict.item_id == item and set(conflict.proposals) == {"stance"}
        assert conflict.proposals["stance"] in (
            {"oppose_attack": ["ann"], "quote_or_report": ["bo"]},
            {"quote_or_report": ["bo"], "oppose_attack": ["ann"]},
        )
        assert "ann → oppose_attack" in conflict.describe() and "bo → quote_or_report" in conflict.describe()
        assert [r["id"] for r in result.records] == [refs[1]["id"], refs[2]["id"]]
    ruling = Decision(item, "cy", {}, {"stance": "quote_or_report", **NON_HARMFUL})
    settled = adjudicate(subjects, [*decisions, ruling], adjudicators={"cy"})
    assert settled.ok
    record = settled.records[0]
    assert record["stance"] == "quote_or_report"
    assert record["meta"]["review"]["adjudicated_by"] == ["cy"]
    assert record["meta"]["review"]["reviewers"] == ["ann", "bo", "cy"]
    # two adjudicators who disagree are a conflict again
    other = Decision(item, "dee", {}, {"stance": "oppose_attack", **NON_HARMFUL})
    assert adjudicate(subjects, [*decisions, ruling, other], adjudicators={"cy", "dee"}).conflicts


def test_a_rationale_that_does_not_parse_is_refused_not_exported(tmp_path):
    def drop_anchor(refs):
        refs[0]["cot"] = refs[0]["cot"].replace("[L: harmful]", "有害")

    subjects, refs = subjects_of(tmp_path, edit=drop_anchor)
    result = adjudicate(subjects, [Decision(refs[0]["id"], "ann", {}, {"target": "胖人"})])
    (refusal,) = result.refusals
    assert refusal.field == "cot" and "does not parse" in refusal.message


def test_rederive_anchors_hand_case():
    cot = "指向【T：胖子】，[TY: group]，[T: explicit]，[S: attack_or_endorse]，[L: harmful]，[C: body_health]。"
    record = {"target": "胖人", "target_type": "group", "target_explicitness": "explicit",
              "stance": "attack_or_endorse", "label": "harmful", "category": "body_health"}  # fmt: skip
    text, fields = rederive_anchors(cot, record, {"target"}) or ("", [])
    assert text == cot.replace("【T：胖子】", "[T: 胖人]") and fields == ["target"]
    assert rederive_anchors(cot, record, {"stance"}) == (cot, [])  # nothing differs: nothing rewritten
    assert rederive_anchors("没有锚点", record, {"target"}) is None
