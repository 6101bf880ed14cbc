"""The ToxiCN, STATE ToxiCN, Multilingual HateCheck and SGHateCheck adapters, on hand-made
fixtures written from each data set's documented layout; SWSR's verimod split; the
convention conflicts ``data convert`` prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.data.test_adapters import by_id, check_counts, real, write
from verimod.cli.app import app
from verimod.core.errors import InputError
from verimod.data.adapters import convert
from verimod.data.adapters.state_toxicn import parse_output

TOXICN_HEADER = (
    "platform,topic,content,toxic,toxic_one_hot,toxic_type,toxic_type_one_hot,expression,expression_one_hot,"
    "target,length,num_attacked"
)
TOXICN = (
    TOXICN_HEADER
    + """
zhihu,region,今天的火锅真好吃,0,"[1, 0]",0,"[1, 0, 0]",0,"[1, 0, 0, 0]","[0, 0, 0, 0, 0, 1]",8,0
tieba,gender,你这个废物闭嘴吧,1,"[0, 1]",1,"[0, 1, 0]",0,"[1, 0, 0, 0]","[0, 0, 0, 0, 0, 1]",8,0
zhihu,region,某省人都是骗子,1,"[0, 1]",2,"[0, 0, 1]",1,"[0, 1, 0, 0]","[0, 1, 0, 0, 0, 0]",7,1
tieba,gender,懂的都懂，她们就那样,1,"[0, 1]",2,"[0, 0, 1]",2,"[0, 0, 1, 0]","[0, 0, 1, 0, 0, 0]",10,1
zhihu,region,别再搞地域黑了，骂某省人的都是在挑拨,1,"[0, 1]",2,"[0, 0, 1]",3,"[0, 0, 0, 1]","[0, 1, 0, 0, 0, 0]",18,1
zhihu,race,那些人和那些女的都一样,1,"[0, 1]",2,"[0, 0, 1]",1,"[0, 1, 0, 0]","[0, 0, 1, 1, 0, 0]",11,2
tieba,lgbt,这帮人真是没救了,1,"[0, 1]",2,"[0, 0, 1]",2,"[0, 0, 1, 0]","[0, 0, 0, 0, 1, 0]",8,1
"""
)


def test_toxicn_mapping_and_the_reporting_conflict(tmp_path):
    result = convert("toxicn", write(tmp_path / "ToxiCN_1.0.csv", TOXICN))
    check_counts(result)
    refs = by_id(result)
    assert (refs["toxicn-r0"].label, refs["toxicn-r0"].category, refs["toxicn-r0"].stance) == (
        "non_harmful",
        "non_attack",
        None,
    )
    assert (refs["toxicn-r1"].category, refs["toxicn-r1"].stance) == ("general_abuse", "attack_or_endorse")
    assert (refs["toxicn-r2"].category, refs["toxicn-r2"].tags) == ("region_ethnicity", ["explicit_hate"])
    assert (refs["toxicn-r3"].category, refs["toxicn-r3"].tags) == ("gender", ["implicit_hate"])
    reporting = refs["toxicn-r4"]  # denounces regional abuse: ToxiCN says toxic; the source gold is kept
    assert (reporting.label, reporting.stance, reporting.category) == ("harmful", None, "region_ethnicity")
    assert reporting.tags == ["source_counts_reporting_as_toxic"]
    assert refs["toxicn-r5"].category is None and refs["toxicn-r6"].category is None  # gender + race; "others"
    assert refs["toxicn-r5"].meta["original"]["target"] == ["Sexism", "Racism"]
    assert len(result.conflicts) == 1 and result.conflicts[0].startswith("1 item(s) with expression 3 (reporting)")
    assert any("two VARM categories" in n for n in result.notes) and any("'others'" in n for n in result.notes)
    assert all(r.target is None and r.target_type is None for r in result.references)


def test_toxicn_inconsistent_rows_fail_or_are_counted(tmp_path):
    bad = (
        TOXICN.splitlines()[0]
        + "\n"
        + 'zhihu,race,文本,0,"[1, 0]",2,"[0, 0, 1]",1,"[0, 1, 0, 0]","[0, 0, 0, 1, 0, 0]",2,1\n'
    )
    bad += 'zhihu,race,文本二,1,"[0, 1]",2,"[0, 0, 1]",1,"[0, 1, 0, 0]","[0, 1]",3,1\n'
    path = write(tmp_path / "bad.csv", bad)
    with pytest.raises(InputError, match=r"bad\.csv:2: field 'toxic_type'"):
        convert("toxicn", path)
    skipped = convert("toxicn", path, on_error="skip")
    assert skipped.converted == 0 and skipped.skipped == {"invalid value": 2}
    assert [p.field for p in skipped.problems] == ["toxic_type", "target"]
    with pytest.raises(InputError, match="not a ToxiCN file: no column 'content'"):
        convert("toxicn", write(tmp_path / "other.csv", "text,label\n文本,1\n"))


STATE_COLUMNS = [
    {
        "id": 1,
        "content": "某省人就会偷东西，真丢人",
        "platform": "zhihu",
        "topic": "region",
        "sen_hate": "1",
        "Q1 Target": "某省人",
        "Q1 Argument": "就会偷东西",
        "Q1 Group": "Region",
        "Q1 hateful": "hate",
    },
    {
        "id": 2,
        "content": "那些男的和那些外国人都一样",
        "sen_hate": "1",
        "Q1 Target": "那些男的",
        "Q1 Argument": "都一样",
        "Q1 Group": "Sexism",
        "Q1 hateful": "hate",
        "Q2 Target": "那些外国人",
        "Q2 Argument": "都一样",
        "Q2 Group": "Region, Racism",
        "Q2 hateful": "hate",
    },
    {
        "id": 3,
        "content": "估计又是那边来的",
        "sen_hate": "1",
        "Q1 Target": "NULL",
        "Q1 Argument": "估计又是那边来的",
        "Q1 Group": "Region, Racism",
        "Q1 hateful": "hate",
    },
    {
        "id": 4,
        "content": "这家店的面很好吃",
        "sen_hate": "0",
        "Q1 Target": "这家店的面",
        "Q1 Argument": "很好吃",
        "Q1 Group": "non-hate",
        "Q1 hateful": "non-hate",
    },
    {
        "id": 5,
        "content": "懂的都懂",
        "sen_hate": "1",
        "Q1 Target": "NULL",
        "Q1 Argument": "懂的都懂",
        "Q1 Group": "non-hate",
        "Q1 hateful": "non-hate",
    },
]


def test_state_toxicn_quadruple_columns(tmp_path):
    path = write(tmp_path / "train.json", json.dumps(STATE_COLUMNS, ensure_ascii=False))
    result = convert("state-toxicn", path)
    check_counts(result)
    refs = by_id(result)
    one = refs["state-1"]
    assert (one.label, one.target, one.target_explicitness, one.category, one.stance) == (
        "harmful",
        "某省人",
        "explicit",
        "region_ethnicity",
        "attack_or_endorse",
    )
    assert one.meta["derived"] == ["stance"] and one.meta["original"]["quadruples"][0]["Argument"] == "就会偷东西"
    two = refs["state-2"]  # two hateful targets, two categories
    assert (two.target, two.category, two.tags) == (None, None, ["multi_target"])
    three = refs["state-3"]  # NULL target, Region + Racism are one VARM category
    assert (three.target, three.category, three.tags) == (None, "region_ethnicity", ["null_target"])
    assert (refs["state-4"].label, refs["state-4"].target, refs["state-4"].category) == (
        "non_harmful",
        None,
        "non_attack",
    )
    assert refs["state-5"].label == "harmful" and refs["state-5"].category is None
    assert result.conflicts == [
        "1 item(s) labelled hateful (sen_hate 1) have no hateful quadruple: kept as harmful (source gold), "
        "no target or category"
    ]


def test_state_toxicn_output_strings(tmp_path):
    assert parse_output("某省人 | 就会偷东西 | Region | hate [SEP] 他 | 还行 | non-hate | non-hate [END]") == [
        {"Target": "某省人", "Argument": "就会偷东西", "Group": "Region", "hateful": "hate"},
        {"Target": "他", "Argument": "还行", "Group": "non-hate", "hateful": "non-hate"},
    ]
    items = [
        {"id": 7, "content": "某省人就会偷东西", "output": "某省人 | 就会偷东西 | Region | hate [END]"},
        {"id": 8, "content": "今天天气不错", "output": "NULL | 天气不错 | non-hate | non-hate [END]"},
        {"id": 9, "content": "坏数据", "output": "只有 | 三段 | hate [END]"},
    ]
    path = write(tmp_path / "test.jsonl", "\n".join(json.dumps(i, ensure_ascii=False) for i in items) + "\n")
    with pytest.raises(InputError, match=r"test\.jsonl:3: field 'output': quadruple .* has 3 parts"):
        convert("state-toxicn", path)
    result = convert("state-toxicn", path, on_error="skip")
    check_counts(result)
    refs = by_id(result)
    assert (refs["state-7"].label, refs["state-7"].target) == ("harmful", "某省人")
    assert refs["state-8"].label == "non_harmful" and result.skipped == {"invalid value": 1}


MHC = (
    (
        "mhc_case_id,functionality,test_case,label_gold,target_ident,ref_case_id,ref_templ_id,templ_id,case_templ,"
        "gender_male,gender_female,label_annotated,label_annotated_maj,disagreement_in_case,disagreement_in_template"
    )
    + """
