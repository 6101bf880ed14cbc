"""Lexical-cue lexicons, matching, challenge subsets and the per-run cue report (VARM-Bench Q2)."""

from __future__ import annotations

import json
import math

import pytest
from rich.console import Console

from tests.conftest import rationale
from verimod.core.errors import InputError
from verimod.core.runs import RunManifest, RunStore, SampleRecord
from verimod.tasks.varm.cues import (
    DEFAULT_FAMILIES,
    CueHit,
    CueMatcher,
    Lexicon,
    build_cue_subset,
    cue_report,
    cue_report_from_items,
    cue_reports_table,
    cue_subset_ids,
    default_lexicons,
    load_lexicon,
    load_lexicons,
    normalize_cue_text,
    write_cue_subset,
)
from verimod.tasks.varm.evaluate import load_run
from verimod.tasks.varm.io import load_references
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import score_predictions
from verimod.tasks.varm.starter import load_starter


def lexicon(family: str, terms: list[str], exclude: list[str] | None = None) -> Lexicon:
    return Lexicon(family=family, version="t1", description="test", terms=tuple(terms), exclude=tuple(exclude or ()))


def matcher(*terms: str, exclude: tuple[str, ...] = ()) -> CueMatcher:
    return CueMatcher([lexicon("f", list(terms), list(exclude))])


def ref(item_id: str, text: str, label: str | None = "harmful", **fields: str) -> VarmReference:
    if label is None:
        return VarmReference(id=item_id, text=text, **fields)
    record = (
        {
            "target": "楼主",
            "target_type": "single",
            "target_explicitness": "explicit",
            "stance": "attack_or_endorse",
            "label": "harmful",
            "category": "general_abuse",
        }
        if label == "harmful"
        else {
            "target": "no_clear_target",
            "target_type": "no_clear_target",
            "target_explicitness": "no_clear_target",
            "stance": "neutral_mention",
            "label": "non_harmful",
            "category": "non_attack",
        }
    )
    return VarmReference(id=item_id, text=text, **{**record, **fields})


# ----------------------------------------------------------------------------------- matching


def test_chinese_substring_match_with_evidence():
    m = matcher("河南人", "外地人")
    assert m.match("我是河南人，在上海工作") == {"f": ("河南人",)}
    assert m.match("今天天气不错") == {}
    assert m.find("外地人和河南人") == [CueHit("f", "外地人", 0, 3), CueHit("f", "河南人", 4, 7)]


@pytest.mark.parametrize(
    ("text", "hit"),
    [
        ("你个sb", True),
        ("SB主播又来了", True),  # case and a Chinese neighbour
        ("sb", True),
        ("真是sb_行为", True),  # '_' is not a letter or digit
        ("ｓｂ一个", True),  # full width → NFKC
        ("usb接口坏了", False),
        ("sbc开发板", False),
        ("sb123", False),
        ("nmsl!", True),
        ("nmsl2", False),
        ("xnmsl", False),
    ],
)
def test_ascii_terms_match_on_ascii_word_boundaries(text, hit):
    assert bool(matcher("sb", "nmsl").match(text)) is hit


def test_mixed_terms_check_boundaries_only_at_ascii_ends():
    m = matcher("fei猪", "残fei")
    assert m.match("fei猪们别来") == {"f": ("fei猪",)}
    assert m.match("xfei猪") == {}
    assert m.match("残fei就别出来") == {"f": ("残fei",)}
    assert m.match("残feix") == {}
    assert m.match("猪fei猪") == {"f": ("fei猪",)}  # a Chinese neighbour is no ASCII boundary


def test_normalisation_applies_to_terms_and_texts():
    m = matcher("LGBT", "LGBTQ", "傻X")
    assert m.match("ＬＧＢＴ群体") == {"f": ("LGBT",)}
    assert m.match("lgbtq+") == {"f": ("LGBTQ",)}  # 'lgbt' touches 'q': no match
    assert m.match("你个傻x") == {"f": ("傻X",)}
    assert normalize_cue_text("ＡＢＣ傻Ｘ") == "abc傻x"


def test_overlapping_terms_are_all_reported():
    m = matcher("精神病", "病人", "精神病人")
    assert m.find("精神病人") == [
        CueHit("f", "精神病人", 0, 4),
        CueHit("f", "精神病", 0, 3),
        CueHit("f", "病人", 2, 4),
    ]
    assert m.match("那个病人是精神病人") == {"f": ("病人", "精神病人", "精神病")}


