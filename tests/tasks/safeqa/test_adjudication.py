import csv
import json

import pytest

from verimod.core.errors import InputError
from verimod.data.jsonl import read_jsonl, write_jsonl
from verimod.tasks.safeqa.adjudication import (
    apply_adjudication,
    classify_votes,
    finalize,
    initial_votes,
    needs_adjudication,
    sample_inspection,
    sample_size,
)
from verimod.tasks.safeqa.inspection import (
    SHEET_COLUMNS,
    inspection_rows,
    read_expert_labels,
    write_inspection_sheet,
)
from verimod.tasks.safeqa.schema import JudgeOutput, SafePair, SafeQuery, SafeResponse

PANEL = ("j1", "j2", "j3")


def _outputs(votes):
    """votes: pair id → three labels (None: no output) of j1, j2, j3."""
    return [
        JudgeOutput(pair_id=pair_id, judge=judge, label=label)
        for pair_id, labels in votes.items()
        for judge, label in zip(PANEL, labels, strict=True)
        if label is not None
    ]


VOTES = {
    "p1": ("safe", "safe", "safe"),  # unanimous
    "p2": ("unsafe", "unsafe", "safe"),  # 2–1
    "p3": ("safe", "unsafe", "disputed"),  # three-way
    "p4": ("unsafe", "unsafe", "invalid"),  # two valid equal + invalid: majority
    "p5": ("safe", "unsafe", "invalid"),  # two valid different + invalid: split
    "p6": ("safe", "invalid", "invalid"),  # one valid vote: none
    "p7": ("disputed", "disputed", "disputed"),  # unanimous disputed
    "p8": ("safe", "safe", None),  # a missing output is a non-vote (recorded invalid)
}


def _pair(pair_id, text="回答"):
    query_id, model = pair_id, "m"
    return SafePair(
        query=SafeQuery(id=query_id, text=f"问题{query_id}"),
        response=SafeResponse(query_id=query_id, model=model, text=text),
    )


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (("safe", "safe", "safe"), ("unanimous", "safe")),
        (("disputed", "disputed", "disputed"), ("unanimous", "disputed")),
        (("unsafe", "safe", "unsafe"), ("majority", "unsafe")),
        (("safe", "unsafe", "disputed"), ("split", None)),
        (("safe", "safe", "invalid"), ("majority", "safe")),
        (("safe", "unsafe", "invalid"), ("split", None)),
        (("unsafe", "invalid", "invalid"), ("none", None)),
        (("invalid", "invalid", "invalid"), ("none", None)),
    ],
)
def test_classify_votes(labels, expected):
    assert classify_votes(dict(zip(PANEL, labels, strict=True))) == expected


def test_a_short_panel_label_set_is_not_unanimous():
    assert classify_votes({"j1": "safe", "j2": "safe"}, panel_size=3) == ("majority", "safe")


def test_routing():
    votes = initial_votes(_outputs(VOTES))
    by_id = {v.pair_id: v for v in votes}
    assert [v.pair_id for v in votes] == list(VOTES)
    assert {k: v.agreement for k, v in by_id.items()} == {
        "p1": "unanimous",
        "p2": "majority",
        "p3": "split",
        "p4": "majority",
        "p5": "split",
        "p6": "none",
        "p7": "unanimous",
        "p8": "majority",
    }
    assert by_id["p8"].labels == {"j1": "safe", "j2": "safe", "j3": "invalid"}
    assert [v.pair_id for v in needs_adjudication(votes)] == ["p2", "p3", "p4", "p5", "p6", "p8"]


def test_initial_votes_rejects_bad_panels():
    with pytest.raises(ValueError, match="two outputs"):
        initial_votes([JudgeOutput(pair_id="p", judge="j1", label="safe")] * 2)
    with pytest.raises(ValueError, match="not in the panel"):
        initial_votes(_outputs({"p": ("safe", "safe", "safe")}), judges=["j1", "j2"])
    with pytest.raises(ValueError, match="at least two"):
        initial_votes([JudgeOutput(pair_id="p", judge="j1", label="safe")])


