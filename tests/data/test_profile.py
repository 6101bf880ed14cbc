"""``verimod.data.profile``: every statistic on a hand-computed file, and the input contract."""

from __future__ import annotations

import pytest

from tests.conftest import write_lines
from verimod.core.errors import InputError
from verimod.data.profile import Share, profile_report
from verimod.data.profile_input import read_profile_input
from verimod.data.profile_text import TraditionalScript

HAND = "hand"


def record(text: str, **fields) -> dict:
    return {"text": text, **fields}


def attack(text: str, target: str, **more) -> dict:
    fields = {
        "target": target,
        "target_type": "group",
        "target_explicitness": "explicit",
        "stance": "attack_or_endorse",
        "label": "harmful",
        "category": "region_ethnicity",
        "split": "test",
        "meta": {"source": HAND},
    }
    return record(text, **{**fields, **more})


def benign(text: str, target: str, stance: str, tags: list[str], **more) -> dict:
    fields = {
        "target": target,
        "target_type": "group" if target != "no_clear_target" else "no_clear_target",
        "target_explicitness": "explicit" if target != "no_clear_target" else "no_clear_target",
        "stance": stance,
        "label": "non_harmful",
        "category": "non_attack",
        "split": "test",
        "tags": tags,
        "meta": {"source": HAND},
    }
    return record(text, **{**fields, **more})


#: Eight records; lengths 12, 17, 10, 9, 9, 12, 16, 9 (see each comment).
ROWS = [
    attack("上海人就是排外，没救了。", "上海人", tags=["stereotype"]),  # 12; opens
    benign("“上海人就是排外”这种话太偏激了[怒]", "上海人", "oppose_attack", ["quotation"]),  # 17; opens; emoticon
    benign("我觉得河南人挺好的😂", "河南人", "neutral_mention", []),  # 10; emoji; no punctuation
    benign("這個人真的很煩 OK", "no_clear_target", "neutral_mention", ["personal_account"]),  # 9; Trad.; Latin; no p.
    attack("  ，上海人就是排外吧", "上海人", tags=["stereotype", "direct_insult"]),  # 9; opens after "  ，"
    attack("上海人就是排外，没救了。", "上海人", tags=["stereotype"], split="train"),  # 12; copy of the first
    record("2024年有100个人说了这句话"),  # 16; nothing annotated; no punctuation
    attack("我看河南人都是骗子", "河南人"),  # 9; does not open with its target; no punctuation
]


@pytest.fixture
def hand_file(tmp_path):
    return write_lines(tmp_path / "hand.jsonl", ROWS)


def test_every_statistic_on_the_hand_file(hand_file):
    report = profile_report([read_profile_input(hand_file)], top_frames=2, script=TraditionalScript("table"))
    p = report.files[0]
    assert (p.records, p.skipped, p.encoding) == (8, 0, "utf-8")
    # sorted lengths 9 9 9 10 12 12 16 17: nearest ranks 1, 4, 8
    assert p.length.model_dump() == {"p10": 9, "p50": 10, "p90": 17, "max": 17, "mean": 94 / 8}
    assert p.emoji == Share(count=1, n=8, share=1 / 8)
    assert p.emoticon == Share(count=1, n=8, share=1 / 8)
    assert p.emoji_or_emoticon.count == 2
    assert p.no_punctuation.count == 4  # 河南人挺好, 這個人, 2024年, 我看河南人
    assert p.latin.count == 1 and p.traditional.count == 1
    # targets (not no_clear_target): rows 1 2 3 5 6 8; opening: 1 2 5 6; harmful: 1 5 6 8
    assert p.opens_with_target == Share(count=4, n=6, share=4 / 6)
    assert p.opens_with_target_harmful == Share(count=3, n=4, share=3 / 4)
    d = p.distributions
    assert (d["label"].counts, d["label"].missing) == ({"harmful": 4, "non_harmful": 3}, 1)
    assert d["category"].counts == {"region_ethnicity": 4, "non_attack": 3}
    assert d["stance"].counts == {"attack_or_endorse": 4, "neutral_mention": 2, "oppose_attack": 1}
    assert d["target_type"].counts == {"group": 6, "no_clear_target": 1}
    assert d["target_explicitness"].counts == {"explicit": 6, "no_clear_target": 1}
    assert (d["split"].counts, d["source"].counts, d["source"].missing) == ({"test": 6, "train": 1}, {HAND: 7}, 1)
    assert (d["category_harmful"].n, d["category_harmful"].counts) == (4, {"region_ethnicity": 4})
    assert p.tags == {"stereotype": 3, "direct_insult": 1, "personal_account": 1, "quotation": 1}
    assert p.hard_negatives == Share(count=2, n=3, share=2 / 3)  # quotation, personal_account of 3 non-harmful
    nd = p.near_duplicates
    assert (nd.pairs, nd.components, nd.members, nd.redundant) == (1, 1, 2, 1)
    # skeletons: Ⓣ就是排外,没救了。 ×2, “Ⓣ就是排外”…, ,Ⓣ就是排外吧 → Ⓣ就是排外 in 4 of the 6 targeted texts
    assert [(f.frame, f.share.count, f.share.n) for f in p.frames] == [("Ⓣ就是排外", 4, 6), ("Ⓣ就是排外,", 2, 6)]
    assert [f.frame for f in p.target_frames] == ["Ⓣ就是排外", "Ⓣ就是排外,"]
    assert report.method["traditional"].startswith("bundled table")


