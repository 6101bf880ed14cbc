import pytest

from tests.conftest import CANONICAL, CANONICAL_RECORD, rationale
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.parser import PARSER_VERSION, ParseErrorClass, parse_rationale


def test_canonical_example_parses_with_format_and_spans():
    result = parse_rationale(CANONICAL)
    assert result.ok and result.status == "ok"
    assert result.record.model_dump() == CANONICAL_RECORD
    assert result.format_ok and result.flags == () and result.violations == ()
    assert [a.field for a in result.anchors] == list(FIELDS)
    spans = [CANONICAL[a.start : a.end] for a in result.anchors]
    assert spans == [
        "[T: 小县城公务员]",
        "[TY: group]",
        "[T: explicit]",
        "[S: attack_or_endorse]",
        "[L: harmful]",
        "[C: status_occupation]",
    ]
    assert result.parser_version == PARSER_VERSION
    assert result.to_dict()["record"] == CANONICAL_RECORD


@pytest.mark.parametrize("text", ["", "   ", "\n\t\u3000"])
def test_empty_output(text):
    result = parse_rationale(text)
    assert not result.ok and result.error_class is ParseErrorClass.EMPTY_OUTPUT
    assert result.record is None and not result.format_ok


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        ("这条评论有辱骂意味，判为有害。", "no anchors"),
        (CANONICAL.replace("[L: harmful]", "有害"), "L"),
        (CANONICAL.replace("[TY: group]", ""), "TY"),
        (CANONICAL.replace("[T: explicit]", "显式"), "T (explicitness)"),
        (CANONICAL.replace("[C: status_occupation]", "[类别：职业]"), "C"),
    ],
)
def test_missing_anchor(text, missing):
    result = parse_rationale(text)
    assert result.error_class is ParseErrorClass.MISSING_ANCHOR
    assert missing in result.detail


@pytest.mark.parametrize(
    ("text", "which"),
    [
        (CANONICAL + "再说一次[S: attack_or_endorse]。", "S ×2"),
        (CANONICAL + "[L: harmful]", "L ×2"),
        (CANONICAL.replace("[TY: group]", "[TY: group][TY: group]"), "TY ×2"),
        (CANONICAL + "[T: 公务员]", "T (explicitness) ×2"),  # a third T without TE/E
        (CANONICAL.replace("[T: explicit]", "[TE: explicit][E: explicit]"), "T (explicitness) ×2"),
    ],
)
def test_duplicate_anchor(text, which):
    result = parse_rationale(text)
    assert result.error_class is ParseErrorClass.DUPLICATE_ANCHOR
    assert which in result.detail


def test_duplicate_takes_precedence_over_missing():
    text = CANONICAL.replace("[C: status_occupation]", "[S: attack_or_endorse]")
    assert parse_rationale(text).error_class is ParseErrorClass.DUPLICATE_ANCHOR


@pytest.mark.parametrize(
    "text",
    [
        "[T: 河南人][TY: group][T: explicit][S: attack_or_endorse][C: region_ethnicity][L: harmful]",
        "[TY: group][T: 河南人][T: explicit][S: attack_or_endorse][L: harmful][C: region_ethnicity]",
        "[T: 河南人][TY: group][S: attack_or_endorse][L: harmful][C: region_ethnicity][TE: explicit]",
        "[C: region_ethnicity][T: 河南人][TY: group][T: explicit][S: attack_or_endorse][L: harmful]",
    ],
)
def test_anchor_order(text):
    result = parse_rationale(text)
    assert result.error_class is ParseErrorClass.ANCHOR_ORDER
    assert "comes before" in result.detail
    assert len(result.anchors) == 6  # the anchors are still reported for highlighting


@pytest.mark.parametrize(
    ("replace", "by"),
    [
        ("[L: harmful]", "[L: harmfull]"),
        ("[L: harmful]", "[L: maybe]"),
        ("[TY: group]", "[TY: crowd]"),
        ("[T: explicit]", "[T: 小县城]"),  # second T is the explicitness, and 小县城 is not one
        ("[S: attack_or_endorse]", "[S: ]"),
        ("[C: status_occupation]", "[C: occupation-ish]"),
        ("[T: 小县城公务员]", "[T:   ]"),
    ],
)
def test_invalid_value(replace, by):
    result = parse_rationale(CANONICAL.replace(replace, by))
    assert result.error_class is ParseErrorClass.INVALID_VALUE
    assert "not admissible" in result.detail


