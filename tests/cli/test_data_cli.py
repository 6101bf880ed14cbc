"""``verimod data``: dedup, split, leakage, agree, convert end to end."""

import json

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
