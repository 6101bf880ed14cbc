"""``verimod data``: dedup, split, leakage, agree, convert end to end."""

import json

import pytest

from tests.conftest import write_lines


def comments(n=60):
    import random

    rng = random.Random(0)
    texts = ["".join(chr(0x4E00 + rng.randrange(6000)) for _ in range(24)) for _ in range(n)]
    rows = [{"id": f"c{i}", "text": t, "label": "harmful" if i % 2 else "non_harmful"} for i, t in enumerate(texts)]
    rows.append({"id": "dup1", "text": texts[3] + "！", "label": rows[3]["label"]})
    rows.append({"id": "dup2", "text": texts[3], "label": rows[3]["label"]})
    return rows


def test_dedup_writes_pairs_kept_and_report(cli, tmp_path):
    source = write_lines(tmp_path / "c.jsonl", comments())
    result = cli(
        "data",
        "dedup",
        source,
        "--out",
        tmp_path / "kept.jsonl",
        "--pairs",
        tmp_path / "pairs.jsonl",
        "--report",
        tmp_path / "r.json",
    )
    assert result.exit_code == 0, result.stderr
    pairs = [json.loads(x) for x in (tmp_path / "pairs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {(p["id_a"], p["id_b"]) for p in pairs} == {("c3", "dup1"), ("c3", "dup2"), ("dup1", "dup2")}
    kept = [json.loads(x)["id"] for x in (tmp_path / "kept.jsonl").read_text(encoding="utf-8").splitlines()]
    assert "c3" in kept and "dup1" not in kept and "dup2" not in kept and len(kept) == 60
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert (report["pairs"], report["components"], report["dropped"]) == (3, 1, 2)


def test_dedup_reads_csv_with_a_text_column_and_reports_bad_rows(cli, tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("id,content\n1,甲乙丙丁戊己庚辛壬癸\n2,甲乙丙丁戊己庚辛壬癸\n3,多,余\n", encoding="utf-8")
    result = cli("data", "dedup", path, "--text-field", "content")
    assert result.exit_code == 2 and f"{path}:4:" in result.stderr and "expected 2 columns" in result.stderr
    result = cli("data", "dedup", path, "--text-field", "content", "--on-error", "skip", "--report", "-")
    assert result.exit_code == 0 and json.loads(result.stdout)["pairs"] == 1 and "skipped:" in result.stderr
    missing = cli("data", "dedup", path, "--on-error", "skip")
    assert missing.exit_code == 2 and "field 'text': missing" in missing.stderr


def test_split_keeps_components_together_and_writes_files(cli, tmp_path):
    source = write_lines(tmp_path / "c.jsonl", comments())
    result = cli(
        "data",
        "split",
        source,
        "--sizes",
        "0.6,0.2,0.2",
        "--stratify",
        "label",
        "--seed",
        "1",
        "--out-dir",
        tmp_path / "s",
        "--report",
        tmp_path / "r.json",
    )
    assert result.exit_code == 0, result.stderr
    splits = {
        name: [json.loads(x) for x in (tmp_path / "s" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
        for name in ("train", "dev", "test")
    }
    where = {r["id"]: name for name, rows in splits.items() for r in rows}
    assert where["c3"] == where["dup1"] == where["dup2"]
    assert all(r["split"] == name for name, rows in splits.items() for r in rows)
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["components"] == 1 and report["sizes"] == report["requested"] == {"train": 37, "dev": 13, "test": 12}
    assert {name: len(rows) for name, rows in splits.items()} == report["sizes"]
    again = cli(
        "data", "split", source, "--sizes", "0.6,0.2,0.2", "--stratify", "label", "--seed", "1", "--report", "-"
    )
    assert json.loads(again.stdout)["sizes"] == report["sizes"]
    bad = cli("data", "split", source, "--sizes", "10,10")
    assert bad.exit_code == 2 and "--sizes" in bad.stderr


def test_leakage_exit_codes(cli, tmp_path):
    rows = comments()
    train = write_lines(tmp_path / "train.jsonl", rows[:40])
    test = write_lines(tmp_path / "test.jsonl", rows[40:])
    leaky = cli("data", "leakage", train, test, "--json")
    assert leaky.exit_code == 1
    assert {(p["id_a"], p["id_b"]) for p in json.loads(leaky.stdout)} == {("c3", "dup1"), ("c3", "dup2")}
    clean = cli("data", "leakage", write_lines(tmp_path / "a.jsonl", rows[10:40]), test)
    assert clean.exit_code == 0 and "0 near-duplicate pair(s)" in clean.stdout


def test_agree_prints_the_report(cli, tmp_path):
    rows = []
    for i in range(30):
        for annotator in ("A", "B", "C"):
            label = "harmful" if (i + (annotator == "C" and i % 5 == 0)) % 2 else "non_harmful"
            rows.append({"id": str(i), "annotator": annotator, "label": label, "target": "楼主"})
    path = write_lines(tmp_path / "ann.jsonl", rows)
    report = json.loads(cli("data", "agree", path, "--bootstrap", "200", "--json").stdout)
    label = next(f for f in report["fields"] if f["field"] == "label")
    assert report["n_items"] == 30 and report["n_annotators"] == 3 and 0 < label["alpha"]["value"] < 1
    table = cli("data", "agree", path, "--bootstrap", "0")
    assert table.exit_code == 0 and "label" in table.stdout


def test_convert_list_generic_and_errors(cli, tmp_path):
    listing = cli("data", "convert", "--list")
    assert listing.exit_code == 0 and "cold" in listing.stdout and "hatecheck" in listing.stdout
    source = tmp_path / "toxic.csv"
    source.write_text(
        "idx,content,toxic\n1,这个评论区的人都有病吧真是的,1\n2,今天的天气真不错适合出去玩,0\n", encoding="utf-8"
    )
    out = tmp_path / "out.jsonl"
    result = cli(
        "data",
        "convert",
        "--from",
        "generic",
        source,
        out,
        "--map",
        "id=idx; text=content; label=toxic:1=harmful,0=non_harmful",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["converted"] == 2
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["text"][:2], r["label"]) for r in rows] == [("这个", "harmful"), ("今天", "non_harmful")]
    assert cli("validate", out, "--partial").exit_code == 0
    unknown = cli("data", "convert", "--from", "cold", source, out, "--set", "derive_categry=false")
    assert unknown.exit_code == 2 and "did you mean 'derive_category'" in unknown.stderr
    bad_map = cli("data", "convert", "--from", "generic", source, out, "--map", "text=content; label=toxic:1=harmful")
    assert bad_map.exit_code == 2 and f"{source}:3:" in bad_map.stderr


def test_convert_real_cold_and_score_partial(cli, tmp_path, shared_data):
    out = tmp_path / "cold.jsonl"
    result = cli("data", "convert", "--from", "cold", shared_data / "cold" / "test.csv", out, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["converted"] == 5323
    assert cli("validate", out, "--partial").exit_code == 0
    assert cli("validate", out).exit_code == 2  # partial: not complete VARM records


def test_normalize_counts_everything_and_writes_rejects(cli, tmp_path):
    rows = [
        {"id": "1", "text": "＠张三 你好！联系我 13812345678 或者看 https://t.cn/abc 这里有详细说明"},
        {"id": "2", "text": "太短了"},
        {"id": "3", "text": "兼职日结，加微信 abc12345 免费领取！！！有意者私信我"},
        {"id": "4", "text": "这条评论本身没有任何问题，只是一段很普通的话。"},
        {"id": "5", "text": "这条评论本身没有任何问题，只是一段很普通的话。"},
    ]
    source = write_lines(tmp_path / "raw.jsonl", rows)
    out, rejects = tmp_path / "clean.jsonl", tmp_path / "rejects.jsonl"
    result = cli(
        "data",
        "normalize",
        source,
        out,
        "--rejects",
        rejects,
        "--report",
        tmp_path / "r.json",
        "--keep-original",
        "raw",
        "--min-length",
        "15",
    )
    assert result.exit_code == 0, result.stderr
    kept = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    removed = [json.loads(x) for x in rejects.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in kept] == ["1", "4"]
    assert (
        "13812345678" not in kept[0]["text"] and "https://" not in kept[0]["text"] and kept[0]["raw"] == rows[0]["text"]
    )
    assert {(r["record"]["id"], r["reason"]) for r in removed} == {
        ("2", "too_short"),
        ("3", "spam"),
        ("5", "duplicate"),
    }
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["records_in"] == 5 and report["records_out"] == 2 and sum(report["removed"].values()) == 3
    assert "removed spam: 1" in result.stdout
    loose = cli("data", "normalize", source, out, "--min-length", "0", "--keep-spam", "--keep-duplicates", "--quiet")
    assert loose.exit_code == 0 and len(out.read_text(encoding="utf-8").splitlines()) == 5
    bad = cli("data", "normalize", source, out, "--topics", "explode")
    assert bad.exit_code == 2 and "topics" in bad.stderr


# ---------------------------------------------------------------- issue 18: bad input, one line, exit 2


def _one_line_error(result, *needles):
    """Exit code 2, exactly one line on stderr, naming every needle, no traceback."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["dedup", "{missing}", "--threshold", "150"], "--threshold"),
        (["dedup", "{missing}", "--threshold", "nan"], "--threshold"),
        (["dedup", "{missing}", "--threshold", "-0.5"], "--threshold"),
        (["dedup", "{missing}", "--rule", "shortest"], "--rule"),
        (["dedup", "{missing}", "--workers", "0"], "--workers"),
        (["dedup", "{missing}", "--workers", "-2"], "--workers"),
        (["dedup", "{missing}", "--encoding", "no-such-codec"], "--encoding"),
        (["dedup", "{missing}", "--format", "xlsx"], "--format"),
        (["dedup", "{missing}", "--on-error", "ignore"], "--on-error"),
        (["leakage", "{missing}", "{missing}", "--threshold", "101"], "--threshold"),
        (["leakage", "{missing}", "{missing}", "--on-error", "later"], "--on-error"),
        (["agree", "{missing}", "--bootstrap", "-1"], "--bootstrap"),
        (["agree", "{missing}", "--seed", "-1"], "--seed"),
        (["agree", "{missing}", "--encoding", "no-such-codec"], "--encoding"),
        (["split", "{missing}", "--sizes", "0.5,0.6"], "--sizes"),
        (["split", "{missing}", "--sizes", "1,nan"], "--sizes"),
        (["split", "{missing}", "--sizes", "7,,3"], "--sizes"),
        (["split", "{missing}", "--sizes", "0.5,0.5", "--names", "a,a"], "--names"),
        (["split", "{missing}", "--sizes", "0.5,0.5", "--names", "a,b,c"], "--names"),
        (["split", "{missing}", "--sizes", "0.5,0.5", "--tolerance", "-1"], "--tolerance"),
        (["split", "{missing}", "--sizes", "0.5,0.5", "--threshold", "inf"], "--threshold"),
        (["split", "{missing}", "--sizes", "0.5,0.5", "--seed", "-3"], "--seed"),
        (["normalize", "{missing}", "{out}", "--min-length", "-1"], "--min-length"),
        (["normalize", "{missing}", "{out}", "--topics", "explode"], "--topics"),
        (["normalize", "{missing}", "{out}", "--punctuation", "fancy"], "--punctuation"),
        (["convert", "--from", "nope", "{missing}", "{out}"], "--from"),
        (["convert", "--from", "cold", "{missing}", "{out}", "--encoding", "no-such-codec"], "--encoding"),
    ],
)
def test_every_option_is_checked_before_any_file_is_read(cli, tmp_path, args, needle):
    """The input does not exist: the error must still be the option's, one line, exit 2."""
    filled = [a.format(missing=tmp_path / "missing.csv", out=tmp_path / "out.jsonl") for a in args]
    result = cli("data", *filled)
    _one_line_error(result, needle)
    assert "file not found" not in result.stderr and not (tmp_path / "out.jsonl").exists()


def test_split_blames_the_option_that_is_wrong(cli, tmp_path):
    source = write_lines(tmp_path / "c.jsonl", comments())  # 62 records
    _one_line_error(cli("data", "split", source, "--sizes", "10,10"), "--sizes", "62 records")
    _one_line_error(cli("data", "split", source, "--sizes", "31,31", "--names", "x,x"), "--names")
    ok = cli("data", "split", source, "--sizes", "31,31", "--names", "x,y", "--stratify", "label", "--quiet")
    assert ok.exit_code == 0, ok.stderr


EMPTY_INPUTS = {"empty.csv": "", "header.csv": "id,text,label\n", "blank.jsonl": "\n\n", "empty.json": "[]"}


@pytest.mark.parametrize("name", sorted(EMPTY_INPUTS))
@pytest.mark.parametrize("command", ["normalize", "dedup", "split", "leakage-first", "leakage-second", "convert"])
def test_empty_and_header_only_inputs_are_one_error_everywhere(cli, tmp_path, name, command):
    empty = tmp_path / name
    empty.write_text(EMPTY_INPUTS[name], encoding="utf-8")
    good = write_lines(tmp_path / "good.jsonl", comments(4))
    out = tmp_path / "out.jsonl"
    args = {
        "normalize": ["normalize", empty, out],
        "dedup": ["dedup", empty, "--out", out],
        "split": ["split", empty, "--sizes", "0.5,0.5", "--out", out],
        "leakage-first": ["leakage", empty, good, "--pairs", out],
        "leakage-second": ["leakage", good, empty, "--pairs", out],
        "convert": ["convert", "--from", "generic", empty, out, "--map", "text=text"],
    }[command]
    _one_line_error(cli("data", *args), str(empty), "no data records")
    assert not out.exists()  # nothing written


def test_agree_on_an_empty_file_is_an_error_too(cli, tmp_path):
    empty = tmp_path / "a.jsonl"
    empty.write_text("", encoding="utf-8")
    _one_line_error(cli("data", "agree", empty), str(empty))


def test_every_skipped_line_is_reported_and_counted(cli, tmp_path):
    path = tmp_path / "c.csv"
    path.write_text('id,text\n1,甲乙丙丁戊己庚辛\n2,"甲乙丙丁戊己庚辛\n3,子丑寅卯\n4,子丑寅卯辰\n', encoding="utf-8")
    result = cli("data", "dedup", path, "--on-error", "skip", "--report", "-")
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and (report["texts"], report["skipped_rows"], report["skipped_lines"]) == (1, 1, 3)
    assert f"{path}:3:" in result.stderr and "lines 3–5" in result.stderr


def test_a_header_only_file_of_another_format_is_refused_by_its_header(cli, tmp_path):
    source = tmp_path / "train.csv"
    source.write_text("id,content,toxic\n", encoding="utf-8")
    result = cli("data", "convert", "--from", "cold", source, tmp_path / "out.jsonl")
    _one_line_error(result, "not a COLD file", "'TEXT'")


def test_scores_are_printed_and_written_with_their_precision(cli, tmp_path):
    base = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(200_000))
    rows = [{"id": "a", "text": base}, {"id": "b", "text": base[:100_000] + "变" + base[100_001:]}]
    source = write_lines(tmp_path / "long.jsonl", rows)
    pairs = tmp_path / "pairs.jsonl"
    assert cli("data", "dedup", source, "--pairs", pairs, "--quiet").exit_code == 0
    (pair,) = [json.loads(x) for x in pairs.read_text(encoding="utf-8").splitlines()]
    assert pair["score"] == 100 * (1 - 2 / 400_000) and pair["score"] < 100
    leak = cli(
        "data", "leakage", write_lines(tmp_path / "a.jsonl", rows[:1]), write_lines(tmp_path / "b.jsonl", rows[1:])
    )
    assert leak.exit_code == 1 and "fuzz.ratio 99.999" in leak.stdout and "100.0" not in leak.stdout


def test_workers_help_says_what_it_sets(cli):
    for command in ("dedup", "leakage"):
        text = " ".join(cli("data", command, "--help").stdout.split())
        assert "Threads RapidFuzz uses" in text and "Processes" not in text


def test_leakage_takes_format_and_on_error_like_every_data_command(cli, tmp_path):
    train = tmp_path / "train.txt"
    train.write_text('id,text\nt1,今天天气很好我们去公园\nt2,"broken\n', encoding="utf-8")
    test = tmp_path / "test.txt"
    test.write_text("id,text\ns1,今天天气很好我们去公园!\n", encoding="utf-8")
    _one_line_error(cli("data", "leakage", train, test, "--format", "csv"), f"{train}:3:")
    skipped = cli("data", "leakage", train, test, "--format", "csv", "--on-error", "skip", "--json")
    assert skipped.exit_code == 1 and "skipped" in skipped.stderr
    assert [(p["id_a"], p["id_b"]) for p in json.loads(skipped.stdout)] == [("t1", "s1")]


def test_normalize_keeps_short_abusive_comments_and_reports_conflicting_duplicates(cli, tmp_path):
    rows = [
        {"id": "1", "text": "这中男人就是垃圾", "label": "1"},
        {"id": "2", "text": "[酷]", "label": "0"},
        {"id": "3", "text": "地域黑真的没意思", "label": "0"},
        {"id": "4", "text": "地域黑真的没意思 ", "label": "1"},  # the same text after normalisation, another label
        {"id": "5", "text": "地域黑真的没意思", "label": "1"},
        {"id": "6", "text": "这中男人就是垃圾", "label": "1"},  # a plain duplicate
    ]
    source = write_lines(tmp_path / "raw.jsonl", rows)
    out, conflicts = tmp_path / "clean.jsonl", tmp_path / "conflicts.jsonl"
    result = cli("data", "normalize", source, out, "--conflicts", conflicts, "--report", tmp_path / "r.json")
    assert result.exit_code == 0, result.stderr
    kept = [json.loads(x)["id"] for x in out.read_text(encoding="utf-8").splitlines()]
    assert kept == ["1", "2", "3"]  # short comments and emoticons stay; the first copy is kept
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["removed"]["too_short"] == 0 and report["removed"]["duplicate"] == 3
    assert (report["duplicate_conflicts"], report["conflict_groups"]) == (2, 1)
    listed = [json.loads(x) for x in conflicts.read_text(encoding="utf-8").splitlines()]
    assert [(r["group"], r["record"]["id"], r["kept"], r["label"]) for r in listed] == [
        (1, "3", True, "0"),
        (1, "4", False, "1"),
        (1, "5", False, "1"),
    ]
    assert "carry another label" in result.stdout


def test_output_files_get_the_mode_of_the_umask(cli, tmp_path):
    import os
    import stat

    source = write_lines(tmp_path / "c.jsonl", comments(4))
    old = os.umask(0o022)
    try:
        assert cli("data", "dedup", source, "--out", tmp_path / "kept.jsonl", "--quiet").exit_code == 0
        os.umask(0o077)
        assert cli("data", "dedup", source, "--out", tmp_path / "private.jsonl", "--quiet").exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "kept.jsonl").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "private.jsonl").stat().st_mode) == 0o600


def test_normalize_defaults_on_real_cold_train_keep_every_short_comment(cli, tmp_path, shared_data):
    """Default normalisation of COLD train removes no record for its length, and the conflicting
    duplicates it reports are those an independent grouping of the normalised texts finds."""
    import csv
    from collections import defaultdict

    from verimod.data.normalize import normalize_text

    source = shared_data / "cold" / "train.csv"
    out, conflicts = tmp_path / "clean.jsonl", tmp_path / "conflicts.jsonl"
    result = cli(
        "data",
        "normalize",
        source,
        out,
        "--text-field",
        "TEXT",
        "--conflicts",
        conflicts,
        "--report",
        tmp_path / "r.json",
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["records_in"] == 25726 and report["removed"]["too_short"] == 0
    with source.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    labels = defaultdict(list)
    for row in rows:
        labels[normalize_text(row["TEXT"])[0]].append(row["label"])
    expected = sum(1 for group in labels.values() for label in group[1:] if label != group[0])
    groups = sum(1 for group in labels.values() if any(label != group[0] for label in group[1:]))
    assert expected > 0 and (report["duplicate_conflicts"], report["conflict_groups"]) == (expected, groups)
    assert len(conflicts.read_text(encoding="utf-8").splitlines()) == expected + groups
    offensive_short = sum(1 for row in rows if row["label"] == "1" and len(row["TEXT"]) < 15)
    kept_short = sum(
        1
        for line in out.read_text(encoding="utf-8").splitlines()
        if (r := json.loads(line))["label"] == "1" and len(r["TEXT"]) < 15
    )
    assert offensive_short > 900 and kept_short > 0.95 * offensive_short
