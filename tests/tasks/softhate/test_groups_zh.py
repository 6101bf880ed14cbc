"""The Chinese target-group taxonomy and the resolution rules (exact, rewrite, demonym,
compound, fuzzy, unmapped), on hand-made phrases and on the regional targets of the real COLD
and SWSR texts (skipped when ../shared/data is absent)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from verimod.resources import resource_path
from verimod.tasks.softhate.groups import GroupTaxonomy, load_group_taxonomy
from verimod.tasks.softhate.schema import Level1Domain, TargetGroup
from verimod.tasks.varm.cue_lexicons import CueMatcher, load_lexicon

ZH = load_group_taxonomy(language="zh")
# Provincial-level divisions, written here independently of the taxonomy file.
PROVINCES = tuple(
    "北京 天津 河北 山西 内蒙古 辽宁 吉林 黑龙江 上海 江苏 浙江 安徽 福建 江西 山东 河南 湖北 湖南 广东 广西 海南 "  # noqa: SIM905
    "重庆 四川 贵州 云南 西藏 陕西 甘肃 青海 宁夏 新疆 台湾 香港 澳门".split()
)
NORTHEAST = {"辽宁", "吉林", "黑龙江"}
DEMONYM = re.compile("(" + "|".join(sorted(PROVINCES, key=len, reverse=True)) + ")(省的人|省人|人|佬|籍)")


@pytest.mark.parametrize(
    ("phrase", "group", "method"),
    [
        ("河南人", "河南人", "exact"),
        ("郑州人", "河南人", "exact"),
        ("井盖省", "河南人", "exact"),
        ("中国女性", "女性", "exact"),
        ("日本人", "日本人", "exact"),
        ("这些河南人", "河南人", "rewrite"),
        ("河南省的人", "河南人", "rewrite"),
        ("东北人们", "东北人", "rewrite"),
        ("农村的人", "农村人", "rewrite"),
        ("日本", "日本人", "rewrite"),
        ("上海人群体", "上海人", "rewrite"),
        ("河南佬", "河南人", "demonym"),
        ("这些上海佬", "上海人", "demonym"),
        ("东北银", "东北人", "exact"),
        ("河南女人", "河南人", "compound"),
        ("东北大妈", "东北人", "compound"),
        ("people from Henan", "河南人", "exact"),
        ("Muslims", "穆斯林", "exact"),
    ],
)
def test_chinese_phrases_resolve_by_their_rule(phrase, group, method):
    found = ZH.match(phrase)
    assert (found.group.name if found.group else None, found.method) == (group, method)


def test_unmapped_unresolved_and_the_han_fuzzy_cutoff():
    assert ZH.match("地域黑").method == "unmapped" and "not a group" in (ZH.match("地域黑").reason or "")
    assert ZH.match("火星人").group is None and ZH.match("火星人").method == "unresolved"
    only = GroupTaxonomy((TargetGroup(name="湖南人", level1=Level1Domain.NATIONALITY_REGION, level2="湖南人"),))
    assert only.resolve("河南人") is None  # ratio 66.7: Chinese names one character apart stay apart
    english = load_group_taxonomy()
    found = english.match("the Lesbian")
    assert (found.group.name, found.method) == ("Lesbians", "fuzzy") and found.score == pytest.approx(93.3, abs=0.1)
    assert GroupTaxonomy(english.groups, fuzzy_cutoff=None).match("Lesbian").method == "unresolved"
    tied = GroupTaxonomy(
        (
            TargetGroup(name="abcdefgh", level1=Level1Domain.GENDER, level2="A"),
            TargetGroup(name="abcdefgj", level1=Level1Domain.GENDER, level2="B"),
        )
    )
    assert tied.match("abcdefgk").group is None and "ambiguous" in (tied.match("abcdefgk").reason or "")


def test_the_bundled_taxonomy_names_every_group_in_both_languages():
    assert all(g.display_name("zh") and g.display_name("en") for g in ZH.groups)
    domains = {g.level1.value for g in ZH.groups}
    assert {"nationality_region", "race_ethnicity", "gender", "sexual_orientation", "religion_belief",
            "disability", "occupation"} <= domains  # fmt: skip
    regional = {g.name for g in ZH.groups if g.level1 is Level1Domain.NATIONALITY_REGION}
    assert {"河南人", "东北人", "上海人", "外地人", "农村人"} <= regional
    assert not load_group_taxonomy().without_names("zh")  # English groups have Chinese names too


def _cold_texts(shared_data: Path) -> pd.DataFrame:
    files = [shared_data / "cold" / f"{split}.csv" for split in ("train", "dev", "test")]
    for path in files:
        if not path.is_file():
            pytest.skip(f"real data file {path} is absent")
    return pd.concat([pd.read_csv(path, encoding="utf-8-sig") for path in files])


def test_every_regional_demonym_in_cold_and_swsr_resolves_to_its_province(shared_data):
    cold = _cold_texts(shared_data)
    swsr = shared_data / "swsr" / "SexComment.csv"
    if not swsr.is_file():
        pytest.skip(f"real data file {swsr} is absent")
    texts = [*cold["TEXT"].astype(str), *pd.read_csv(swsr, encoding="utf-8-sig")["comment_text"].astype(str)]
    found: Counter[tuple[str, str]] = Counter()
    for text in texts:
        for m in DEMONYM.finditer(text):
            found[(m.group(0), m.group(1))] += 1
    assert len(found) >= 50 and sum(found.values()) > 5000  # 58 phrases, 5,869 occurrences (COLD alone)
    unresolved = [phrase for phrase, _ in found if ZH.resolve(phrase) is None]
    assert unresolved == []  # unresolved share 0 of the regional demonyms
    for phrase, province in found:
        group = ZH.resolve(phrase)
        assert group is not None and group.name == ("东北人" if province in NORTHEAST else f"{province}人"), phrase


def test_identity_cue_words_in_cold_resolve_or_are_listed_as_no_group(shared_data):
    cold = _cold_texts(shared_data)
    lexicon = load_lexicon(resource_path("lexicons/demographic_identity.json"))
    matcher = CueMatcher([lexicon])
    occurring: Counter[str] = Counter(hit.term for text in cold["TEXT"].astype(str) for hit in matcher.find(text))
    assert len(occurring) > 60
    methods = {term: ZH.match(term).method for term in occurring}
    assert [t for t, m in methods.items() if m == "unresolved"] == []
    no_group = {t for t, m in methods.items() if m == "unmapped"}
    assert no_group <= {"地域黑", "籍贯", "小地方", "穷山恶水", "民族", "种族", "彩礼", "出柜", "性取向", "彩虹旗",
                        "基友", "姬友", "男拳"}  # fmt: skip