mandarin-1,derog_neg_emote_h,我讨厌女人。,hateful,women,1,1,1,我讨厌[IDENTITY_P]。,,,hateful,hateful,False,False
mandarin-2,spell_char_swap_h,我讨厌女仁。,hateful,women,1,1,2,我讨厌[IDENTITY_P]。,,,hateful,hateful,False,False
mandarin-3,counter_quote_nh,“女人都是废物”这种话太过分了。,non-hateful,women,,,3,,,,non-hateful,non-hateful,False,False
mandarin-4,target_indiv_nh,他真是个混蛋。,non-hateful,,,,4,,,,non-hateful,hateful,False,False
mandarin-5,derog_dehum_h,穆斯林都是害虫。,hateful,Muslims,,,5,,,,hateful,hateful,False,False
mandarin-6,spell_homophone_h,我讨厌女淫。,hateful,women,,,6,,,,hateful,hateful,False,False
"""
)


def test_mhc_stance_tags_categories_and_conflicts(tmp_path):
    result = convert("mhc", write(tmp_path / "hatecheck_cases_final_mandarin.csv", MHC))
    check_counts(result)
    refs = by_id(result)
    assert (refs["mhc-mandarin-1"].stance, refs["mhc-mandarin-1"].category) == ("attack_or_endorse", "gender")
    assert refs["mhc-mandarin-2"].tags == ["spell_char_swap_h", "spelling_variation"]
    assert refs["mhc-mandarin-6"].tags == ["spell_homophone_h", "spelling_variation", "homophone"]
    quote = refs["mhc-mandarin-3"]
    assert (quote.label, quote.stance, quote.category) == ("non_harmful", "oppose_attack", "non_attack")
    assert quote.tags == ["counter_quote_nh", "quotation", "opposition"]
    insult = refs["mhc-mandarin-4"]  # abuse of a non-protected target: source gold kept
    assert insult.label == "non_harmful" and insult.stance is None
    assert insult.tags == ["target_indiv_nh", "source_nonprotected_abuse", "annotators_disagree_with_gold"]
    assert refs["mhc-mandarin-5"].category is None  # religion: no VARM category
    joined = " | ".join(result.conflicts)
    assert "1 non-hateful case(s) abuse non-protected targets" in joined
    assert "1 hateful case(s) target a religion identity" in joined
    assert "1 case(s) whose annotators' majority differs from the gold label" in joined


SGHC = (
    (
        "c_id,annotator_2,p_label,p_value,p_target,c_testcase,t_case_local,t_function,t_gold,t_direction,t_id,"
        "c_order,annotator_1,annotator_3,annotation_common,annotation_selected"
    )
    + """
