"""Text normalisation: every rule on Weibo/Zhihu-style examples and counter-examples, the record
filters and their count invariant, idempotence as a property, OpenCC, and the real COLD file."""

from __future__ import annotations

import csv
import json
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from verimod.core.errors import InputError
from verimod.data import normalize_rules
from verimod.data.normalize import (
    REMOVAL_REASONS,
    RULE_ORDER,
    MissingExtraError,
    NormalizeConfig,
    Normalizer,
    Placeholders,
    Rejected,
    normalize_records,
    normalize_text,
)
from verimod.data.normalize_filters import first_characters, load_spam_patterns, text_length
from verimod.resources import resource_path

ALL_ON = NormalizeConfig(emoji=True, emoticons=True, punctuation="cjk", remove_cjk_spaces=True)
NO_FILTERS = NormalizeConfig(min_length=0, drop_spam=False, drop_duplicates=False)
PLACEHOLDERS = tuple(Placeholders().model_dump().values())


def with_check_digit(first17: str) -> str:
    """An ID number with its ISO 7064 MOD 11-2 check digit, computed independently of the code
    under test: the check digit c satisfies (sum of d_i * 2^(17-i) mod 11 over all 18 places) = 1."""
    for check in "0123456789X":
        value = 10 if check == "X" else int(check)
        digits = [int(d) for d in first17] + [value]
        if sum(d * pow(2, 17 - i, 11) for i, d in enumerate(digits)) % 11 == 1:
            return first17 + check
    raise AssertionError("unreachable")


VALID_ID = with_check_digit("11010119900307123")
VALID_ID_X = next(n for n in (with_check_digit(f"51010719881122{i:03d}") for i in range(1000)) if n.endswith("X"))
BAD_CHECKSUM_ID = VALID_ID[:17] + ("0" if VALID_ID[17] != "0" else "1")


def norm(text: str, config: NormalizeConfig = NO_FILTERS) -> tuple[str, list[str]]:
    return normalize_text(text, config)


# --- text rules -------------------------------------------------------------------------------

