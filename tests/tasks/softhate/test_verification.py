"""SoftHateBench human verification sheets: Wilson intervals, majority pass rates, Fleiss' κ."""

from __future__ import annotations

import doctest
import json
import math

import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa
from statsmodels.stats.proportion import proportion_confint

from verimod.core.errors import InputError
from verimod.stats import RatingTable, fleiss_kappa
from verimod.tasks.softhate import verification
from verimod.tasks.softhate.verification import (
    SheetRow,
    read_sheet,
    verification_summary,
    wilson_interval,
    write_sheet,
)

# --- Wilson and Fleiss -------------------------------------------------------------------------


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (425, 500), (320, 500), (57, 155)])
def test_wilson_matches_statsmodels(k, n, confidence):
    low, high = wilson_interval(k, n, confidence)
    expected = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    assert (low, high) == pytest.approx(expected, abs=1e-12)


def test_wilson_reproduces_the_paper_and_edge_cases():
    assert [round(100 * x, 1) for x in wilson_interval(425, 500)] == [81.6, 87.9]  # Softbase validity 85.0%
    assert [round(100 * x, 1) for x in wilson_interval(320, 500)] == [59.7, 68.1]  # SoftHV validity 64.0%
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(1, 2, confidence=1.0)


def sheet_rows() -> list[SheetRow]:
    verdicts = {  # 3 annotators × 5 items
        "i1": (True, True, True),
        "i2": (True, True, False),
        "i3": (True, False, False),
        "i4": (False, False, False),
        "i5": (True, True, True),
    }
    tiers = {"i1": "softbase", "i2": "softbase", "i3": "softhv", "i4": "softhv", "i5": "softhv"}
    rows = [
        SheetRow(item, f"a{k}", verdict, "validity", tiers[item])
        for item, votes in verdicts.items()
        for k, verdict in enumerate(votes)
    ]
    rows += [SheetRow(item, f"a{k}", True, "coherence", tiers[item]) for item in verdicts for k in range(3)]
    return rows


def test_verification_summary_majority_wilson_and_fleiss():
    summaries = {(s.criterion, s.tier): s for s in verification_summary(sheet_rows())}
    overall = summaries[("validity", None)]
    assert (overall.n_items, overall.n_verdicts, overall.passed) == (5, 15, 3)
    assert overall.pass_rate == 0.6
    assert (overall.wilson_low, overall.wilson_high) == pytest.approx(proportion_confint(3, 5, method="wilson"))
    counts = np.array([[3, 0], [2, 1], [1, 2], [0, 3], [3, 0]])
    assert overall.fleiss_kappa == pytest.approx(sm_fleiss_kappa(counts))
    assert summaries[("validity", "softhv")].passed == 1 and summaries[("validity", "softhv")].n_items == 3
    assert summaries[("validity", "softhv")].fleiss_kappa == pytest.approx(sm_fleiss_kappa(counts[2:]))
    assert math.isnan(summaries[("coherence", None)].fleiss_kappa)  # all yes: κ undefined
    order = [(s.criterion, s.tier) for s in verification_summary(sheet_rows())]
    assert order[:3] == [("coherence", None), ("coherence", "softbase"), ("coherence", "softhv")]
    assert json.dumps(summaries[("coherence", None)].to_dict(), allow_nan=False)


def test_verification_tie_fails_and_tiers_from_mapping():
    rows = [SheetRow("i1", "a", True), SheetRow("i1", "b", False), SheetRow("i2", "a", True)]
    summary = verification_summary(rows, tiers={"i1": "softgv", "i2": "softgv"})
    overall = summary[0]
    assert overall.tier is None and overall.passed == 1  # i1 is 1–1: not passed; i2 1–0: passed
    assert summary[1].tier == "softgv"


def test_fleiss_via_verimod_stats_matches_statsmodels():
    rng = np.random.default_rng(0)
    for _ in range(10):
        yes = rng.integers(0, 4, size=20)
        counts = np.column_stack([yes, 3 - yes])
        assert fleiss_kappa(RatingTable.from_counts(counts)) == pytest.approx(sm_fleiss_kappa(counts))


# --- sheet IO ----------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_sheet_round_trip(tmp_path, suffix):
    rows = sheet_rows()
    path = tmp_path / f"sheet{suffix}"
    assert write_sheet(rows, path) == len(rows)
    back = read_sheet(path)
    assert [(r.item_id, r.annotator, r.verdict, r.criterion, r.tier) for r in back] == [
        (r.item_id, r.annotator, r.verdict, r.criterion, r.tier) for r in rows
    ]
    assert back[0].line == (2 if suffix == ".csv" else 1)


def test_sheet_accepts_verdict_spellings_and_defaults(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text(
        "item_id,annotator,verdict\ni1,a,Yes\ni1,b,PASS\ni1,c,1\ni2,a,no\ni2,b,False\ni2,c,fail\n",
        encoding="utf-8",
    )
    rows = read_sheet(path)
    assert [r.verdict for r in rows] == [True, True, True, False, False, False]
    assert {r.criterion for r in rows} == {"validity"} and {r.tier for r in rows} == {None}
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text(
        '{"item_id": "i1", "annotator": "a", "verdict": true}\n{"item_id": 7, "annotator": "b", "verdict": 0}\n'
    )
    assert [(r.item_id, r.verdict) for r in read_sheet(jsonl)] == [("i1", True), ("7", False)]


@pytest.mark.parametrize(
    ("content", "suffix", "expected"),
    [
        ("item_id,annotator,verdict\ni1,a,maybe\n", ".csv", ":2: field 'verdict': 'maybe' is not yes or no"),
        ("item_id,annotator,verdict\ni1,a,yess\n", ".csv", "(did you mean 'yes'?)"),
        ("item_id,annotator\ni1,a\n", ".csv", ":2: field 'verdict': missing field"),
        ("item_id,annotator,verdict\ni1,a,\n", ".csv", ":2: field 'verdict': missing value"),
        ("item_id,annotator,verdict\n,a,yes\n", ".csv", ":2: field 'item_id': missing value"),
        (
            "item_id,annotator,verdict\ni1,a,yes\ni1,a,no\n",
            ".csv",
            ":3: field 'annotator': annotator 'a' already judged item 'i1' (validity) at line 2",
        ),
        (
            "item_id,annotator,tier,verdict\ni1,a,softbase,yes\ni1,b,softhv,no\n",
            ".csv",
            ":3: field 'tier': item 'i1' has tier 'softhv' here but 'softbase' at line 2",
        ),
        ("item_id,annotator,verdict\ni1,a,yes,extra\n", ".csv", ":2: expected 3 columns, got 4"),
        ('{"item_id": "i1", "annotator": "a", "verdict": "yes"}\nnot json\n', ".jsonl", ":2: invalid JSON"),
        (
            '{"item_id": "i1", "annotator": ["a"], "verdict": "yes"}\n',
            ".jsonl",
            ":1: field 'annotator': expected a string",
        ),
        ('{"item_id": "i1", "annotator": "a", "verdict": 2}\n', ".jsonl", ":1: field 'verdict': 2 is not yes or no"),
    ],
)
def test_sheet_errors_are_one_line_with_file_line_field(tmp_path, content, suffix, expected):
    path = tmp_path / f"sheet{suffix}"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_sheet(path)
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message
    assert expected in message


def test_sheet_missing_file_and_bad_suffix(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_sheet(tmp_path / "nope.csv")
    with pytest.raises(InputError, match=r"\.csv or \.jsonl"):
        write_sheet([], tmp_path / "sheet.xlsx")


def test_module_doctests_pass():
    assert doctest.testmod(verification).failed == 0