def test_exclude_phrases_drop_only_the_occurrences_they_cover():
    m = matcher("女同", "2b", exclude=("女同事", "2B铅笔"))
    assert m.match("女同事今天请假") == {}
    assert m.match("她是女同性恋") == {"f": ("女同",)}
    assert m.find("女同事说她是女同") == [CueHit("f", "女同", 6, 8)]
    assert m.match("考试带2B铅笔") == {}
    assert m.match("真是个2b") == {"f": ("2b",)}


def test_families_are_matched_in_one_pass_and_kept_apart():
    m = CueMatcher([lexicon("a", ["废物", "保安"]), lexicon("b", ["保安"], ["确保安"])])
    assert m.families == ("a", "b")
    assert m.match("保安都是废物") == {"a": ("保安", "废物"), "b": ("保安",)}
    assert m.match("确保安全") == {"a": ("保安",)}  # the exclusion belongs to family b only
    with pytest.raises(ValueError, match="two lexicons of one family"):
        CueMatcher([lexicon("a", ["x"]), lexicon("a", ["y"])])


def _naive(lexicons, text):
    """Every term, every start position, the boundary and exclusion rules applied directly."""
    norm = normalize_cue_text(text)

    def occurrences(phrase):
        key = normalize_cue_text(phrase)
        for start in range(len(norm) - len(key) + 1):
            end = start + len(key)
            if norm[start:end] != key:
                continue
            if (
                key[0].isascii()
                and key[0].isalnum()
                and start
                and norm[start - 1].isascii()
                and norm[start - 1].isalnum()
            ):
                continue
            if (
                key[-1].isascii()
                and key[-1].isalnum()
                and end < len(norm)
                and norm[end].isascii()
                and norm[end].isalnum()
            ):
                continue
            yield start, end

    hits = set()
    for lex in lexicons:
        spans = [span for phrase in lex.exclude for span in occurrences(phrase)]
        for term in lex.terms:
            for start, end in occurrences(term):
                if not any(a <= start and end <= b for a, b in spans):
                    hits.add(CueHit(lex.family, term, start, end))
    return hits


def test_automaton_agrees_with_a_naive_scan_on_the_starter_set():
    lexicons = default_lexicons()
    m = CueMatcher(lexicons)
    extra = ["usb和sb和SB和ｓｂ", "女同事和女同", "确保安全的保安", "2B铅笔 2b", "lgbtq lgbt", "残fei fei猪 zz儿童 zzz"]
    for text in [r.text for r in load_starter()] + extra:
        assert set(m.find(text)) == _naive(lexicons, text), text


# ----------------------------------------------------------------------------------- lexicons


def test_bundled_lexicons_load_and_are_sized():
    lexicons = default_lexicons()
    assert tuple(lex.family for lex in lexicons) == DEFAULT_FAMILIES
    for lex in lexicons:
        assert 60 <= len(lex.terms) <= 150, (lex.family, len(lex.terms))
        assert lex.version and "not copied" in lex.description
    general = {normalize_cue_text(t) for t in lexicons[3].terms}
    assert {"脑残", "废物", "垃圾", "恶心", "nmsl", "sb", "傻x"} <= general


def write(tmp_path, obj, name="lex.json"):
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return path


GOOD = {"family": "mine", "version": "1", "description": "d", "terms": ["废物", "sb"]}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({k: v for k, v in GOOD.items() if k != "terms"}, "field 'terms': missing required field"),
        ({**GOOD, "term": ["x"]}, "field 'term': unknown field (did you mean 'terms'?)"),
        ({**GOOD, "terms": ["废物", "  "]}, "field 'terms.1': must not be blank"),
        ({**GOOD, "terms": []}, "field 'terms'"),
        ({**GOOD, "terms": ["SB", "ｓｂ"]}, "field 'terms': entry 1 'ｓｂ' duplicates entry 0 'SB'"),
        ({**GOOD, "family": "My Family"}, "field 'family'"),
        ({**GOOD, "exclude": ["垃圾桶"]}, "field 'exclude': entry 0 '垃圾桶' contains none of the terms"),
        ({**GOOD, "version": 3}, "field 'version': must be a string"),
        ('{"family": "x",\n "terms": [}', "lex.json:2: not valid JSON"),
        ('["废物"]', "must hold one JSON object"),
    ],
)
def test_bad_lexicon_files_give_one_line_errors(tmp_path, content, expected):
    path = write(tmp_path, content)
    with pytest.raises(InputError) as info:
        load_lexicon(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path)) and expected in message, message