CASES = [
    # nfkc: full-width letters/digits/symbols fold, Chinese punctuation stays
    ("ＡＢＣ１２３，真的吗？", "ABC123，真的吗？", ["nfkc"]),
    ("你好\u3000世界", "你好 世界", ["nfkc"]),
    ("买港版的applecare＋，能否国内换新机呢？", "买港版的applecare+，能否国内换新机呢？", ["nfkc"]),
    ("竖排︐标点﹗", "竖排，标点！", ["nfkc"]),
    ("(ﾟ∀ﾟ)ｶﾞﾝﾊﾞﾚ", "(゜∀゜)ガンバレ", ["nfkc"]),
    ("你好，世界！真的吗？（笑）～……：；「」【】《》、。", "你好，世界！真的吗？（笑）～……：；「」【】《》、。", []),
    ("又欺负女人了，(=￣ρ￣=)..(´・ω・`)", "又欺负女人了，(=￣ρ￣=)..(´・ω・`)", []),
    # escapes written out by a double encoding
    ('其实最排外的是\\"新上海人\\"\\r\\n别问', '其实最排外的是"新上海人" 别问', ["escapes", "controls", "whitespace"]),
    ("D:\\下载\\\\n", "D:\\下载\\\\n", []),
    # html
    ("黑人兄弟系列（<i>基和皮尔</i>），那才真是", "黑人兄弟系列（基和皮尔），那才真是", ["html"]),
    ("吐槽&lt;br&gt;一群人&amp;amp;", "吐槽 一群人&", ["html"]),
    ("比如黑人靠R&amp;B，黑人&gt;白人", "比如黑人靠R&B，黑人>白人", ["html"]),
    ("&#34;外地人&#34;？？？", '"外地人"？？？', ["html"]),
    ("现在，立刻，马上！</p", "现在，立刻，马上！", ["html"]),
    ("我<3你，a<b且c>d，AT&T &notice", "我<3你，a<b且c>d，AT&T &notice", []),
    # controls
    ("隐\u200b形\ufeff字\u202e符\u2066号\u00ad", "隐形字符号", ["controls"]),
    ("第一行\n第二行\t完\x00", "第一行 第二行 完", ["controls"]),
    ("第一行\r\n第二行", "第一行 第二行", ["controls", "whitespace"]),
    ("证伪了🤷\u200d♂️", "证伪了🤷\u200d♂️", []),
    ("就感觉是东北 🤦 \u200d♀️", "就感觉是东北 🤦 ♀️", ["controls"]),
    # urls
    ("详情见 https://weibo.com/u/123?a=1&b=2，快去", "详情见，快去", ["urls", "whitespace"]),
    ("https://www.quora.com/Does-India-have-the-best-food我一向讨厌", "我一向讨厌", ["urls"]),
    ("戳t.cn/A6abcd看视频", "戳看视频", ["urls"]),
    ("（见www.bilibili.com/video/av1576648）", "（见）", ["urls"]),
    ("知乎上quora.com的人", "知乎上quora.com的人", []),
    # e-mail
    ("求分享下资料 767514612@qq.com 谢谢", "求分享下资料 <邮箱> 谢谢", ["emails"]),
    # ID numbers
    (f"身份证号{VALID_ID}，快查", "身份证号<身份证号>，快查", ["id_cards"]),
    (f"号码{VALID_ID_X.lower()}", "号码<身份证号>", ["id_cards"]),
    (f"{VALID_ID[:6]} {VALID_ID[6:14]} {VALID_ID[14:]}", "<身份证号>", ["id_cards"]),
    (f"号码{BAD_CHECKSUM_ID}", f"号码{BAD_CHECKSUM_ID}", []),
    ("订单号12345678901234567", "订单号12345678901234567", []),
    ("流水号1101011990023012345", "流水号1101011990023012345", []),
    # mobile phones
    ("TEL：13722348520。谢绝记者", "TEL：<手机号>。谢绝记者", ["phones"]),
    ("电话+86 138-0013-8000或0086 13800138000或8613800138000", "电话<手机号>或<手机号>或<手机号>", ["phones"]),
    ("微信号15198733178，欢迎私聊", "微信号<手机号>，欢迎私聊", ["phones"]),
    ("辽宁舰150000千瓦，耗费5800000升燃油", "辽宁舰150000千瓦，耗费5800000升燃油", []),
    ("运单号213800138000188，12345678901", "运单号213800138000188，12345678901", []),
    # landlines
    ("座机010-62345678，（0755）88889999，021 62345678-123", "座机<电话>，<电话>，<电话>", ["landlines"]),
    ("编号01062345678，2020-12345678", "编号01062345678，2020-12345678", []),
    # QQ (after a cue only)
    ("有事加QQ：123456789", "有事加QQ：<QQ号>", ["qq"]),
    ("黑人滚，扣扣2811437428", "黑人滚，扣扣<QQ号>", ["qq"]),
    ("欢迎加入，群号码：480611554", "欢迎加入，群号码：<QQ号>", ["qq"]),
    ("我玩QQ飞车十年了，价格123456元", "我玩QQ飞车十年了，价格123456元", []),
    # WeChat (after a cue only)
    ("加微信：abc_123了解", "加微信：<微信号>了解", ["wechat"]),
    ("vx abc123，V信 zhang-san9", "vx <微信号>，V信 <微信号>", ["wechat"]),
    ("微信号zhangsan", "微信号<微信号>", ["wechat"]),
    ("你这种人就该被微信拉黑，关注微信公众号", "你这种人就该被微信拉黑，关注微信公众号", []),
    ("我用微信 account 和 wxpython", "我用微信 account 和 wxpython", []),
    # mentions
    ("//@ERIC_KAO伟:传奇星x土豆网//@黑星STAR2014:", "//@用户:传奇星x土豆网//@用户:", ["mentions"]),
    ("楼上@胡砸 说得对", "楼上@用户 说得对", ["mentions"]),
    ("@_@呵呵 最近", "@_@呵呵 最近", []),
    # topics
    ("#开个玩笑# 上海人一点不排外", "开个玩笑 上海人一点不排外", ["topics"]),
    ("#女拳##地域黑#又来了", "女拳地域黑又来了", ["topics"]),
    ("C#和F#都会，排名#1#", "C#和F#都会，排名#1#", []),
    # whitespace
    ("没有。 更说明能走出来的人", "没有。更说明能走出来的人", ["whitespace"]),
    ("  前后   空格  ", "前后 空格", ["whitespace"]),
    ("小明 白了", "小明 白了", []),
    # emoji and bracket emoticons are kept by default
    ("恶心🤢[哈哈]", "恶心🤢[哈哈]", []),
]


