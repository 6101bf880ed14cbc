"""Per-text features of the data profile and the frame miner, on hand-computed cases; the frame
miner also against a brute-force implementation, the Traditional table against OpenCC."""

from __future__ import annotations

import random
import unicodedata

import numpy as np
import pytest

from verimod.data.profile import nearest_rank
from verimod.data.profile_frames import document_frequencies, frame_share, repeated_frames
from verimod.data.profile_text import (
    TraditionalScript,
    bundled_traditional_table,
    char_length,
    emoji_count,
    has_emoticon,
    has_latin,
    has_punctuation,
    opens_with_target,
    skeleton,
    traditional_only_characters,
)


@pytest.mark.parametrize(
    ("text", "length"),
    [
        ("上海人就是排外，没救了。", 12),
        ("哈哈[酷]", 3),  # an emoticon code is one character
        ("[doge][笑cry]", 2),
        ("ＡＢＣ１２", 5),  # NFKC: full-width letters and digits are single characters anyway
        ("我 觉 得\n好", 4),  # whitespace does not count
        ("👨\u200d👩\u200d👧", 3),  # one per pictograph; the joiners do not count
        ("👍🏻", 1),  # a skin tone belongs to its emoji
        ("[1]", 3),  # not an emoticon: brackets and digit count
    ],
)
def test_char_length(text, length):
    assert char_length(text) == length


def test_emoji_emoticon_punctuation_latin():
    assert emoji_count("好😂😂") == 2 and emoji_count("👨\u200d👩\u200d👧好") == 1
    assert emoji_count("★☆♀好") == 0  # bare pictographs with a text default are symbols
    assert emoji_count("❤\ufe0f") == 1
    assert has_emoticon("太好了[酷]") and not has_emoticon("【酷】") and not has_emoticon("[1]")
    assert not has_punctuation("哈哈[笑]")  # emoticon brackets are not punctuation
    assert not has_punctuation("哈哈~+^😂")  # symbols are not punctuation
    assert has_punctuation("哈哈，") and has_punctuation("“哈”") and has_punctuation("好…")
    assert has_latin("好OK") and has_latin("ｏｋ") and has_latin("café") and not has_latin("[doge]好")
    assert not has_latin("×÷123")


@pytest.mark.parametrize("method", ["opencc", "table"])
def test_traditional_either_way(method):
    if method == "opencc":
        pytest.importorskip("opencc", reason="the OpenCC path needs OpenCC (verimod[data])")
    script = TraditionalScript(method)
    assert script.method == method
    assert script.has_traditional("這個人真的很煩")
    assert not script.has_traditional("这个人真的很烦")
    assert not script.has_traditional("李承乾与李治同母")  # 乾 is in GB 2312: both scripts write it
    assert not script.has_traditional("hello")


def test_bundled_table_is_the_opencc_rule():
    opencc = pytest.importorskip("opencc", reason="recomputing the table needs OpenCC (verimod[data])")
    table, source = bundled_traditional_table()
    assert "OpenCC" in source and {"這", "個", "煩", "說"} <= table and not {"乾", "这", "个"} & table
    recomputed = set(traditional_only_characters(opencc.OpenCC("t2s.json")))
    jaccard = len(recomputed & table) / len(recomputed | table)
    assert jaccard > 0.99, f"the bundled table and OpenCC {opencc.__version__} differ: Jaccard {jaccard:.4f}"


@pytest.mark.parametrize(
    ("text", "target", "opens"),
    [
        ("上海人就是排外", "上海人", True),
        ("  ，上海人就是排外", "上海人", True),
        ("“上海人就是排外”这种话", "上海人", True),
        ("【上海人】真是", "上海人", True),
        ("[怒]😂上海人真是", "上海人", True),
        ("ＧＡＹ圈就是乱", "gay圈", True),  # NFKC and case-folded
        ("我看上海人都是", "上海人", False),
        ("海人", "上海人", False),
        ("上海人", "  ", False),
    ],
)
def test_opens_with_target(text, target, opens):
    assert opens_with_target(text, target) is opens