0,hateful,{IDENT_P},马来人,Malay,马来人都是骗子。,{IDENT_P}都是骗子。,derog_neg_attrib_h,hateful,general,10,1,hateful,hateful,hateful,hateful
1,hateful,{IDENT_P},佛教徒,Buddhist,佛教徒都是骗子。,{IDENT_P}都是骗子。,derog_neg_attrib_h,hateful,general,10,2,hateful,hateful,hateful,hateful
2,non-hateful,{IDENT_P},老人,seniors,我们要尊重老人。,我们要尊重{IDENT_P}。,ident_pos_nh,non-hateful,general,11,3,non-hateful,non-hateful,non-hateful,non-hateful
3,hateful,{IDENT_P},女人,Women,女人都是骗 子。,{IDENT_P}都是骗 子。,spell_space_add_h,hateful,general,12,4,"""
    + """hateful,non-hateful,non-hateful,no_match
"""
)


def test_sghatecheck_targets_language_and_conflicts(tmp_path):
    result = convert("sghatecheck", write(tmp_path / "zh_annotations.csv", SGHC))
    check_counts(result)
    refs = by_id(result)
    malay = refs["sghc-zh-0"]
    assert (malay.label, malay.target, malay.target_explicitness, malay.category) == (
        "harmful",
        "马来人",
        "explicit",
        "region_ethnicity",
    )
    assert refs["sghc-zh-1"].category is None  # religion
    assert (refs["sghc-zh-2"].stance, refs["sghc-zh-2"].category) == ("neutral_mention", "non_attack")
    spaced = refs["sghc-zh-3"]
    assert spaced.tags == ["spell_space_add_h", "spelling_variation", "annotators_disagree_with_gold"]
    assert spaced.label == "harmful"  # gold kept although the annotators did not agree
    assert any("religion identity" in c for c in result.conflicts)
    assert any("1 case(s) whose annotators' majority differs" in c for c in result.conflicts)
    with pytest.raises(InputError, match="cannot tell the language"):
        convert("sghatecheck", write(tmp_path / "cases.csv", SGHC))
    assert convert("sghatecheck", tmp_path / "cases.csv", language="ms").references[0].id == "sghc-ms-0"


SWSR_MINI = """index,weibo_id,comment_text,gender,location,like,date,label,category,target
0,W1,女人就该待在家里,男,北京,3,01/01/2020,1,SCB,G
1,W1,说得对,女,上海,0,01/01/2020,0,,
2,W2,今天很开心,女,上海,0,01/01/2020,0,,
"""


def test_swsr_split_from_a_split_file_and_bad_files(tmp_path):
    comments = write(tmp_path / "SexComment.csv", SWSR_MINI)
    splits = write(tmp_path / "split.json", json.dumps({"train": ["swsr-0", "swsr-1"], "dev": [], "test": []}))
    result = convert("swsr", comments, split=str(splits))
    assert {r.id: r.split for r in result.references} == {"swsr-0": "train", "swsr-1": "train", "swsr-2": None}
    assert any("1 comment(s) not listed: no split" in n for n in result.notes)
    assert all(r.split is None for r in convert("swsr", comments).references)
    write(tmp_path / "twice.json", json.dumps({"train": ["swsr-0"], "dev": ["swsr-0"], "test": []}))
    with pytest.raises(InputError, match="listed in two splits"):
        convert("swsr", comments, split=str(tmp_path / "twice.json"))
    with pytest.raises(InputError, match="cannot read the split file"):
        convert("swsr", comments, split=str(tmp_path / "missing.json"))


def test_real_swsr_verimod_split(shared_data):
    result = convert("swsr", real(shared_data, "swsr", "SexComment.csv"), split="verimod")
    counts = {name: sum(r.split == name for r in result.references) for name in ("train", "dev", "test")}
    assert counts == {"train": 6278, "dev": 897, "test": 1794}  # the sizes recorded in resources/splits/swsr.json


def test_data_convert_prints_conflicts_and_reaches_the_swsr_split(tmp_path):
    runner = CliRunner()
    source = write(tmp_path / "ToxiCN_1.0.csv", TOXICN)
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["data", "convert", "--from", "toxicn", str(source), str(out)])
    assert result.exit_code == 0, result.output
    assert "convention conflict: 1 item(s) with expression 3 (reporting)" in result.output
    assert "note: label: annotated (toxic 1 → harmful" in result.output
    assert len(out.read_text(encoding="utf-8").splitlines()) == 7
    comments = write(tmp_path / "SexComment.csv", SWSR_MINI)
    splits = write(tmp_path / "split.json", json.dumps({"train": ["swsr-0"], "dev": ["swsr-1"], "test": ["swsr-2"]}))
    result = runner.invoke(
        app, ["data", "convert", "--from", "swsr", "--set", f"split={splits}", str(comments), str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in Path(out).read_text(encoding="utf-8").splitlines()]
    assert [x["split"] for x in lines] == ["train", "dev", "test"]
    conflicts = json.loads(result.output)["conflicts"]
    assert len(conflicts) == 1 and conflicts[0].startswith("2 item(s) have SWSR label 0, which means 'not sexist'")