@pytest.mark.parametrize(("text", "expected", "rules"), CASES)
def test_rule_on_real_style_text(text, expected, rules):
    assert norm(text) == (expected, rules)


OPTION_CASES = [
    (ALL_ON, "恶心🤢，日本也超级恶心🤢", "恶心，日本也超级恶心", ["emoji"]),
    (
        ALL_ON,
        "🤦\u200d♂️说的时候👍🏻1️⃣🇨🇳🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f❤️好",
        "说的时候好",
        ["emoji"],
    ),
    (ALL_ON, "★重点★ 女♀ ❤ ✔ ©", "★重点★ 女♀ ❤ ✔ ©", []),
    (ALL_ON, "男主太可怜[大哭][doge][笑cry]", "男主太可怜", ["emoticons"]),
    (ALL_ON, "文献[1]和【转发】[/cp]", "文献[1]和【转发】[/cp]", []),
    (ALL_ON, "你好,世界!真的?(笑)", "你好，世界！真的？（笑）", ["punctuation"]),
    (ALL_ON, "共1,000人 12:30 v1.0...", "共1,000人 12:30 v1.0...", []),
    (ALL_ON, "我 爱 北 京", "我爱北京", ["whitespace"]),
    (ALL_ON, "@小天犬 你好", "@用户 你好", ["mentions"]),
    (NormalizeConfig(punctuation="ascii"), "你好，世界！（笑）……", "你好,世界!(笑)......", ["punctuation"]),
    (
        NormalizeConfig(keep_newlines=True),
        "第一行\r\n\r\n  第二行\u2028第三行",
        "第一行\n第二行\n第三行",
        ["controls", "whitespace"],
    ),
    (NormalizeConfig(topics="remove"), "#开个玩笑#上海人一点不排外", "上海人一点不排外", ["topics"]),
    (NormalizeConfig(topics="keep"), "#开个玩笑#上海人一点不排外", "#开个玩笑#上海人一点不排外", []),
    (
        NormalizeConfig(placeholders=Placeholders(url="<网址>", phone="")),
        "看http://t.cn/x 打13800138000",
        "看<网址> 打",
        ["urls", "phones"],
    ),
    (NormalizeConfig(nfkc=False, html=False), "ＡＢＣ&amp;", "ＡＢＣ&amp;", []),
    (NormalizeConfig(nfkc=False, punctuation="ascii"), "竖排︐标点﹗（笑）", "竖排,标点!(笑)", ["punctuation"]),
]


@pytest.mark.parametrize(("config", "text", "expected", "rules"), OPTION_CASES)
def test_options(config, text, expected, rules):
    assert normalize_text(text, config) == (expected, rules)


def test_zero_width_characters_cannot_hide_an_identifier():
    assert norm("加V：138\u200b0013\u200b8000") == ("加V：<手机号>", ["controls", "phones"])
    assert norm("ｑｑ：１２３４５６７８９") == ("qq：<QQ号>", ["nfkc", "qq"])


def test_report_counts_items_and_look_alikes():
    records = [{"text": f"身份证{VALID_ID}和{BAD_CHECKSUM_ID}，电话13800138000或13900139000"}]
    kept, report = normalize_records(records, config=NO_FILTERS)
    assert [r["text"] for r in kept] == [f"身份证<身份证号>和{BAD_CHECKSUM_ID}，电话<手机号>或<手机号>"]
    assert report.changed["id_cards"] == 1 and report.replaced["id_cards"] == 1
    assert report.changed["phones"] == 1 and report.replaced["phones"] == 2
    assert report.left_alone == {"id_cards.bad_checksum": 1}
    assert report.texts_changed == 1