def test_skeleton_masks_target_digits_latin_and_drops_emoji():
    assert skeleton("上海人就是排外, 2024年说了100遍 OK[酷]😂", ["上海人"]) == "Ⓣ就是排外,Ⓝ年说了Ⓝ遍Ⓛ"
    assert skeleton("上海人和上海都", ["上海", "上海人"]) == "Ⓣ和Ⓣ都"  # the longest target first
    assert skeleton("Ⓣ就是", []) == "Ⓛ就是"  # NFKC turns a literal Ⓣ into T: it cannot fake a slot


def test_nearest_rank_matches_numpy_inverted_cdf():
    assert [nearest_rank([9, 9, 9, 10, 12, 12, 16, 17], q) for q in (10, 50, 90, 100)] == [9, 10, 17, 17]
    rng = random.Random(3)
    for _ in range(200):
        values = sorted(rng.randrange(100) for _ in range(rng.randrange(1, 40)))
        for q in (0, 10, 25, 50, 90, 99, 100):
            assert nearest_rank(values, q) == int(np.percentile(values, q, method="inverted_cdf"))
    with pytest.raises(ValueError):
        nearest_rank([], 50)


def test_frames_hand_computed():
    skeletons = [
        "Ⓣ就是排外,没救了。",
        "“Ⓣ就是排外”这种话",
        "我觉得Ⓣ挺好的",
        ",Ⓣ就是排外吧",
        "Ⓣ就是排外,没救了。",
        "我看Ⓣ都是骗子",
    ]
    frames = repeated_frames(skeletons, top=3)
    # Ⓣ就是排外 is in 4 texts; its parts (Ⓣ就是, 就是排外 …) have the same 4 and are not closed;
    # the two identical texts share five 6-grams (df 2), ranked by code point.
    assert [(f.frame, f.texts) for f in frames] == [("Ⓣ就是排外", 4), ("Ⓣ就是排外,", 2), ("外,没救了。", 2)]
    assert frame_share("Ⓣ就是排外", skeletons) == (4, 6)
    assert repeated_frames(skeletons, containing="骗子") == []
    assert repeated_frames(["ⓃⓃⓃ", "ⓃⓃⓃ"]) == []  # a frame needs a Han character


def _brute_force_frames(skeletons, min_n, max_n, min_texts):
    df = {}
    for text in skeletons:
        for g in {text[i : i + n] for n in range(min_n, max_n + 1) for i in range(len(text) - n + 1)}:
            df[g] = df.get(g, 0) + 1
    frequent = {g: c for g, c in df.items() if c >= min_texts}
    closed = [
        g
        for g, c in frequent.items()
        if not any(len(h) > len(g) and g in h and d == c for h, d in frequent.items())
        and any(unicodedata.name(ch, "").startswith("CJK UNIFIED") for ch in g)
    ]
    return frequent, sorted(closed, key=lambda g: (-frequent[g], -len(g), g))


@pytest.mark.parametrize(("min_n", "max_n", "min_texts"), [(3, 5, 2), (1, 3, 2), (2, 6, 3), (4, 6, 2)])
def test_frames_match_brute_force_on_random_texts(min_n, max_n, min_texts):
    rng = random.Random(11)
    alphabet = "就是人,Ⓣ𠀀"  # 𠀀: a Han character beyond the BMP
    for _ in range(30):
        skeletons = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 20))) for _ in range(20)]
        frequent, closed = _brute_force_frames(skeletons, min_n, max_n, min_texts)
        assert document_frequencies(skeletons, min_n, max_n, min_texts) == frequent
        for top in (1, 3, 10, 1000):  # the pruned search of the top frames finds the same
            found = repeated_frames(skeletons, top=top, min_n=min_n, max_n=max_n, min_texts=min_texts)
            assert [f.frame for f in found] == closed[:top]
            assert all(f.texts == frequent[f.frame] for f in found)
