"""Seed tools of SoftHateBench: label mapping, reading and cleaning."""

from __future__ import annotations

import doctest

import pytest

from verimod.core.errors import InputError
from verimod.tasks.softhate import seeds
from verimod.tasks.softhate.seeds import (
    clean_items,
    clean_text,
    count_tokens,
    davidson_label,
    hatecheck_label,
    ishate_label,
    read_seeds,
)


def test_davidson_classes():
    assert davidson_label("0") == "hate"
    assert davidson_label(2) == "non_hate"
    assert davidson_label("1") == "non_hate"
    assert davidson_label("1", offensive="hate") == "hate"
    assert davidson_label(" 1 ", offensive="drop") is None
    with pytest.raises(ValueError, match="class must be"):
        davidson_label("3")


def test_ishate_and_hatecheck_labels():
    assert ishate_label("HS") == "hate" and ishate_label("Non-HS") == "non_hate"
    assert hatecheck_label("hateful") == "hate" and hatecheck_label("non-hateful") == "non_hate"
    with pytest.raises(ValueError, match="did you mean 'non-hs'"):
        ishate_label("Non-H")
    with pytest.raises(ValueError, match="label_gold"):
        hatecheck_label("maybe")


DAVIDSON_HEADER = ",count,hate_speech,offensive_language,neither,class,tweet\n"


def test_read_davidson_hand_rows(tmp_path):
    path = tmp_path / "labeled_data.csv"
    path.write_text(
        DAVIDSON_HEADER
        + '0,3,3,0,0,0,"RT @x: these people are vermin and should leave"\n'
        + "1,3,0,3,0,1,some offensive but not hateful words here\n"
        + "2,3,0,0,3,2,a perfectly neutral tweet about the weather today\n"
        + "3,3,0,0,3,2,\n",
        encoding="utf-8",
    )
    result = read_seeds(path, "davidson")
    assert [(i.id, i.label) for i in result.items] == [
        ("davidson-0", "hate"),
        ("davidson-1", "non_hate"),
        ("davidson-2", "non_hate"),
    ]
    assert result.items[0].original["class"] == "0" and result.items[0].group is None
    assert result.counts() == {"read": 4, "converted": 3, "hate": 1, "non_hate": 2, "empty text": 1}
    dropped = read_seeds(path, "davidson", offensive="drop")
    assert dropped.skipped["offensive dropped"] == 1 and dropped.converted == 2
    assert [i.label for i in read_seeds(path, "davidson", offensive="hate").items] == ["hate", "hate", "non_hate"]