def test_rule_order_is_documented_and_complete():
    assert RULE_ORDER[:4] == ("escapes", "html", "controls", "nfkc") and RULE_ORDER[-1] == "whitespace"
    doc = sys.modules["verimod.data.normalize"].__doc__ or ""
    positions = [doc.index(f"``{name}``") for name in RULE_ORDER]
    assert positions == sorted(positions)


# --- idempotence ------------------------------------------------------------------------------

FRAGMENTS = [
    "http://", "https://t.cn/", "www.", ".com", "/", "微信", "vx", "QQ", "扣扣", "号", "：", ":", "是", "&amp;", "&lt;",
    "&gt;", "&#34;", "<br>", "</p", "<i>", "\\n", '\\"', "\\u3000", "\\", "@", "#", "[", "]", "[哈哈]", "138", "0013",
    "8000", "110101", "19900307", "1233", "010-", "6234", "+86", " ", "\n", "\t", "\u3000", "\u200b", "\u200d",
    "\ufe0f", "🤦", "♂", "❤", "🇨", "1", "x", "X", "a", "_", "-", ".", ",", "!", "?", "(", ")", "，", "。", "！", "（",
    "）", "…", "～", "︐", "´", "ﾟ", "ｶ", "Ａ", "＠", "＃", "你", "好", "中", "用户", "<手机号>", "@用户", "\u0301",
    "\U000f0000", "abc@qq.com", "私信我", "#话题#", "C#", "~",
]  # fmt: skip
TEXTS = st.lists(st.sampled_from(FRAGMENTS), max_size=20).map("".join) | st.text(max_size=40)


@pytest.mark.parametrize(
    "config",
    [NormalizeConfig(), ALL_ON, NormalizeConfig(punctuation="ascii", keep_newlines=True, topics="remove")],
    ids=["default", "all-on", "ascii-newlines"],
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS)
def test_normalising_twice_equals_once(config, text):
    once, _ = normalize_text(text, config)
    assert normalize_text(once, config) == (once, [])


RECORD_TEXTS = [
    "",
    "  ",
    "？？！",
    "短评论",
    "兼职日结，手机就能做，每天两小时",
    "这是一条足够长的正常评论内容，没有问题",
]


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.sampled_from(RECORD_TEXTS) | TEXTS, max_size=30))
def test_every_record_is_kept_or_counted(texts):
    rejected: list[Rejected] = []
    kept, report = normalize_records(({"text": t, "n": i} for i, t in enumerate(texts)), on_reject=rejected.append)
    kept = list(kept)
    assert report.complete and report.records_in == len(texts) == report.records_out + sum(report.removed.values())
    assert len(kept) == report.records_out and len(rejected) == sum(report.removed.values())
    assert sorted(r["n"] for r in kept) == sorted(set(range(len(texts))) - {r.record["n"] for r in rejected})


# --- record filters ---------------------------------------------------------------------------


def test_filters_remove_with_reasons_and_keep_other_fields():
    long_text = "这种男人又无耻又恶心，自己算什么东西"
    records = [
        {"id": 1, "text": long_text, "label": 1},
        {"id": 2, "text": "http://t.cn/abc"},
        {"id": 3, "text": "？？？！！！……(╯▽╰)"},
        {"id": 4, "text": "太恶心了"},
        {"id": 5, "text": "兼职日结，每天两小时，手机就能做，详情看主页"},
        {"id": 6, "text": " " + long_text.replace("，", " ，") + "\u200b"},
        {"id": 7, "text": None},
    ]
    rejected: list[Rejected] = []
    config = NormalizeConfig(keep_original="raw", missing_text="reject", min_length=15)
    kept, report = normalize_records(records, config=config, on_reject=rejected.append)
    assert report.complete is False
    kept = list(kept)
    assert report.complete is True
    assert kept == [{"id": 1, "text": long_text, "label": 1, "raw": long_text}]
    assert [(r.record["id"], r.reason) for r in rejected] == [
        (2, "empty"), (3, "symbol_only"), (4, "too_short"), (5, "spam"), (6, "duplicate"), (7, "missing_text"),
    ]  # fmt: skip
    assert rejected[5].record == {"id": 7, "text": None}
    assert rejected[4].detail == "same text as record 1" and rejected[4].record["raw"].startswith(" ")
    assert rejected[2].detail == "4 < 15 characters"
    assert "part_time_daily_pay" in rejected[3].detail
    assert list(report.removed) == list(REMOVAL_REASONS)
    assert report.removed == {r: 1 for r in REMOVAL_REASONS}
    assert report.spam_patterns == {"part_time_daily_pay": 1}
    assert records[5]["text"].startswith(" ")  # the input is not modified
    assert any("removed spam: 1" in line for line in report.lines())