def _adjudicated():
    votes = initial_votes(_outputs(VOTES))
    decisions = [
        JudgeOutput(pair_id="p1", judge="senior", label="unsafe"),  # unanimous: not used
        JudgeOutput(pair_id="p2", judge="senior", label="unsafe"),
        JudgeOutput(pair_id="p3", judge="senior", label="disputed"),
        JudgeOutput(pair_id="p4", judge="senior", label="invalid"),  # → unresolved
        JudgeOutput(pair_id="p5", judge="senior", label="safe"),
        JudgeOutput(pair_id="p6", judge="senior", label="unsafe"),
        # p8: no adjudicator output → unresolved
    ]
    return votes, apply_adjudication(votes, decisions)


def test_apply_adjudication_keeps_provenance_and_reports_unresolved():
    _, result = _adjudicated()
    labels = {r.pair_id: r for r in result.labels}
    assert {k: r.label for k, r in labels.items()} == {
        "p1": "safe",
        "p2": "unsafe",
        "p3": "disputed",
        "p5": "safe",
        "p6": "unsafe",
        "p7": "disputed",
    }
    assert labels["p1"].provenance.adjudicator is None and labels["p1"].provenance.agreement == "unanimous"
    p3 = labels["p3"].provenance
    assert (p3.agreement, p3.adjudicator, p3.adjudicated) == ("split", "senior", "disputed")
    assert p3.initial == {"j1": "safe", "j2": "unsafe", "j3": "disputed"}
    unresolved = {u.pair_id: u for u in result.unresolved}
    assert unresolved["p4"].reason == "adjudicator_invalid" and unresolved["p4"].adjudicated == "invalid"
    assert unresolved["p8"].reason == "no_adjudicator_output" and unresolved["p8"].adjudicator is None
    assert "p4" not in labels and "p8" not in labels  # never silently labelled with the majority
    assert result.ignored == ["p1"]
    assert result.agreement_counts == {"unanimous": 2, "majority": 3, "split": 2, "none": 1}


def test_apply_adjudication_rejects_unknown_and_repeated_pairs():
    votes = initial_votes(_outputs(VOTES))
    with pytest.raises(ValueError, match="unknown pair"):
        apply_adjudication(votes, [JudgeOutput(pair_id="zz", judge="senior", label="safe")])
    with pytest.raises(ValueError, match="two adjudicator outputs"):
        apply_adjudication(votes, [JudgeOutput(pair_id="p2", judge="senior", label="safe")] * 2)


@pytest.mark.parametrize(
    ("rate", "n", "k"),
    [
        (0.2, 12, 2),
        (0.4, 5, 2),
        (0.8, 3, 2),
        (0.2, 2, 0),
        (0.5, 3, 2),
        (0.5, 1, 1),
        (0.7, 5, 4),
        (0.3, 5, 2),
        (1, 7, 7),
    ],
)
def test_sample_size_rounds_half_up(rate, n, k):
    assert sample_size(rate, n) == k


def _many_votes(counts):
    outputs = []
    pattern = {
        "unanimous": ("safe", "safe", "safe"),
        "majority": ("safe", "safe", "unsafe"),
        "split": ("safe", "unsafe", "disputed"),
        "none": ("safe", "invalid", "invalid"),
    }
    for agreement, n in counts.items():
        outputs += _outputs({f"{agreement[:3]}{i:04d}": pattern[agreement] for i in range(n)})
    return initial_votes(outputs)