def test_read_seeds_bad_label_names_file_line_field(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text(DAVIDSON_HEADER + "0,3,3,0,0,0,fine text here\n1,3,0,0,3,7,bad class here\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_seeds(path, "davidson")
    assert str(info.value).startswith(f"{path}:3: field 'class': class must be")
    skipped = read_seeds(path, "davidson", on_error="skip")
    assert skipped.converted == 1 and skipped.skipped["invalid value"] == 1
    assert skipped.problems[0].line == 3


def test_read_seeds_missing_column_and_unknown_source(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("tweet,label\nhello there everyone,0\n", encoding="utf-8")
    with pytest.raises(InputError, match="field 'class': missing column"):
        read_seeds(path, "davidson")
    with pytest.raises(InputError, match="did you mean 'ishate'"):
        read_seeds(path, "ishat")  # type: ignore[arg-type]


def test_read_hatecheck_hand_rows(tmp_path):
    path = tmp_path / "cases.csv"
    path.write_text(
        ",functionality,case_id,test_case,label_gold,target_ident,direction\n"
        "0,derog_neg_emote_h,1,I hate women.,hateful,women,general\n"
        "1,target_obj_nh,2,I really can't stand cauliflower.,non-hateful,,general\n",
        encoding="utf-8",
    )
    items = read_seeds(path, "hatecheck").items
    assert [(i.id, i.label, i.group) for i in items] == [
        ("hatecheck-1", "hate", "women"),
        ("hatecheck-2", "non_hate", None),
    ]


def test_read_ishate_hand_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table(
        {
            "message_id": ["1", None, "2"],
            "text": ["they ruin every country they enter", "they ruin all countries they enter", "nice day"],
            "hateful_layer": ["HS", "HS", "Non-HS"],
            "implicit_layer": ["Implicit HS", "Implicit HS", None],
            "subtlety_layer": ["Subtle", "Subtle", None],
            "aug_method": ["orig", "eda", "orig"],
            "target": ["Immigrants and Refugees", "Immigrants and Refugees", None],
        }
    )
    path = tmp_path / "ishate_train.parquet.gzip"
    pq.write_table(table, path, compression="gzip")
    result = read_seeds(path, "ishate")
    assert [(i.id, i.label, i.group) for i in result.items] == [
        ("ishate-train-r1", "hate", "Immigrants and Refugees"),
        ("ishate-train-r3", "non_hate", None),
    ]
    assert result.items[0].original["implicit_layer"] == "Implicit HS"
    assert result.skipped["augmented"] == 1
    assert read_seeds(path, "ishate", include_augmented=True).converted == 3


# --- the real files ----------------------------------------------------------------------------


def test_real_davidson(shared_data):
    result = read_seeds(shared_data / "davidson" / "labeled_data.csv", "davidson")
    assert result.read == 24783 and result.converted == 24783
    assert result.counts()["hate"] == 1430 and result.counts()["non_hate"] == 19190 + 4163
    assert len({i.id for i in result.items}) == 24783
    dropped = read_seeds(shared_data / "davidson" / "labeled_data.csv", "davidson", offensive="drop")
    assert dropped.counts() == {
        "read": 24783,
        "converted": 5593,
        "hate": 1430,
        "non_hate": 4163,
        "offensive dropped": 19190,
    }


def test_real_hatecheck(shared_data):
    items = read_seeds(shared_data / "hatecheck-en" / "test_suite_cases.csv", "hatecheck").items
    labels = [i.label for i in items]
    assert (labels.count("hate"), labels.count("non_hate")) == (2563, 1165)
    assert sum(1 for i in items if i.group is None) == 292
    assert {i.group for i in items if i.group} == {
        "women",
        "trans people",
        "gay people",
        "black people",
        "disabled people",
        "Muslims",
        "immigrants",
    }


@pytest.mark.parametrize("split", ["dev", "test", "train"])
def test_real_ishate(shared_data, split):
    pq = pytest.importorskip("pyarrow.parquet")
    path = shared_data / "ishate" / f"ishate_{split}.parquet.gzip"
    table = pq.read_table(path).to_pydict()  # independent read of the same file
    original = [i for i, aug in enumerate(table.get("aug_method", ["orig"] * len(table["text"]))) if aug == "orig"]
    expected_hate = sum(1 for i in original if table["hateful_layer"][i] == "HS")
    result = read_seeds(path, "ishate")
    assert result.converted == len(original)
    assert result.counts()["hate"] == expected_hate
    assert result.counts()["non_hate"] == len(original) - expected_hate
    assert result.skipped.get("augmented", 0) == len(table["text"]) - len(original)
    assert result.read == len(table["text"]) and "empty text" not in result.skipped
    if split == "train":
        assert result.skipped["augmented"] == 34642
        assert read_seeds(path, "ishate", include_augmented=True).skipped == {"empty text": 1}
    hate = [i for i in result.items if i.label == "hate"]
    assert all(i.original["implicit_layer"] in ("Explicit HS", "Implicit HS", None) for i in hate)
    assert all(i.original["implicit_layer"] is None for i in result.items if i.label == "non_hate")


# --- cleaning and tokens -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("!!! RT @mayasolovely: As a woman you shouldn't complain", "!!! As a woman you shouldn't complain"),
        ("look http://t.co/abc123 and https://x.com/a?b=1 and www.example.org/page", "look and and"),
        ("@user1 @user_2: hello", "hello"),
        ("write to john@example.com", "write to john@example.com"),
        ("#MAGA they are ruining it #tcot", "they are ruining it"),
        ("I &amp; you &lt;3 &#128514;", "I & you <3 😂"),
        ("#热门话题# 这些人@小明 真是太过分了", "这些人 真是太过分了"),
        ("  spaces\n\tand   tabs  ", "spaces and tabs"),
    ],
)
def test_clean_text(raw, expected):
    assert clean_text(raw) == expected


def test_clean_text_can_keep_hashtag_words():
    assert clean_text("#Democrat idiots #热门话题#", hashtags="keep_word") == "Democrat idiots 热门话题"


def test_count_tokens():
    assert count_tokens("these people should go back", "en") == 5
    assert count_tokens("这些人应该回去", "zh") == 7
    assert count_tokens("这些人，应该回去！", "zh") == 7  # punctuation is not a token
    assert count_tokens("这些人 NBA", "auto") == 6
    assert count_tokens("they , are", "auto") == 3  # English: whitespace tokens
    assert count_tokens("", "auto") == 0


def test_clean_items_drops_short_texts():
    items = [
        seeds.SeedItem("a", "RT @x: go back home #tcot http://t.co/1", "hate", "davidson"),
        seeds.SeedItem("b", "they should all go back where they came from", "hate", "davidson"),
        seeds.SeedItem("c", "这些人都应该滚", "hate", "x"),
        seeds.SeedItem("d", "滚", "hate", "x"),
    ]
    result = clean_items(items)
    assert [i.id for i in result.items] == ["b", "c"] and result.dropped == ["a", "d"]
    assert result.items[0].text == "they should all go back where they came from"


def test_module_doctests_pass():
    assert doctest.testmod(seeds).failed == 0