def test_side_by_side_frames_and_untagged_files(hand_file, tmp_path):
    other = write_lines(
        tmp_path / "other.jsonl",
        [
            record("他们说的都对，就是排外的人太多"),
            record("上海人就是排外", label="harmful", target="上海人"),
            record("好"),
        ],
    )
    report = profile_report([read_profile_input(hand_file), read_profile_input(other)], top_frames=1)
    b = report.files[1]
    assert b.hard_negatives is None  # no tags at all: unknown, not 0 %
    assert b.opens_with_target == Share(count=1, n=1, share=1.0)
    assert [(f.frame, f.share.count, f.share.n) for f in b.frames] == [("就是排外", 2, 3)]
    assert b.target_frames == []  # one text with a target: nothing repeated
    first, second = report.frames
    assert (first.frame, first.top_in) == ("Ⓣ就是排外", [str(hand_file)])
    assert [(s.count, s.n) for s in first.shares] == [(4, 6), (1, 1)]  # over the texts with a target
    assert (second.frame, second.top_in) == ("就是排外", [str(other)])
    assert [(s.count, s.n) for s in second.shares] == [(4, 8), (2, 3)]  # over all texts


def test_a_frame_with_the_target_slot_has_no_share_in_a_file_without_targets(hand_file, tmp_path):
    plain = write_lines(tmp_path / "plain.jsonl", [record("上海人就是排外"), record("上海人就是排外吧")])
    report = profile_report([read_profile_input(hand_file), read_profile_input(plain)], top_frames=1)
    assert report.frames[0].shares[1] == Share(count=0, n=0, share=None)
    assert report.files[1].opens_with_target.share is None


def test_text_only_ignores_annotations(tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text("TEXT,label\n上海人就是排外,1\n好的好的,0\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"raw.csv:2: field 'label': '1' is not one of harmful, non_harmful"):
        read_profile_input(path, text_field="TEXT")
    data = read_profile_input(path, text_field="TEXT", text_only=True)
    report = profile_report([data])
    assert report.files[0].records == 2 and report.files[0].distributions["label"].missing == 2


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ({"content": "好"}, "text", "missing; choose the text column with --text-field"),
        ({"text": 3}, "text", "not a string (int)"),
        ({"text": "  "}, "text", "empty text"),
        ({"text": "好", "label": "harmfull"}, "label", "did you mean 'harmful'?"),
        ({"text": "好", "stance": 1}, "stance", "expected a string, got int"),
        ({"text": "好", "target": "  "}, "target", "blank; use no_clear_target"),
        ({"text": "好", "tags": "quotation"}, "tags", "expected a list of non-empty strings"),
        ({"text": "好", "meta": ["cold"]}, "meta", "expected an object, got list"),
        ({"text": "好", "meta": {"source": 7}}, "meta.source", "expected a string, got int"),
    ],
)
def test_bad_records_name_file_line_and_field(tmp_path, row, field, message):
    path = write_lines(tmp_path / "bad.jsonl", [{"text": "好的"}, row])
    with pytest.raises(InputError) as caught:
        read_profile_input(path)
    problem = caught.value.problem
    assert (problem.path, problem.line, problem.field) == (str(path), 2, field)
    assert message in problem.message


def test_skip_counts_every_bad_record_and_empty_input_is_an_error(tmp_path):
    path = write_lines(tmp_path / "mixed.jsonl", [{"text": "好的"}, "{broken", {"text": "好", "label": "x"}])
    data = read_profile_input(path, on_error="skip")
    assert len(data.items) == 1 and [p.line for p in data.skipped] == [2, 3]
    assert profile_report([data]).files[0].skipped == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="no records to profile"):
        read_profile_input(empty)
    with pytest.raises(InputError, match=r"no records to profile \(1 skipped"):
        read_profile_input(write_lines(tmp_path / "all_bad.jsonl", ["[1]"]), on_error="skip")
