"""Property tests: the parser never raises, round-trips canonical records and tolerates the
documented lenient forms; and it handles pathological inputs in linear time."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CANONICAL, CANONICAL_RECORD, rationale
from verimod.tasks.varm.aliases import alias_table
from verimod.tasks.varm.codebook import NO_CLEAR_TARGET, VOCABULARY, codebook_violations_of
from verimod.tasks.varm.parser import ParseErrorClass, parse_rationale

FRAGMENTS = [
    "[",
    "]",
    "【",
    "】",
    "［",
    "］",
    ":",
    "：",
    "T",
    "TY",
    "TE",
    "E",
    "S",
    "L",
    "C",
    "t",
    " ",
    "\n",
    "[T: ",
    "[TY: group]",
    "[T: explicit]",
    "[S: attack_or_endorse]",
    "[L: harmful]",
    "[C: gender]",
    "[机智]",
    "\u200f",
    "\u202e",
    "\x00",
    "\ud800",
    "\udfff",
    "有害",
    "harmful",
    "no_clear_target",
]
any_text = st.text(alphabet=st.characters(exclude_categories=()), max_size=300)
anchor_soup = st.lists(st.sampled_from(FRAGMENTS) | any_text, max_size=40).map("".join)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(any_text, anchor_soup))
def test_never_raises_and_is_self_consistent(text):
    result = parse_rationale(text)
    assert (result.values is None) == (result.error_class is not None)
    if result.ok:
        assert len(result.anchors) == 6
        assert [a.start for a in result.anchors] == sorted(a.start for a in result.anchors)
        for anchor in result.anchors:
            assert text[anchor.start] in "[【［" and text[anchor.end - 1] in "]】］"
    else:
        assert not result.format_ok
    result.to_dict()  # always serialisable


target_text = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="[]【】［］"),
    min_size=1,
    max_size=20,
).filter(lambda t: t.strip())
records = st.tuples(
    target_text | st.just(NO_CLEAR_TARGET),
    *(st.sampled_from(VOCABULARY[f]) for f in ("target_type", "target_explicitness", "stance", "label", "category")),
)


@settings(max_examples=300)
@given(records)
def test_canonical_rationale_round_trips(values):
    result = parse_rationale(rationale(*values))
    assert result.ok, result.detail
    target = alias_table()["target"].get(_key(values[0]), values[0].strip())
    assert result.values == (target, *values[1:])
    canonical_target = values[0] == target
    assert result.format_ok == (canonical_target and not codebook_violations_of(result.values))


def _key(text):
    from verimod.tasks.varm.aliases import alias_key

    return alias_key(text)


LENIENT = [
    lambda t: t.replace("[", "【").replace("]", "】"),
    lambda t: t.replace("[", "［").replace("]", "］"),
    lambda t: t.replace(": ", "："),
    lambda t: t.replace(": ", "  :\t"),
    lambda t: t.replace("[TY", "[ty").replace("[S", "[s").replace("[L", "[l").replace("[C", "[c"),
    lambda t: t.replace("_", " "),
    lambda t: t.replace("_", "-").upper().replace("小县城公务员".upper(), "小县城公务员"),
]


@settings(max_examples=200)
@given(st.lists(st.sampled_from(range(len(LENIENT))), min_size=1, max_size=4, unique=True))
def test_lenient_forms_keep_the_record(choices):
    text = CANONICAL
    for i in choices:
        text = LENIENT[i](text)
    result = parse_rationale(text)
    assert result.ok, (text, result.detail)
    assert result.record.model_dump() == CANONICAL_RECORD
    assert not result.format_ok


def test_ten_megabytes_of_text_parse():
    filler = "这是一段很长的评论内容，" * (10 * 1024 * 1024 // 36)
    text = filler + CANONICAL + filler
    assert len(text.encode("utf-8")) > 10 * 1024 * 1024
    result = parse_rationale(text)
    assert result.ok and result.format_ok
    assert text[result.anchors[0].start : result.anchors[0].end] == "[T: 小县城公务员]"


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        "]" * 100_000,
        "【" * 100_000 + "】" * 100_000,
        "[T: " * 100_000,
        "[T:" + " " * 1_000_000 + "x",
        "[" + "T" * 1_000_000,
        "[T" + " " * 1_000_000,
        "[机智]" * 100_000,
        "[S: attack_or_endorse]" * 100_000,
        ("[T: a" + "b" * 50) * 20_000,
    ],
)
def test_pathological_bracket_inputs_finish_without_raising(text):
    result = parse_rationale(text)
    assert not result.ok
    assert result.error_class in (
        ParseErrorClass.MISSING_ANCHOR,
        ParseErrorClass.DUPLICATE_ANCHOR,
    )


def test_surrogates_controls_and_bidi_marks_inside_a_valid_rationale():
    text = "\ud800\x00\x1b[31m\u202e" + CANONICAL.replace("。", "\u200f\ud83d。\x07") + "\udfff"
    result = parse_rationale(text)
    assert result.ok and result.format_ok
    assert result.record.model_dump() == CANONICAL_RECORD


def test_surrogate_inside_target_is_kept_as_written():
    result = parse_rationale(CANONICAL.replace("小县城公务员", "小县\ud800城"))
    assert result.ok and result.values[0] == "小县\ud800城"
