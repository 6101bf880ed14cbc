"""Deterministic rationale audit: each proxy on hand-written rationales (pass, fail, n/a, and the
evidence spans), the dimension rule, the cross-item near-identical check, and the proxies'
behaviour on the starter set's reference rationales."""

from __future__ import annotations

from collections import Counter

import pytest
from rapidfuzz import fuzz

from verimod.tasks.varm.audit_checks import (
    AuditItem,
    AuditThresholds,
    CheckResult,
    audit_item,
    audit_items,
    comparable,
    dimension_verdicts,
    masked_for_comparison,
    quote_coverage,
)
from verimod.tasks.varm.starter import load_starter

TEXT = "胖子就是管不住嘴，一身肥肉还好意思出来吃自助，肥猪就该关在家里别出来恶心人。"
GOOD = (
    "这条评论明确指向[T: 胖子]，称其“一身肥肉”，还直接骂“肥猪”。胖子是按体型归类的一类人[TY: group]，"
    "开头就被点名[T: explicit]。作者把肥胖归咎于“管不住嘴”，要求这些人“关在家里”，是贬损和排斥，"
    "属于[S: attack_or_endorse]。把人比作猪属于去人化辱骂，判为[L: harmful]，攻击依据是体重外貌，归入[C: body_health]。"
)


def checks_of(rationale: str, text: str = TEXT, context: str | None = None) -> dict[str, CheckResult]:
    return {c.check: c for c in audit_item(AuditItem("x", text, rationale, context)).checks}


def test_a_well_grounded_specific_coherent_rationale_passes_everything():
    checks = checks_of(GOOD)
    assert {name: c.verdict for name, c in checks.items()} == {
        "quoted_spans": "pass",
        "cited_abuse_terms": "n/a",
        "target_grounded": "pass",
        "content_share": "pass",
        "input_engagement": "pass",
        "anchor_contradiction": "pass",
        "record_consistent": "pass",
    }
    anchor = checks["target_grounded"].evidence[0]
    assert GOOD[anchor.start : anchor.end] == "[T: 胖子]"


def test_an_invented_quotation_fails_with_its_span():
    invented = GOOD.replace("“管不住嘴”", "“天天胡吃海塞”")
    check = checks_of(invented)["quoted_spans"]
    assert check.verdict == "fail" and check.detail == "1 of 4 quotation(s) not in the input"
    (evidence,) = check.evidence
    assert invented[evidence.start : evidence.end] == evidence.text == "“天天胡吃海塞”"


def test_quote_coverage_accepts_light_paraphrase_and_ellipsis_pieces():
    source = comparable("残疾人出门就是给别人添麻烦，坐个轮椅还要占那么大地方，能不能在家待着。")
    assert quote_coverage(comparable("占地方"), source) == 1.0  # in order within a short stretch
    assert quote_coverage(comparable("出门就是给别人添麻烦"), source) == 1.0
    assert quote_coverage(comparable("占用空间"), source) == 0.25
    assert quote_coverage("", source) == 0.0
    rationale = GOOD.replace("“一身肥肉”", "“胖子就是……一身肥肉”")
    assert checks_of(rationale)["quoted_spans"].verdict == "pass"
    broken = GOOD.replace("“一身肥肉”", "“胖子就是……满身横肉”")
    assert checks_of(broken)["quoted_spans"].verdict == "fail"


def test_a_mention_is_not_a_citation():
    text = "fei猪们别来健身房占跑步机了，跑两步就喘得跟拉风箱似的。"
    rationale = (
        "评论用“fei猪们”代替“肥猪”，指向[T: 胖子][TY: group]，目标藏在谐音里[T: implicit]。作者嘲笑他们"
        "“喘得跟拉风箱似的”[S: attack_or_endorse]，判为[L: harmful]，归入[C: body_health]。"
    )
    checks = checks_of(rationale, text)
    assert checks["quoted_spans"].verdict == "pass"
    assert checks["target_grounded"].verdict == "n/a"  # implicit target: nothing to find


def test_abusive_terms_outside_quotes_must_be_in_the_input():
    rationale = GOOD.replace("把人比作猪属于去人化辱骂", "作者还骂他们是傻逼，属于去人化辱骂")
    check = checks_of(rationale)["cited_abuse_terms"]
    assert check.verdict == "fail" and [e.text for e in check.evidence] == ["傻逼"]
    assert rationale[check.evidence[0].start : check.evidence[0].end] == "傻逼"
    text = TEXT + "真是傻逼。"
    assert checks_of(rationale, text)["cited_abuse_terms"].verdict == "pass"


def test_an_explicit_target_missing_from_the_input_fails():
    rationale = GOOD.replace("[T: 胖子]", "[T: 肥胖人群]", 1)
    assert checks_of(rationale)["target_grounded"].verdict == "fail"
    assert checks_of(rationale, context="楼上说的肥胖人群")["target_grounded"].verdict == "pass"