def test_order_is_checked_before_values():
    text = "[T: 河南人][TY: group][T: explicit][S: attack_or_endorse][C: xx][L: harmful]"
    assert parse_rationale(text).error_class is ParseErrorClass.ANCHOR_ORDER


def test_every_error_class_is_exercised_and_distinct():
    examples = [
        "",
        CANONICAL + "[C: gender]",
        "没有锚点",
        "[L: harmful]" + CANONICAL.replace("[L: harmful]", ""),
        CANONICAL.replace("harmful]", "bad]"),
    ]
    assert [parse_rationale(t).error_class for t in examples] == list(ParseErrorClass)


@pytest.mark.parametrize(
    "text",
    [
        CANONICAL.replace("[", "【").replace("]", "】"),
        CANONICAL.replace("[", "［").replace("]", "］"),
        CANONICAL.replace(": ", "："),
        CANONICAL.replace(": ", " : ").replace("[", "[ ").replace("]", " ]"),
        CANONICAL.replace("[TY:", "[ty:").replace("[S:", "[s:").replace("[T:", "[t:"),
        CANONICAL.replace("harmful", "HARMFUL").replace("group", "Group"),
        CANONICAL.replace("[T: explicit]", "[TE: explicit]"),
        CANONICAL.replace("[T: explicit]", "[E: explicit]"),
        CANONICAL.replace("[T: explicit]", "【te：Explicit】"),
    ],
)
def test_lenient_forms_parse_but_fail_format(text):
    result = parse_rationale(text)
    assert result.ok, result.detail
    assert result.record.model_dump() == CANONICAL_RECORD
    assert not result.format_ok
    assert result.flags


def test_flags_name_the_lenient_forms():
    text = (
        "【t：小县城公务员】 [ty: Group Object] [TE: 显式] [S: attack or endorse] [L: Harmful] [C: status/occupation]"
    )
    result = parse_rationale(text)
    assert result.record.model_dump() == CANONICAL_RECORD
    assert set(result.flags) == {
        "fullwidth_bracket",
        "fullwidth_colon",
        "tag_alias",
        "tag_case",
        "value_alias",
        "spacing",
    }


def test_te_tag_makes_every_t_a_target():
    text = "[T: 河南人][TY: group][TE: explicit][S: attack_or_endorse][L: harmful][C: region_ethnicity][T: 东北人]"
    assert parse_rationale(text).error_class is ParseErrorClass.DUPLICATE_ANCHOR


@pytest.mark.parametrize(
    "noise", ["[机智]", "[doge]", "[Note: 这是备注]", "[1: 2]", "【图片】", "[T 没有冒号]", "[]", "[[["]
)
def test_non_anchor_brackets_are_ignored(noise):
    text = noise + CANONICAL.replace("。作者", f"。{noise}作者") + noise
    result = parse_rationale(text)
    assert result.ok and result.format_ok
    assert result.record.model_dump() == CANONICAL_RECORD


def test_format_requires_codebook_consistency():
    result = parse_rationale(rationale(label="non_harmful", category="gender"))
    assert result.ok and not result.format_ok
    assert result.violations == ("label_category",)
    result = parse_rationale(rationale(stance="quote_or_report"))
    assert result.violations == ("harmful_stance",)
    result = parse_rationale(rationale(target="no_clear_target"))
    assert result.violations == ("no_clear_target",)


@pytest.mark.parametrize(
    "anchor",
    [
        "[T:小县城公务员]",
        "[T: 小县城公务员 ]",
        "[T:  小县城公务员]",
        "[ T: 小县城公务员]",
        "[t: 小县城公务员]",
    ],
)
def test_format_requires_exact_canonical_anchor(anchor):
    result = parse_rationale(CANONICAL.replace("[T: 小县城公务员]", anchor))
    assert result.ok and not result.format_ok
    assert {"spacing", "tag_case"} & set(result.flags)


def test_target_alias_of_no_clear_target_parses_but_is_not_canonical():
    text = rationale(
        target="无明确目标",
        target_type="none",
        explicitness="no clear target",
        stance="neutral_mention",
        label="non_harmful",
        category="non_attack",
    )
    result = parse_rationale(text)
    assert result.values[:3] == ("no_clear_target",) * 3
    assert not result.format_ok and "value_alias" in result.flags


def test_target_keeps_inner_text_and_is_trimmed():
    result = parse_rationale(rationale(target="  某些 “人”  "))
    assert result.values[0] == "某些 “人”"


def test_mixed_bracket_kinds_parse():
    result = parse_rationale(CANONICAL.replace("[L: harmful]", "【L: harmful]"))
    assert result.ok and "fullwidth_bracket" in result.flags