def test_sampling_rates_and_determinism():
    votes = _many_votes({"unanimous": 1000, "majority": 200, "split": 50, "none": 3})
    sample = sample_inspection(votes, seed=1)
    assert [(s.agreement, s.n, s.k) for s in sample.strata] == [
        ("unanimous", 1000, 200),
        ("majority", 200, 80),
        ("split", 50, 40),
        ("none", 3, 2),
    ]
    by_stratum = {v.pair_id: v.agreement for v in votes}
    for stratum in sample.strata:
        assert len(set(stratum.pair_ids)) == stratum.k
        assert all(by_stratum[p] == stratum.agreement for p in stratum.pair_ids)
    again = sample_inspection(list(reversed(votes)), seed=1)  # input order does not matter
    assert again.pair_ids == sample.pair_ids
    assert sample_inspection(votes, seed=2).pair_ids != sample.pair_ids
    custom = sample_inspection(votes, rates={"unanimous": 0.05}, seed=1)
    assert [s.k for s in custom.strata] == [50, 80, 40, 2]
    with pytest.raises(ValueError, match="did you mean 'split'"):
        sample_inspection(votes, rates={"splt": 0.5})
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        sample_inspection(votes, rates={"split": 1.5})


def _pairs():
    """Query–response pairs keyed by the short adjudication ids of :data:`VOTES`."""
    return {pid: _pair(pid) for pid in VOTES}


def test_sheet_round_trip_csv_and_expert_supersession(tmp_path):
    _, result = _adjudicated()
    ids = ["p1", "p2", "p3", "p4"]
    rows = inspection_rows(ids, result, _pairs())
    assert list(rows[0]) == list(SHEET_COLUMNS)
    assert rows[3]["model_label"] is None and rows[3]["adjudicated"] == "invalid"
    path = tmp_path / "sheet.csv"
    assert write_inspection_sheet(path, rows) == 4
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    with path.open(encoding="utf-8-sig", newline="") as f:
        table = list(csv.DictReader(f))
    assert json.loads(table[2]["initial"]) == {"j1": "safe", "j2": "unsafe", "j3": "disputed"}
    assert table[0]["expert_1"] == "" and table[0]["query"] == "问题p1"
    fills = {"p1": " Unsafe ", "p2": "", "p3": "safe", "p4": "disputed"}
    for row in table:
        for column in ("expert_1", "expert_2", "expert_3"):
            row[column] = fills[row["pair_id"]]
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    expert = read_expert_labels(path, known_ids=VOTES)
    assert expert.labels == {"p1": "unsafe", "p3": "safe", "p4": "disputed"}
    assert expert.blank == ["p2"]
    final = finalize(result, expert.labels)
    labels = {r.pair_id: r for r in final.labels}
    assert labels["p1"].label == "unsafe"  # expert supersedes the unanimous model label
    assert labels["p1"].provenance.expert == "unsafe" and labels["p1"].provenance.initial["j1"] == "safe"
    assert labels["p3"].label == "safe" and labels["p3"].provenance.adjudicated == "disputed"
    assert labels["p2"].label == "unsafe" and labels["p2"].provenance.expert is None
    p4 = labels["p4"].provenance  # unresolved until the expert settled it
    assert labels["p4"].label == "disputed" and (p4.adjudicator, p4.adjudicated, p4.expert) == (
        "senior",
        "invalid",
        "disputed",
    )
    assert [u.pair_id for u in final.unresolved] == ["p8"]
    audit = {a.agreement: (a.n_inspected, a.n_changed) for a in final.audit}
    assert audit == {"unanimous": (1, 1), "majority": (1, 1), "split": (1, 1), "none": (0, 0)}
    assert all(r.provenance.initial for r in final.labels)


def test_inspection_rows_accept_pairs_keyed_by_their_own_ids():
    pair = _pair("q1")  # pair id "q1::m"
    votes = initial_votes(_outputs({pair.pair_id: ("safe", "safe", "unsafe")}))
    result = apply_adjudication(votes, [JudgeOutput(pair_id=pair.pair_id, judge="senior", label="safe")])
    rows = inspection_rows([pair.pair_id], result, [pair])
    assert rows[0]["pair_id"] == "q1::m" and rows[0]["model_label"] == "safe" and rows[0]["agreement"] == "majority"