def test_anchor_strings_with_stock_phrases_are_inadequate():
    bare = (
        "这条评论指向[T: 胖子]，[TY: group]，[T: explicit]，"
        "属于[S: attack_or_endorse]，[L: harmful]，归入[C: body_health]。"
    )
    checks = checks_of(bare)
    assert checks["content_share"].verdict == "fail"
    assert checks["input_engagement"].verdict == "fail"
    assert dimension_verdicts(list(checks.values()))["adequacy"] == "fail"
    assert AuditThresholds().min_content_share == 0.25


def test_negated_value_before_its_anchor_is_incoherent():
    rationale = GOOD.replace("是贬损和排斥，属于[S: attack_or_endorse]", "这并非攻击，属于[S: attack_or_endorse]")
    check = checks_of(rationale)["anchor_contradiction"]
    assert check.verdict == "fail"
    phrase, anchor = check.evidence
    assert rationale[phrase.start : phrase.end] == "并非攻击"
    assert rationale[anchor.start : anchor.end] == "[S: attack_or_endorse]"
    # a contrast ends the clause; a negated phrase does not count
    contrast = GOOD.replace("判为[L: harmful]", "表面看似无害，但判为[L: harmful]")
    assert checks_of(contrast)["anchor_contradiction"].verdict == "pass"
    negated = (
        "评论提到[T: 我][TY: single][T: explicit]，不含任何人身攻击[S: neutral_mention]，"
        "[L: non_harmful]，[C: non_attack]。"
    )
    assert checks_of(negated, "我今天去公园散步了，天气很好，心情不错。")["anchor_contradiction"].verdict == "pass"


def test_codebook_violations_and_unparseable_outputs_are_incoherent():
    violating = GOOD.replace("[L: harmful]", "[L: non_harmful]")
    check = checks_of(violating)["record_consistent"]
    assert check.verdict == "fail" and len(check.evidence) == 6
    unparseable = checks_of("这条评论有害。")
    assert unparseable["record_consistent"].verdict == "fail"
    assert unparseable["target_grounded"].verdict == "n/a" and unparseable["anchor_contradiction"].verdict == "n/a"
    empty = audit_items([AuditItem("e", TEXT, "  ")])[0]
    assert set(empty.verdicts.values()) == {"fail"}


def test_dimension_rule():
    def c(dim: str, verdict: str) -> CheckResult:
        return CheckResult("k", dim, verdict)  # type: ignore[arg-type]

    assert dimension_verdicts([c("groundedness", "pass"), c("groundedness", "fail")])["groundedness"] == "fail"
    assert dimension_verdicts([c("groundedness", "pass"), c("groundedness", "n/a")])["groundedness"] == "pass"
    assert dimension_verdicts([c("groundedness", "n/a")]) == {
        "groundedness": "n/a",
        "adequacy": "n/a",
        "coherence": "n/a",
    }


def test_near_identical_rationales_for_different_inputs_are_flagged():
    template = (
        "评论指向[T: {t}]，[TY: group]，直接点出[T: explicit]，是贬损，"
        "属于[S: attack_or_endorse]，判为[L: harmful]，归入[C: body_health]。"
    )
    items = [
        AuditItem("a", "胖子都管不住嘴，恶心。", template.format(t="胖子")),
        AuditItem("b", "矮子都心眼小，烦人。", template.format(t="矮子")),
        AuditItem("c", "胖子都管不住嘴，恶心。", template.format(t="胖子")),  # same input as a: allowed
        AuditItem("d", TEXT, GOOD),
    ]
    masked = [masked_for_comparison(i.rationale or "") for i in items]
    assert fuzz.ratio(masked[0], masked[1]) == 100.0 and "胖子" not in masked[0]
    verdicts = {a.item.id: next(c for c in a.checks if c.check == "near_identical") for a in audit_items(items)}
    assert verdicts["a"].verdict == verdicts["b"].verdict == verdicts["c"].verdict == "fail"
    assert verdicts["a"].detail.endswith("other input(s): b")  # c has the same input as a
    assert verdicts["d"].verdict == "pass"


def test_reference_rationales_mostly_pass():
    """The starter references are written to the codebook: the proxies must pass most of them
    (a proxy that flags references wholesale would only route noise to reviewers)."""
    references = load_starter()
    items = [AuditItem(r.id, r.text, r.cot, r.context if isinstance(r.context, str) else None) for r in references]
    audits = audit_items(items)
    dims = Counter((d, v) for a in audits for d, v in a.verdicts.items())
    n = len(references)
    assert dims[("coherence", "pass")] / n > 0.98
    assert dims[("adequacy", "pass")] / n > 0.98
    assert dims[("groundedness", "pass")] / n > 0.9
    assert all(a.verdicts["coherence"] == "pass" for a in audits if a.item.id.startswith("bh-0"))


@pytest.mark.parametrize("rationale", [None, ""])
def test_missing_rationale(rationale):
    audit = audit_items([AuditItem("m", TEXT, rationale)])[0]
    assert audit.verdicts == {"groundedness": "fail", "adequacy": "fail", "coherence": "fail"}