def test_lexicon_file_encoding_and_missing_file(tmp_path):
    path = tmp_path / "gbk.json"
    path.write_bytes(json.dumps(GOOD, ensure_ascii=False).encode("gbk"))
    with pytest.raises(InputError, match="not UTF-8"):
        load_lexicon(path)
    with pytest.raises(InputError, match="file not found"):
        load_lexicon(tmp_path / "absent.json")
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD, ensure_ascii=False).encode())
    assert load_lexicon(bom).terms == ("废物", "sb")


def test_user_lexicons_of_one_family_twice_are_refused(tmp_path):
    first, second = write(tmp_path, GOOD, "a.json"), write(tmp_path, {**GOOD, "terms": ["垃圾"]}, "b.json")
    assert [lex.family for lex in load_lexicons([first])] == ["mine"]
    with pytest.raises(InputError) as info:
        load_lexicons([first, second])
    assert str(info.value) == f"{second}: field 'family': family 'mine' is already defined by {first}"


def test_starter_shares_per_family(capsys):
    """Each bundled family finds cue words in harmful AND non-harmful starter items."""
    m = CueMatcher(default_lexicons())
    starter = load_starter()
    lines = []
    for split in (None, "test"):
        items = [r for r in starter if split is None or r.split == split]
        for family in DEFAULT_FAMILIES:
            shares = {}
            for label in ("harmful", "non_harmful"):
                side = [r for r in items if r.label == label]
                hits = sum(family in m.match(r.text) for r in side)
                shares[label] = (hits, len(side))
                assert hits >= 1, (split, family, label)
                if split is None:
                    assert 0.05 <= hits / len(side) <= 0.6, (family, label, hits)
            (h, nh_), (n, nn) = shares["harmful"], shares["non_harmful"]
            lines.append(
                f"{split or 'all':4} {family:21} harmful {h}/{nh_} ({100 * h / nh_:.1f}%)  "
                f"non-harmful {n}/{nn} ({100 * n / nn:.1f}%)"
            )
    with capsys.disabled():
        print("\n" + "\n".join(lines))


# ------------------------------------------------------------------------------------ subsets


def test_subset_ratio_is_exact_and_items_are_consistent():
    references = load_starter("test")
    subset = build_cue_subset(references, default_lexicons())
    by_id = {item.reference.id: item for item in subset.items}
    ids = subset.ids_by_family()
    for stats in subset.summary.families:
        assert stats.selected_harmful * 2 == stats.selected_non_harmful * 3 > 0
        assert stats.selected_harmful <= stats.available_harmful
        assert stats.selected_non_harmful <= stats.available_non_harmful
        # as many as the ratio allows: one more ratio unit does not fit
        units = stats.selected_harmful // 3
        assert (units + 1) * 3 > stats.available_harmful or (units + 1) * 2 > stats.available_non_harmful
        drawn = [by_id[i] for i in ids[stats.family]]
        assert sum(item.reference.label == "harmful" for item in drawn) == stats.selected_harmful
        assert all(stats.family in item.matches for item in drawn)
    assert [item.reference.id for item in subset.items] == [r.id for r in references if r.id in by_id]
    assert subset.summary.n_items == len(subset.items) == len(set().union(*ids.values()))


def test_subset_is_deterministic_per_seed_and_independent_of_order():
    references = load_starter()
    first = build_cue_subset(references, default_lexicons(), seed=7)
    again = build_cue_subset(references, default_lexicons(), seed=7)
    reordered = build_cue_subset(list(reversed(references)), default_lexicons(), seed=7)
    other = build_cue_subset(references, default_lexicons(), seed=8)
    assert first.ids_by_family() == again.ids_by_family() == reordered.ids_by_family()
    assert first.references() == again.references()
    assert first.ids_by_family() != other.ids_by_family()
    assert first.summary.families == other.summary.families  # same sizes, other items


def pool(n_harmful: int, n_non_harmful: int, n_unlabelled: int = 0) -> list[VarmReference]:
    return (
        [ref(f"h{i}", f"楼主{i}就是个废物") for i in range(n_harmful)]
        + [ref(f"n{i}", f"别骂人家废物{i}", "non_harmful") for i in range(n_non_harmful)]
        + [ref(f"u{i}", f"废物{i}", None) for i in range(n_unlabelled)]
        + [ref("plain", "今天天气不错")]
    )