def test_missing_text_is_an_input_error_naming_the_record():
    kept, _ = normalize_records([{"text": "一条足够长的正常评论内容，没有问题"}, {"content": "x"}], source="in.jsonl")
    with pytest.raises(InputError) as err:
        list(kept)
    assert (err.value.problem.path, err.value.problem.line, err.value.problem.field) == ("in.jsonl", 2, "text")
    assert "missing" in err.value.problem.message
    with pytest.raises(InputError, match="expected a string, got int"):
        list(normalize_records([{"body": 3}], text_field="body")[0])


def test_line_numbers_name_records_in_errors_and_duplicate_details():
    normalizer = Normalizer(source="in.jsonl")
    text = "同样的一条评论内容，足够长了吧"
    assert normalizer.process({"text": text}, line=3)[1] is None
    assert normalizer.process({"text": text}, line=7)[1] == ({"text": text}, "duplicate", "same text as record 3")
    with pytest.raises(InputError) as err:
        normalizer.process({"title": "x"}, line=9)
    assert str(err.value) == "in.jsonl:9: field 'text': missing (the text to normalise)"


def test_keep_original_must_not_overwrite_a_field():
    kept, _ = normalize_records([{"text": "x", "raw": "y"}], config=NormalizeConfig(keep_original="raw"))
    with pytest.raises(InputError, match="already present"):
        list(kept)
    with pytest.raises(ValueError, match="must differ"):
        Normalizer(NormalizeConfig(keep_original="text"))


@pytest.mark.parametrize(
    ("text", "length"),
    [
        ("你好", 2),
        ("你 好 ", 2),
        ("<手机号>你好", 3),
        ("@用户 你好", 3),
        ("[哈哈][哈哈]好", 3),
        ("é", 1),
        ("👨\u200d👩\u200d👧", 3),
    ],
)
def test_text_length(text, length):
    assert text_length(text, PLACEHOLDERS) == length


def test_min_length_boundary_and_off_by_default():
    fifteen, fourteen = "一二三四五六七八九十一二三四五", "一二三四五六七八九十一二三四"
    config = NormalizeConfig(min_length=15)
    kept, report = normalize_records([{"text": fifteen}, {"text": fourteen + " "}], config=config)
    assert [r["text"] for r in kept] == [fifteen] and report.removed["too_short"] == 1
    kept, _ = normalize_records([{"text": "这中男人就是垃圾[酷]"}, {"text": "短"}])  # the default: no floor
    assert [r["text"] for r in kept] == ["这中男人就是垃圾[酷]", "短"] and NormalizeConfig().min_length == 0
    emoticon, _ = normalize_records([{"text": "这中男人就是垃圾[酷]"}], config=NormalizeConfig(min_length=10))
    assert list(emoticon) == []  # 8 characters + one emoticon = 9 < 10: [酷] counts one, not three


def test_duplicates_with_another_label_are_conflicts():
    normalizer = Normalizer(source="in.jsonl")
    text = "同样的一条评论内容"
    assert normalizer.process({"text": text, "label": "1"}, line=2)[1] is None
    same = normalizer.process({"text": text, "label": "1"}, line=3)[1]
    other = normalizer.process({"text": text + " ", "label": "0"}, line=5)[1]
    unlabelled = normalizer.process({"text": text}, line=6)[1]
    assert normalizer.process({"text": "另一条评论"}, line=7)[1] is None
    labelled_later = normalizer.process({"text": "另一条评论", "label": "1"}, line=8)[1]
    assert same is not None and same.detail == "same text as record 2"
    assert other is not None and other.reason == "duplicate" and "another label ('1' kept, '0' here)" in other.detail
    assert unlabelled is not None and unlabelled.detail == "same text as record 2"  # no label lost with it
    assert labelled_later is not None and "another label (None kept, '1' here)" in labelled_later.detail
    report = normalizer.finish()
    assert (report.removed["duplicate"], report.duplicate_conflicts, report.conflict_groups) == (4, 2, 2)
    assert [(c.kept_line, c.line, c.kept_label, c.label) for c in normalizer.conflicts] == [
        (2, 5, "1", "0"),
        (7, 8, None, "1"),
    ]
    plain = Normalizer(label_field=None)
    plain.process({"text": text, "label": "1"})
    plain.process({"text": text, "label": "0"})
    assert plain.finish().duplicate_conflicts == 0  # no label field: duplicates only


