"""Canonical characters, pinyin and glyph views, stance cues, jieba words, obfuscated copies."""

from __future__ import annotations

from verimod.models.baseline.augment import obfuscate
from verimod.models.baseline.charmap import canonical_chars, canonical_text, default_charmap, syllables
from verimod.models.baseline.views import TextAnalyzer, cue_features, robust_features, word_bounds, words


def test_canonical_chars_keep_one_entry_per_character():
    text = "Ｈｅｌｌｏ蓋噁心🐷傻*逼a-b\u200b！"
    chars = canonical_chars(text)
    assert len(chars) == len(text)
    assert "".join(chars[:5]) == "hello"
    assert chars[5:7] == ["盖", "恶"]  # Traditional → Simplified
    assert chars[8] == default_charmap().emoji["🐷"] and chars[8] != "🐷"  # emoji → its CLDR name
    assert chars[10] == "" and "".join(chars[9:12]) == "傻逼"  # separator between Han characters dropped
    assert "".join(chars[12:15]) == "a-b"  # ... but not between Latin letters
    assert chars[15] == ""  # zero-width space


def test_separators_in_runs_and_at_the_edges():
    assert canonical_text("傻*/·逼") == "傻逼"
    assert canonical_text("*傻逼*") == "*傻逼*"  # not between two Han characters
    assert canonical_text("12*34") == "12*34"


def test_pinyin_syllables_are_the_same_for_homophones_and_latin_pinyin():
    han = syllables(canonical_text("傻逼"))
    assert han == syllables(canonical_text("沙比")) == syllables(canonical_text("sha bi"))
    assert han == syllables(canonical_text("shǎ bī")) == syllables(canonical_text("shabi"))
    assert syllables("nmsl") == [["~nmsl"]]
    assert syllables("河南人，就是") == [["he", "nan", "ren"], ["jiu", "shi"]]


def test_robust_features_survive_homophones_and_similar_shapes():
    clean, homophone = robust_features(canonical_text("傻逼")), robust_features(canonical_text("沙比"))
    assert "p:sha bi" in clean and "p:sha bi" in homophone
    assert "i:sb" in robust_features(canonical_text("你是sb")) and "i:sb" in clean
    table = default_charmap()
    char, groups = next((c, g) for c, g in sorted(table.glyph.items()) if len(c) == 1 and "\u4e00" <= c <= "\u9fff")
    other = next(c for c, g in sorted(table.glyph.items()) if c != char and set(g) & set(groups))
    shared = set(robust_features(char + "心")) & set(robust_features(other + "心"))
    assert any(f.startswith("g:#") for f in shared)


def test_stance_and_lexicon_cues():
    quoted = cue_features(canonical_text("他说“你就是个傻逼”，这种话太过分了"), *_cue_tables())
    assert "lex:general_abuse:quoted" in quoted and "s:quotation" in quoted
    assert "s:report" in quoted and "s:denounce" in quoted
    negated = cue_features(canonical_text("我不是说女人傻逼"), *_cue_tables())
    assert "s:negation>abuse" in negated and "s:negation>identity" in negated
    addressed = cue_features(canonical_text("你这个废物"), *_cue_tables())
    assert "s:second_person+abuse" in addressed and "lex:general_abuse:quoted" not in addressed
    assert cue_features(canonical_text("今天天气很好"), *_cue_tables()) == []


def _cue_tables():
    analyzer = TextAnalyzer()
    return analyzer.matcher, analyzer.stance


def test_jieba_words_and_their_bounds():
    tokens = words("河南人就是偷井盖的")
    assert "".join(tokens) == "河南人就是偷井盖的" and "井盖" in tokens
    bounds = word_bounds("河南人就是偷井盖的")
    assert bounds[0] == 0 and bounds[-1] == 9 and 3 in bounds
    surface, _, _ = TextAnalyzer().features(canonical_text("河南人就是偷井盖的"))
    assert "w:井盖" in surface and "河南人" in surface
    assert "w:井盖" not in TextAnalyzer(words=False).features(canonical_text("河南人就是偷井盖的"))[0]


def test_obfuscated_copies_are_seeded_and_keep_the_target():
    text = "河南人就是偷井盖的，没素质"
    first, again = obfuscate(text, "k", 0), obfuscate(text, "k", 0)
    assert first == again and first != text
    assert obfuscate(text, "k", 1) != first or obfuscate(text, "j", 0) != first
    kept = obfuscate(text, "k", 0, rate=1.0, protected=[(0, 3)])
    assert kept.startswith("河南人")
    assert obfuscate("hello world", "k") == "hello world"  # no Han character: unchanged


def test_split_characters_are_recombined_unless_they_are_words():
    assert canonical_text("你个扌喿蛋的马扁子") == "你个操蛋的骗子"
    assert canonical_text("木仓") == "枪" and canonical_text("女表子") == "婊子"
    chars = canonical_chars("马扁子")
    assert chars == ["骗", "", "子"]  # one entry per input character, the second one emptied
    assert canonical_text("这个女子很好") == "这个女子很好"  # 女子 is a word of its own
    assert canonical_text("男尊女卑") == "男尊女卑"  # 女卑 is part of another word
    assert canonical_text("马*扁") == "骗"  # separators go first


def test_phonetic_cues_find_homophone_spellings_of_cue_words():
    analyzer = TextAnalyzer()
    clean = analyzer.string_features(canonical_text("你真是个傻逼"))[1]
    for spelling in ("杀笔", "鲨鼻"):  # homophones that no lexicon lists
        homophone = analyzer.string_features(canonical_text("你真是个" + spelling))[1]
        assert "lexp:general_abuse" in clean and "lexp:general_abuse" in homophone
        assert "lex:general_abuse" not in homophone
    assert not any(c.startswith("lexp:") for c in analyzer.string_features("今天天气很好")[1])


def test_clause_and_question_stance_cues():
    analyzer = TextAnalyzer()
    cues = analyzer.string_features(canonical_text("不要歧视河南人。凭什么说河南人都是骗子？"))[1]
    assert "s:denounce=歧视" in cues and "s:clause:denounce+identity" in cues
    assert "s:question+identity" in cues
    plain = analyzer.string_features(canonical_text("河南人都是骗子。"))[1]
    assert not any(c.startswith(("s:question", "s:clause")) for c in plain)


def test_every_obfuscation_kind_rewrites_content_characters_only():
    from verimod.models.baseline.augment import FUNCTION_CHARS, KINDS

    text = "你们这些骗子就是猪，河南人都是狗"
    for kind in KINDS:
        copy = obfuscate(text, "k", 3, rate=1.0, kinds=(kind,))
        assert copy != text, kind
        assert copy == obfuscate(text, "k", 3, rate=1.0, kinds=(kind,))
        assert canonical_text(copy) != text or kind in ("separator", "traditional", "split")
        kept = [ch for ch in text if ch in FUNCTION_CHARS]
        assert all(ch in copy for ch in kept) or kind == "initials", kind
    assert canonical_text(obfuscate(text, "k", 3, rate=1.0, kinds=("traditional",))) == canonical_text(text)
    assert canonical_text(obfuscate(text, "k", 3, rate=1.0, kinds=("separator",))) == canonical_text(text)