def test_shortfall_is_reported_when_a_side_is_too_small():
    lexicons = [lexicon("insult", ["废物"])]
    stats = build_cue_subset(pool(10, 2, 3), lexicons).summary.families[0]
    assert (stats.available_harmful, stats.available_non_harmful, stats.unlabelled) == (10, 2, 3)
    assert (stats.selected_harmful, stats.selected_non_harmful) == (3, 2)
    # using all 10 harmful items needs ceil(10/3) = 4 units = 8 non-harmful: 6 are missing
    assert (stats.shortfall_harmful, stats.shortfall_non_harmful) == (0, 6)
    assert stats.requested_harmful is None and stats.shortfall_note() == "insult: non-harmful side short by 6 (has 2)"

    stats = build_cue_subset(pool(10, 2), lexicons, per_family=12).summary.families[0]
    assert (stats.requested_harmful, stats.requested_non_harmful) == (6, 4)  # 12 → 2 units of 3 + 2
    assert (stats.selected_harmful, stats.selected_non_harmful) == (3, 2)
    assert (stats.shortfall_harmful, stats.shortfall_non_harmful) == (0, 2)

    stats = build_cue_subset(pool(30, 30), lexicons, per_family=20, ratio=(1, 1)).summary.families[0]
    assert (stats.selected_harmful, stats.selected_non_harmful, stats.shortfall_note()) == (10, 10, None)

    stats = build_cue_subset(pool(0, 4), lexicons).summary.families[0]
    assert (stats.selected_harmful, stats.selected_non_harmful, stats.shortfall_harmful) == (0, 0, 6)


def test_subset_rejects_bad_settings():
    lexicons = [lexicon("insult", ["废物"])]
    with pytest.raises(InputError, match="--ratio"):
        build_cue_subset(pool(3, 2), lexicons, ratio=(60, 0))
    with pytest.raises(InputError, match="--per-family: must be at least 5"):
        build_cue_subset(pool(3, 2), lexicons, per_family=4)
    with pytest.raises(ValueError, match="distinct ids"):
        build_cue_subset(pool(3, 2) + pool(1, 0), lexicons)


def test_subset_file_round_trip(tmp_path):
    references = [r.model_copy(update={"meta": {"source": "s"}}) for r in load_starter("test")]
    subset = build_cue_subset(references, default_lexicons(), seed=3)
    path = tmp_path / "cues.jsonl"
    assert write_cue_subset(path, subset) == len(subset.items)
    loaded = load_references(path)
    assert [r.id for r in loaded] == [item.reference.id for item in subset.items]
    first = loaded[0].meta
    assert first is not None and first["source"] == "s"
    assert first["cues"]["seed"] == 3 and first["cues"]["ratio"] == [60, 40]
    assert first["cues"]["lexicons"] == {lex.family: lex.version for lex in default_lexicons()}
    assert first["cues"]["matches"] == {f: list(t) for f, t in subset.items[0].matches.items()}
    assert cue_subset_ids(loaded) == {f: ids for f, ids in subset.ids_by_family().items() if ids}
    bad = VarmReference(id="x", text="t", label="harmful", meta={"cues": {"subsets": "general_abuse"}})
    with pytest.raises(InputError, match=r"sub\.jsonl: field 'meta\.cues\.subsets': item 'x'"):
        cue_subset_ids([bad], "sub.jsonl")


# ------------------------------------------------------------------------------------- report

LEXICONS = [lexicon("insult", ["废物"]), lexicon("status", ["保安"])]
NCT = {"target": "no_clear_target", "target_type": "no_clear_target", "explicitness": "no_clear_target"}
REFS = [
    ref("r1", "保安都是废物", target="保安", target_type="group", category="status_occupation"),
    ref("r2", "别骂保安是废物", "non_harmful", target="保安", target_type="group", target_explicitness="explicit",
        stance="oppose_attack"),
    ref("r3", "这个废物利用的点子不错", "non_harmful"),
    ref("r4", "楼主就是个废物"),
    ref("r5", "今天天气不错", "non_harmful"),
    ref("r6", "保安大叔人很好", None, target="保安大叔"),
]  # fmt: skip
OUTPUTS = {
    # r1 right: J = 1, label right
    "r1": rationale(target="保安", category="status_occupation"),
    # r2 over-flagged: J = 0, label wrong, predicted harmful
    "r2": rationale(target="保安", category="status_occupation"),
    # r3 wrong target, right label: J = 0
    "r3": rationale(target="点子", target_type="single", stance="neutral_mention", label="non_harmful",
                    category="non_attack"),
    # r4 unparseable: J = 0, label wrong
    "r4": "我不确定",
    "r5": rationale(**NCT, stance="neutral_mention", label="non_harmful", category="non_attack"),
    "r6": rationale(target="保安大叔"),
}  # fmt: skip