def test_duplicates_are_judged_after_normalisation_and_the_first_is_kept():
    texts = [
        "同样的一条评论内容，足够长了吧",
        "同样的一条评论内容，足够长了吧 ",
        "同样的一条评论内容\u200b，足够长了吧",
    ]
    rejected: list[Rejected] = []
    kept, report = normalize_records(({"text": t, "i": i} for i, t in enumerate(texts)), on_reject=rejected.append)
    assert [r["i"] for r in kept] == [0] and report.removed["duplicate"] == 2
    kept, _ = normalize_records(({"text": t} for t in texts), config=NormalizeConfig(drop_duplicates=False))
    assert len(list(kept)) == 3


# --- spam -------------------------------------------------------------------------------------

SPAM_DATA = json.loads(resource_path("normalize_patterns.json").read_text(encoding="utf-8"))
SPAM_ENTRIES = {e["name"]: e for e in SPAM_DATA["spam"]}


def is_spam(text: str) -> bool:
    normalizer = Normalizer(NormalizeConfig(min_length=0, drop_duplicates=False))
    return normalizer.process({"text": text})[1] is not None


@pytest.mark.parametrize("name", sorted(SPAM_ENTRIES))
def test_each_spam_pattern_matches_its_examples_and_spares_its_counter_examples(name):
    entry = SPAM_ENTRIES[name]
    pattern = next(p for p in load_spam_patterns().patterns if p.name == name)
    assert entry["examples"] and entry["counter_examples"] and entry["why"]
    for example in entry["examples"]:
        assert pattern.regex.search(normalize_text(example)[0].replace(" ", "")), example
        if entry["weight"] >= 2:
            assert is_spam(example), example
    for counter in entry["counter_examples"]:
        assert not is_spam(counter), counter


@pytest.mark.parametrize(
    "text",
    [
        "加微信 abc_123，了解兼职详情",
        "有意者私信我，一手货源",
        "点击链接领取新人红包 http://t.cn/A6x",
        "日韩代购，正品保证，加我vx：shop_2024",
        "高价回收旧手机，电话13800138000",
        "加 微 信 领 取 福 利 免 费 领 取",
    ],
)
def test_advertisements_are_spam(text):
    assert is_spam(text)


@pytest.mark.parametrize(
    "text",
    [
        "有本事加我微信当面说，孬种，你就是个垃圾",
        "你这种人就该被微信拉黑，滚远点",
        "有种私信我啊，看我不骂死你这个贱人",
        "代购都是骗子，这种人活该被骂",
        "出售国家利益的汉奸，全家都该死",
        "点击链接就中毒，傻子才点，你就是那个傻子",
        "我的微信是 abc_123，有种来骂我",
        "黑鬼就是懒，河南人都是骗子",
        "女拳就是一群神经病，天天喊着要特权",
    ],
)
def test_ordinary_and_abusive_comments_are_not_spam(text):
    assert not is_spam(text)


def test_spam_threshold_and_switch():
    cue_and_contact = "有意者联系 13800138000"
    assert is_spam(cue_and_contact)
    strict = Normalizer(NormalizeConfig(min_length=0, spam_threshold=3))
    assert strict.process({"text": cue_and_contact})[1] is None
    off = Normalizer(NormalizeConfig(min_length=0, drop_spam=False))
    assert off.process({"text": "兼职日结，每天两小时"})[1] is None