def test_jsonl_sheet_round_trip(tmp_path):
    _, result = _adjudicated()
    pairs = _pairs()
    rows = inspection_rows(["p2", "p3", "p8"], result, pairs)
    path = tmp_path / "sheet.jsonl"
    write_inspection_sheet(path, rows)
    read = [obj for _, obj in read_jsonl(path)]
    assert read == rows and read[0]["initial"] == {"j1": "unsafe", "j2": "unsafe", "j3": "safe"}
    read[0].update(expert_1="safe", expert_2="safe", expert_3="safe")
    read[2].update(expert_1="unsafe", expert_2="unsafe", expert_3="unsafe")
    write_jsonl(path, read)
    expert = read_expert_labels(path, known_ids=set(VOTES))
    assert expert.labels == {"p2": "safe", "p8": "unsafe"} and expert.blank == ["p3"]
    final = finalize(result, expert.labels)
    assert final.unresolved == [r for r in result.unresolved if r.pair_id == "p4"]
    assert {r.pair_id: r.label for r in final.labels}["p8"] == "unsafe"


def test_inspection_rows_need_known_pairs():
    _, result = _adjudicated()
    with pytest.raises(ValueError, match="not in the adjudication result"):
        inspection_rows(["zz"], result, _pairs())
    with pytest.raises(ValueError, match="no query and response"):
        inspection_rows(["p1"], result, {})


def test_csv_guards_formula_cells(tmp_path):
    _, result = _adjudicated()
    pairs = {"p2": _pair("p2", text='=HYPERLINK("x")'), "p3": _pair("p3", text="- 第一点")}
    path = tmp_path / "sheet.csv"
    write_inspection_sheet(path, inspection_rows(["p2", "p3"], result, pairs))
    with path.open(encoding="utf-8-sig", newline="") as f:
        table = list(csv.DictReader(f))
    assert [r["response"] for r in table] == ['\'=HYPERLINK("x")', "'- 第一点"]
    jsonl = tmp_path / "sheet.jsonl"
    write_inspection_sheet(jsonl, inspection_rows(["p2"], result, pairs))
    assert next(read_jsonl(jsonl))[1]["response"] == '=HYPERLINK("x")'


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("pair_id,expert\np1,safe\nzz,safe\n", "sheet.csv:3: field 'pair_id': unknown pair id 'zz'"),
        ("pair_id,expert\np1,harmfull\n", "sheet.csv:2: field 'expert': value 'harmfull' is not one of"),
        ("pair_id,expert\np1,usafe\n", "(did you mean 'unsafe'?)"),
        ("pair_id,expert\np1,safe\np1,unsafe\n", "sheet.csv:3: field 'pair_id': pair id 'p1' already on line 2"),
        ("pair_id,expert\n,safe\n", "sheet.csv:2: field 'pair_id': missing pair id"),
        ("pair_id,label\np1,safe\n", "sheet.csv:2: field 'expert_1': missing field"),
        (
            'pair_id,query,expert\np1,"多行\n文本",safe\np9,x,safe\n',
            "sheet.csv:4: field 'pair_id': unknown pair id 'p9'",
        ),
    ],
)
def test_bad_csv_rows_name_file_line_and_field(tmp_path, content, message):
    path = tmp_path / "sheet.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_expert_labels(path, known_ids=VOTES)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_bad_jsonl_rows_name_file_line_and_field(tmp_path):
    path = tmp_path / "sheet.jsonl"
    path.write_text('{"pair_id": "p1", "expert": "safe"}\n\n{"pair_id": "p2", "expert": 3}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"sheet\.jsonl:3: field 'expert': value 3 is not one of"):
        read_expert_labels(path, known_ids=VOTES)


def test_finalize_rejects_unknown_pairs_and_labels():
    _, result = _adjudicated()
    with pytest.raises(ValueError, match="not in the adjudication result"):
        finalize(result, {"zz": "safe"})
    with pytest.raises(ValueError, match="not one of"):
        finalize(result, {"p1": "harmful"})  # type: ignore[dict-item]
