"""``verimod data profile`` end to end: table, Markdown, CSV, JSON, --against, bad input, and the
bundled starter set against real COLD comments (skipped when ../shared/data is absent)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.conftest import write_lines
from tests.data.test_profile import ROWS
from verimod.data.adapters import convert
from verimod.data.jsonl import write_jsonl
from verimod.data.neardup import deduplicate
from verimod.data.profile_input import read_profile_input
from verimod.data.profile_text import TraditionalScript
from verimod.resources import resource_path

STARTER = resource_path("varm_starter.jsonl")


@pytest.fixture
def files(tmp_path):
    hand = write_lines(tmp_path / "hand.jsonl", ROWS)
    other = write_lines(
        tmp_path / "other.jsonl",
        [
            {"text": "他们说的都对，就是排外的人太多"},
            {"text": "上海人就是排外", "label": "harmful", "target": "上海人"},
        ],
    )
    return hand, other


def test_json_to_stdout_with_against(cli, files):
    hand, other = files
    result = cli("data", "profile", hand, "--against", other, "--json", "-", "--frames", "2")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert [f["path"] for f in report["files"]] == [str(hand), str(other)]
    first, second = report["files"]
    assert first["length"] == {"p10": 9, "p50": 10, "p90": 17, "max": 17, "mean": 11.75}
    assert first["opens_with_target_harmful"] == {"count": 3, "n": 4, "share": 0.75}
    assert first["near_duplicates"]["redundant"] == 1 and first["hard_negatives"]["count"] == 2
    assert second["records"] == 2 and second["hard_negatives"] is None
    assert second["opens_with_target"] == {"count": 1, "n": 1, "share": 1.0}
    assert report["frames"][0]["frame"] == "Ⓣ就是排外"
    assert [s["share"] for s in report["frames"][0]["shares"]] == [4 / 6, 1.0]
    assert set(report["method"]) == {"length", "traditional", "frames", "near_duplicates"}


def test_table_md_and_csv(cli, files, tmp_path):
    hand, other = files
    table = cli("data", "profile", hand, "--against", other, "--json", tmp_path / "p.json")
    assert table.exit_code == 0, table.stderr
    assert "hand.jsonl" in table.stdout and "other.jsonl" in table.stdout and "near-duplicates" in table.stdout
    assert json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))["files"][0]["records"] == 8
    md = cli("data", "profile", hand, "--against", other, "--format", "md")
    lines = md.stdout.splitlines()
    assert lines[0] == "| section | statistic | hand.jsonl | other.jsonl |"
    assert "| length (chars) | p90 | 17 | 15 |" in lines  # other: 7 and 15 characters
    assert "| opens with its target | harmful | 75.0 % (3/4) | 100.0 % (1/1) |" in lines
    assert "| texts with | no punctuation at all | 50.0 % (4) | 50.0 % (1) |" in lines
    assert "| tags | non-harmful that are hard cases | 66.7 % (2/3) | – (untagged) |" in lines
    assert "| target frames | Ⓣ就是排外 | 66.7 % (4/6) | 100.0 % (1/1) |" in lines
    rows = list(csv.reader(io.StringIO(cli("data", "profile", hand, "--format", "csv").stdout)))
    assert rows[0] == ["section", "statistic", "hand.jsonl"]
    assert ["texts with", "Traditional characters", "12.5 % (1)"] in rows
    assert ["label", "(missing)", "12.5 % (1)"] in rows
    quiet = cli("data", "profile", hand, "--quiet")
    assert quiet.exit_code == 0 and quiet.stdout == ""


def test_format_json_and_lone_surrogates(cli, tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"text": "好的\\ud800好的"}\n{"text": "好的\\ud800好的"}\n', encoding="utf-8")
    as_format = cli("data", "profile", path, "--format", "json")
    as_json = cli("data", "profile", path, "--json", "-")
    assert as_format.exit_code == as_json.exit_code == 0 and as_format.stdout == as_json.stdout
    report = json.loads(as_json.stdout)["files"][0]
    assert report["frames"][0]["frame"] == "好的\ud800好的" and report["near_duplicates"]["pairs"] == 1
    assert cli("data", "profile", path).exit_code == 0


def test_csv_output_guards_formula_cells(cli, tmp_path):
    path = write_lines(tmp_path / "f.jsonl", [{"text": "好的", "split": "=cmd"}])
    rows = list(csv.reader(io.StringIO(cli("data", "profile", path, "--format", "csv").stdout)))
    assert ["split", "'=cmd", "100.0 % (1)"] in rows


def test_reads_csv_with_text_field_and_text_only(cli, tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text("TEXT,label\n上海人就是排外,1\n好的好的[酷],0\n", encoding="utf-8")
    bad = cli("data", "profile", path, "--text-field", "TEXT")
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1
    assert (
        f"{path}:2: field 'label': '1' is not one of harmful, non_harmful" in bad.stderr and "--text-only" in bad.stderr
    )
    ok = cli("data", "profile", path, "--text-field", "TEXT", "--text-only", "--json", "-")
    assert ok.exit_code == 0, ok.stderr
    assert json.loads(ok.stdout)["files"][0]["emoticon"]["count"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "html"], "--format: choose one of table, md, csv, json"),
        (["--threshold", "101"], "Invalid value for '--threshold': Input should be less than or equal to 100"),
        (
            ["--on-error", "ignore"],
            "Invalid value for '--on-error': Value error, 'ignore' is not one of 'fail', 'skip'",
        ),
        (["--frames", "-1"], "--frames: must be 0 or more"),
        (["--input-format", "xml"], "--input-format: choose one of"),
        (["--against", "missing.jsonl"], "missing.jsonl: file not found"),
    ],
)
def test_bad_options_are_one_line_errors(cli, files, args, message):
    result = cli("data", "profile", files[0], *args)
    assert result.exit_code == 2 and message in result.stderr and result.stderr.count("\n") == 1


def test_bad_records_empty_files_and_skip(cli, tmp_path):
    bad = write_lines(tmp_path / "bad.jsonl", [{"text": "好的"}, {"text": "好", "category": "religion"}])
    result = cli("data", "profile", bad)
    assert result.exit_code == 2 and f"{bad}:2: field 'category': 'religion' is not one of" in result.stderr
    broken = write_lines(tmp_path / "broken.jsonl", [{"text": "好的"}, "{not json"])
    result = cli("data", "profile", broken)
    assert result.exit_code == 2 and f"{broken}:2: invalid JSON" in result.stderr
    skipped = cli("data", "profile", broken, "--on-error", "skip", "--json", "-")
    assert skipped.exit_code == 0 and json.loads(skipped.stdout)["files"][0]["skipped"] == 1
    assert f"skipped: {broken}:2: invalid JSON" in skipped.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    result = cli("data", "profile", empty)
    assert result.exit_code == 2 and "no records to profile" in result.stderr


def test_starter_set_looks_templated_next_to_real_cold_comments(cli, shared_data, tmp_path):
    cold_test = shared_data / "cold" / "test.csv"
    if not cold_test.is_file():
        pytest.skip(f"real data file {cold_test} is absent")
    cold = tmp_path / "cold_test.jsonl"
    write_jsonl(cold, (r.model_dump(mode="json", exclude_none=True) for r in convert("cold", cold_test).references))
    result = cli("data", "profile", STARTER, "--against", cold, "--json", "-")
    assert result.exit_code == 0, result.stderr
    starter, real = json.loads(result.stdout)["files"]
    assert (starter["records"], real["records"]) == (630, 5323)
    # real comments are longer-tailed, carry emoticons and often no punctuation; the starter set does not
    assert starter["length"]["p90"] < real["length"]["p90"] and starter["length"]["max"] < real["length"]["max"]
    assert real["length"]["p10"] < starter["length"]["p10"]
    assert starter["emoji_or_emoticon"]["count"] == 0 < real["emoji_or_emoticon"]["count"]
    assert starter["no_punctuation"]["count"] == 0 < real["no_punctuation"]["count"]
    assert starter["traditional"]["count"] == 0 < real["traditional"]["count"]
    # the starter set opens with its target and repeats target frames; COLD annotates no target span
    assert starter["opens_with_target_harmful"]["share"] > 0.6 and real["opens_with_target_harmful"]["n"] == 0
    assert starter["target_frames"][0]["frame"] == "Ⓣ就是" and real["target_frames"] == []
    # harmful categories: uniform in the starter set, region/ethnicity-heavy in COLD
    starter_cats = starter["distributions"]["category_harmful"]["counts"]
    assert len(set(starter_cats.values())) == 1 and len(starter_cats) == 6
    real_cats = real["distributions"]["category_harmful"]
    assert real_cats["counts"]["region_ethnicity"] / real_cats["n"] > 0.5
    assert starter["hard_negatives"]["share"] > 0.8 and real["hard_negatives"] is None
    # the near-duplicate count is verimod's exact join, as verimod data dedup computes it
    texts = [item.text for item in read_profile_input(cold).items]
    expected = deduplicate(texts, 95.0).report
    assert (real["near_duplicates"]["pairs"], real["near_duplicates"]["components"]) == (
        expected.pairs,
        expected.components,
    )
    # without OpenCC the bundled table decides exactly as OpenCC does on real text
    pytest.importorskip("opencc", reason="comparing with OpenCC needs OpenCC (verimod[data])")
    by_table, by_opencc = TraditionalScript("table"), TraditionalScript("opencc")
    assert [by_table.has_traditional(t) for t in texts] == [by_opencc.has_traditional(t) for t in texts]