def test_custom_spam_patterns_file(tmp_path):
    path = tmp_path / "spam.json"
    path.write_text(json.dumps({"spam": [{"name": "casino", "weight": 2, "pattern": "赌场"}]}), encoding="utf-8")
    normalizer = Normalizer(NormalizeConfig(min_length=0, spam_patterns=path))
    assert normalizer.process({"text": "新开的赌场"})[1] == ({"text": "新开的赌场"}, "spam", "casino (score 2)")
    assert normalizer.process({"text": "兼职日结"})[1] is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"spam": [{"name": "x", "weight": 2, "pattern": "(unclosed"}]}), encoding="utf-8")
    with pytest.raises(InputError, match=r"spam\[0\]\.pattern.*not a valid regular expression"):
        Normalizer(NormalizeConfig(spam_patterns=bad))


def test_first_character_prefilter_is_exact_or_absent():
    assert first_characters("(?<!自)私我|(招聘?|诚招)兼职|日赚\\d+") == frozenset("私招诚日")
    assert first_characters("ab", ignore_case=True) == frozenset("aA")
    assert first_characters("\\d+元") is None and first_characters("a*") is None


# --- configuration ----------------------------------------------------------------------------


def test_config_rejects_unknown_options_and_unstable_placeholders():
    with pytest.raises(ValidationError):
        NormalizeConfig(minlength=3)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        Placeholders(phone=" <手机号>")
    with pytest.raises(ValidationError):
        Placeholders(phone="＜手机号＞")  # not NFKC-stable
    with pytest.raises(ValueError, match="would itself be rewritten"):
        normalize_text("x", NormalizeConfig(emoticons=True, placeholders=Placeholders(phone="[手机号]")))


def test_t2s_converts_with_opencc():
    pytest.importorskip("opencc", reason="OpenCC is an optional extra: pip install 'verimod[data]'")
    config = NormalizeConfig(t2s=True, min_length=0)
    assert normalize_text("這個網站的東西真貴，頭髮乾淨", config) == ("这个网站的东西真贵，头发干净", ["t2s"])
    assert normalize_text("这个网站的东西真贵", config) == ("这个网站的东西真贵", [])
    kept, report = normalize_records([{"text": "這種男人又無恥又噁心，自己算什麼東西"}], config=config)
    assert [r["text"] for r in kept] == ["这种男人又无耻又恶心，自己算什么东西"] and report.changed["t2s"] == 1


def test_t2s_without_opencc_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "opencc", None)  # makes `import opencc` fail
    normalize_rules.opencc_converter.cache_clear()
    normalize_rules.build_rules.cache_clear()
    try:
        with pytest.raises(MissingExtraError, match=r'pip install "\.\[data\]" in the verimod folder') as err:
            normalize_records([], config=NormalizeConfig(t2s=True))
        assert "\n" not in str(err.value)
    finally:
        normalize_rules.opencc_converter.cache_clear()
        normalize_rules.build_rules.cache_clear()


# --- real data --------------------------------------------------------------------------------


def test_real_cold_test_split(shared_data):
    with (shared_data / "cold" / "test.csv").open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 5323 and "TEXT" in rows[0]
    rejected: list[Rejected] = []
    config = NormalizeConfig(keep_original="raw")
    kept, report = normalize_records(rows, text_field="TEXT", config=config, on_reject=rejected.append)
    kept = list(kept)
    assert report.complete and report.records_in == 5323 == len(kept) + len(rejected)
    assert report.records_in == report.records_out + sum(report.removed.values())
    assert 5000 < len(kept) < 5323 and report.removed["too_short"] == 0 and report.removed["duplicate"] > 0
    texts = [r["TEXT"] for r in kept]
    assert len(set(texts)) == len(texts)
    assert min(text_length(t, PLACEHOLDERS) for t in texts) < 15  # short comments are kept by default
    for record in kept:
        text, raw = record["TEXT"], record["raw"]
        assert set(record) == {"", "split", "topic", "label", "fine-grained-label", "TEXT", "raw"}
        assert text.count("，") == raw.count("，") and text.count("？") == raw.count("？")  # Chinese marks stay
        assert not any(s in text for s in ("\u200b", "\ufeff", "&amp;", "&lt;", "http", "\\r", "  "))
        assert normalize_text(text, config) == (text, [])
    assert any("[" in t for t in texts)  # Weibo emoticons are kept by default
    assert report.removed["spam"] == 0  # the test split holds no advertisements