def scored():
    _, items = score_predictions(REFS, OUTPUTS)
    assert [i.j for i in items] == [1, 0, 0, 0, 1, 1]
    return items


def test_cue_report_numbers_by_hand():
    report = cue_report_from_items(REFS, scored(), LEXICONS)
    assert (report.n_items, report.n_considered, report.subset_not_in_run) == (6, 6, 0)
    assert report.lexicons == {"insult": "t1", "status": "t1"}
    insult, status = report.families
    # insult: harmful r1 (J 1, label ok), r4 (J 0, wrong); non-harmful r2 (J 0, wrong, flagged), r3 (J 0, ok)
    assert (insult.n_harmful, insult.n_non_harmful, insult.unlabelled) == (2, 2, 0)
    assert (insult.jrem_harmful, insult.jrem_non_harmful, insult.gap) == (0.5, 0.0, 0.5)
    assert (insult.label_accuracy_harmful, insult.label_accuracy_non_harmful, insult.over_flag_rate) == (0.5, 0.5, 0.5)
    # status: harmful r1, non-harmful r2; r6 bears the cue but carries no label
    assert (status.n_harmful, status.n_non_harmful, status.unlabelled) == (1, 1, 1)
    assert (status.jrem_harmful, status.jrem_non_harmful, status.gap) == (1.0, 0.0, 1.0)
    assert (status.label_accuracy_harmful, status.label_accuracy_non_harmful, status.over_flag_rate) == (1.0, 0.0, 1.0)


def test_cue_report_restricted_to_a_subset():
    items = scored()
    per_family = cue_report_from_items(REFS, items, LEXICONS, {"insult": {"r1", "r2"}, "status": {"r1"}})
    insult, status = per_family.families
    assert (insult.n_harmful, insult.n_non_harmful, insult.gap) == (1, 1, 1.0)
    assert (status.n_harmful, status.n_non_harmful) == (1, 0)
    assert status.jrem_non_harmful is None and status.gap is None and status.over_flag_rate is None
    assert per_family.n_considered == 2

    flat = cue_report_from_items(REFS, items, CueMatcher(LEXICONS), {"r3", "r4", "elsewhere"})
    insult, status = flat.families
    assert (insult.n_harmful, insult.n_non_harmful, insult.jrem_harmful, insult.jrem_non_harmful) == (1, 1, 0.0, 0.0)
    assert (status.n_harmful, status.n_non_harmful, status.jrem_harmful, status.gap) == (0, 0, None, None)
    assert (flat.n_considered, flat.subset_not_in_run) == (2, 1)
    with pytest.raises(ValueError, match="same order"):
        cue_report_from_items(REFS, items[::-1], LEXICONS)


def make_run(tmp_path, run_id: str) -> RunStore:
    manifest = RunManifest(
        run_id=run_id,
        model="scripted:cues",
        backend={"backend": "scripted"},
        setting="zero-shot",
        prompt={},
        params={},
        engine={},
        data={"n": len(REFS)},
        verimod_version="0",
        parser_version="p",
    )
    store = RunStore.create(tmp_path, manifest, (r.model_dump(exclude_none=True) for r in REFS))
    for item_id, output in OUTPUTS.items():
        if item_id != "r4":  # r4 never answered: missing, J = 0 as when unparseable
            store.append(SampleRecord(id=item_id, prompt_hash="h", output=output))
    store.close()
    return store


def test_cue_report_of_a_run_and_the_side_by_side_table(tmp_path):
    make_run(tmp_path, "run-a")
    run = load_run(tmp_path / "run-a")
    report = cue_report(run, LEXICONS)
    assert (report.run_id, report.model) == ("run-a", "scripted:cues")
    assert report.families == cue_report_from_items(REFS, scored(), LEXICONS).families
    other = cue_report_from_items(REFS, scored(), LEXICONS, {"insult": {"r1", "r2"}}, run_id="run-b")
    console = Console(record=True, width=160)
    console.print(cue_reports_table([report, other]))
    text = console.export_text()
    for expected in ("run-a", "scripted:cues", "run-b", "insult", "status", "2 / 2", "+50.00", "+100.00", "n/a"):
        assert expected in text, expected
    assert json.loads(report.model_dump_json())["families"][0]["gap"] == 0.5
    assert math.isclose(report.families[0].jrem_harmful or 0, 0.5)
