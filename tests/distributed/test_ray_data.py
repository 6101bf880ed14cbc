"""``verimod data normalize | dedup | split --ray`` on a local three-node Ray cluster: the same
outputs as the single-machine commands, byte for byte (the parts of each output folder
concatenated), the same reports, the same errors — on a seeded synthetic corpus, on COLD, on
Parquet, and on broken inputs."""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from tests.conftest import SHARED_DATA
from tests.distributed.conftest import cat
from verimod.cli.app import app
from verimod.data.jsonl import write_jsonl
from verimod.data.records import read_table
from verimod.distributed.synthetic import synthetic_records

pytestmark = pytest.mark.slow

COLD = SHARED_DATA / "cold"
#: Input shards of about 50 kB: a few thousand records make a dozen shards.
SMALL_SHARDS = ("--shard-mb", "0.05")


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def both(command, source, single_args, ray_args, common=()):
    """Run ``verimod data COMMAND SOURCE`` on one machine and on the cluster (quiet)."""
    single = run("data", command, source, *single_args, *common, "-q")
    on_ray = run("data", command, source, *ray_args, *common, "--ray", "auto", *SMALL_SHARDS, "-q")
    return single, on_ray


def reports(folder_single, folder_ray):
    return (
        json.loads((folder_single / "report.json").read_text(encoding="utf-8")),
        json.loads((folder_ray / "report.json").read_text(encoding="utf-8")),
    )


def dirty_records(n, seed):
    """Synthetic records plus what normalize removes or rewrites: copies (some with another
    label), spam, empty and symbol-only texts, identifiers, full-width characters."""
    rng = random.Random(seed)
    records = list(synthetic_records(n, seed=seed))
    extras = [
        {"id": "spam1", "text": "兼职日结，加微信 abc_123 免费领取", "label": "harmless"},
        {"id": "empty", "text": "   ", "label": "harmless"},
        {"id": "symbols", "text": "！！！……", "label": "harmful"},
        {"id": "phone", "text": "打电话 13800138000 问问ＡＢＣ１２３", "label": "harmless"},
        {"id": "url", "text": "看这里 https://example.com/x?y=1 &amp; 那里", "label": "harmful"},
    ]
    for k, extra in enumerate(extras):
        records.insert(rng.randrange(len(records)), {**extra, "category": "other", "n": k})
    for k in range(60):  # copies later in the file, half with the other label
        source = records[rng.randrange(len(records) // 2)]
        copy = {**source, "id": f"copy{k}"}
        if k % 2:
            copy["label"] = "harmless" if source["label"] == "harmful" else "harmful"
        records.insert(rng.randrange(len(records) // 2, len(records)), copy)
    return records


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    write_jsonl(path, dirty_records(5000, seed=11))
    return path


@pytest.mark.parametrize(("threshold", "rule"), [(95, "first"), (80, "longest")])
def test_dedup_on_ray_is_the_single_machine_dedup(ray_cluster, corpus, tmp_path, threshold, rule):
    s, r = tmp_path / "s", tmp_path / "r"
    s.mkdir()
    common = ("--threshold", threshold, "--rule", rule)
    single, on_ray = both(
        "dedup",
        corpus,
        ("--out", s / "kept.jsonl", "--pairs", s / "pairs.jsonl", "--report", s / "report.json"),
        ("--out", r / "kept", "--pairs", r / "pairs", "--report", r / "report.json"),
        common,
    )
    assert single.exit_code == 0 and on_ray.exit_code == 0, on_ray.stderr
    assert len(list((r / "kept").glob("part-*.jsonl"))) > 5  # read, joined and written in shards
    assert cat(r / "kept") == (s / "kept.jsonl").read_bytes()
    assert cat(r / "pairs") == (s / "pairs.jsonl").read_bytes()
    one, many = reports(s, r)
    assert one["pairs"] > 100 and one["dropped"] > 100
    assert many["compared"] >= one["compared"]  # a pair is compared in every bucket that finds it
    for key in ("seconds", "compared"):
        one.pop(key), many.pop(key)
    assert many == one  # candidates included: the single-machine candidate count


def test_normalize_on_ray_is_the_single_machine_normalize(ray_cluster, corpus, tmp_path):
    s, r = tmp_path / "s", tmp_path / "r"
    s.mkdir()
    common = ("--keep-original", "raw", "--min-length", "3", "--emoji")
    single, on_ray = both(
        "normalize",
        corpus,
        (s / "kept.jsonl", "--rejects", s / "rejects.jsonl", "--conflicts", s / "conflicts.jsonl", "--report",
         s / "report.json"),
        (r / "kept", "--rejects", r / "rejects", "--conflicts", r / "conflicts.jsonl", "--report", r / "report.json"),
        common,
    )  # fmt: skip
    assert single.exit_code == 0 and on_ray.exit_code == 0, on_ray.stderr
    assert cat(r / "kept") == (s / "kept.jsonl").read_bytes()
    assert cat(r / "rejects") == (s / "rejects.jsonl").read_bytes()
    assert (r / "conflicts.jsonl").read_bytes() == (s / "conflicts.jsonl").read_bytes()
    one, many = reports(s, r)
    assert one["removed"]["duplicate"] >= 60 and one["duplicate_conflicts"] >= 30 and one["removed"]["spam"] == 1
    assert json.dumps(many) == json.dumps(one)  # key order included


def test_a_folder_of_parts_is_read_as_their_concatenation(ray_cluster, corpus, tmp_path):
    normalized = run("data", "normalize", corpus, tmp_path / "clean", "--ray", "auto", *SMALL_SHARDS, "-q")
    assert normalized.exit_code == 0, normalized.stderr
    whole = tmp_path / "clean.jsonl"
    whole.write_bytes(cat(tmp_path / "clean"))
    single = run("data", "dedup", whole, "--pairs", tmp_path / "pairs.jsonl", "-q")
    on_ray = run("data", "dedup", tmp_path / "clean", "--pairs", tmp_path / "pairs", "--ray", "auto", "-q")
    assert single.exit_code == 0 and on_ray.exit_code == 0, on_ray.stderr
    pairs = (tmp_path / "pairs.jsonl").read_bytes()
    assert pairs.count(b"\n") > 100 and cat(tmp_path / "pairs") == pairs  # line numbers run on across parts


def test_split_on_ray_is_the_single_machine_split(ray_cluster, corpus, tmp_path):
    s, r = tmp_path / "s", tmp_path / "r"
    s.mkdir()
    common = ("--sizes", "0.7,0.1,0.2", "--seed", "7", "--stratify", "label,category", "--threshold", "90")
    single, on_ray = both(
        "split",
        corpus,
        ("--out", s / "all.jsonl", "--out-dir", s / "splits", "--report", s / "report.json"),
        ("--out", r / "all", "--out-dir", r / "splits", "--report", r / "report.json"),
        common,
    )
    assert single.exit_code == 0 and on_ray.exit_code == 0, on_ray.stderr
    assert cat(r / "all") == (s / "all.jsonl").read_bytes()
    for name in ("train", "dev", "test"):
        assert cat(r / "splits" / name) == (s / "splits" / f"{name}.jsonl").read_bytes()
    one, many = reports(s, r)
    assert one["components"] > 100 and many == one
    other = run("data", "split", corpus, *common[:2], "--seed", "8", "--out", r / "other", "--ray", "auto", "-q")
    assert other.exit_code == 0 and cat(r / "other") != cat(r / "all")  # the seed matters


@pytest.mark.skipif(not COLD.is_dir(), reason=f"COLD not found at {COLD} (the shared real data)")
def test_cold_on_ray_is_the_single_machine_result(ray_cluster, tmp_path):
    rows = [row for split in ("train", "dev", "test") for _, row in read_table(COLD / f"{split}.csv").rows]
    source = tmp_path / "cold.jsonl"
    write_jsonl(source, rows)
    s, r = tmp_path / "s", tmp_path / "r"
    s.mkdir()
    field = ("--text-field", "TEXT")
    single, on_ray = both(
        "dedup", source, ("--out", s / "kept.jsonl", "--pairs", s / "pairs.jsonl", "--report", s / "report.json"),
        ("--out", r / "kept", "--pairs", r / "pairs", "--report", r / "report.json"), field,
    )  # fmt: skip
    assert single.exit_code == 0 and on_ray.exit_code == 0, on_ray.stderr
    assert cat(r / "kept") == (s / "kept.jsonl").read_bytes() and cat(r / "pairs") == (s / "pairs.jsonl").read_bytes()
    one, many = reports(s, r)
    assert one["texts"] == 37480 and one["pairs"] > 200
    assert {k: v for k, v in many.items() if k not in ("seconds", "compared")} == {
        k: v for k, v in one.items() if k not in ("seconds", "compared")
    }
    split_args = ("--sizes", "0.7,0.1,0.2", "--stratify", "label,topic", "--seed", "3", *field)
    single, on_ray = both("split", source, ("--out", s / "split.jsonl"), ("--out", r / "split"), split_args)
    assert single.exit_code == 0 and on_ray.exit_code == 0, on_ray.stderr
    assert cat(r / "split") == (s / "split.jsonl").read_bytes()
    # CSV cannot be cut without reading it: one task reads it, the rest runs in shards
    train = COLD / "train.csv"
    single, on_ray = both("dedup", train, ("--out", s / "train.jsonl"), ("--out", r / "train"), field)
    assert single.exit_code == 0 and on_ray.exit_code == 0, on_ray.stderr
    assert cat(r / "train") == (s / "train.jsonl").read_bytes()
    norm_single, norm_ray = (s / "norm.jsonl", "--rejects", s / "rej.jsonl"), (r / "norm", "--rejects", r / "rej")
    single, on_ray = both("normalize", train, norm_single, norm_ray, field)
    assert single.exit_code == 0 and on_ray.exit_code == 0, on_ray.stderr
    assert cat(r / "norm") == (s / "norm.jsonl").read_bytes() and cat(r / "rej") == (s / "rej.jsonl").read_bytes()


def test_parquet_is_read_by_row_groups(ray_cluster, tmp_path):
    pa = pytest.importorskip("pyarrow", reason="pyarrow (verimod[data]) reads Parquet")
    import pyarrow.parquet as pq

    records = list(synthetic_records(4000, seed=2))
    source = tmp_path / "corpus.parquet"
    pq.write_table(pa.Table.from_pylist(records), source, row_group_size=300)
    single, on_ray = both("dedup", source, ("--out", tmp_path / "s.jsonl"), ("--out", tmp_path / "r"))
    assert single.exit_code == 0 and on_ray.exit_code == 0, on_ray.stderr
    assert len(list((tmp_path / "r").glob("part-*.jsonl"))) > 1
    assert cat(tmp_path / "r") == (tmp_path / "s.jsonl").read_bytes()


def broken_inputs(folder):
    """Inputs that the single-machine reader rejects, skips or decodes in a particular way."""
    records = list(synthetic_records(3000, seed=4))
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    cases = {}
    bad = list(lines)
    bad[2500] = '{"id": "broken", "text": '
    bad[2700] = "[1, 2]"
    cases["malformed"] = ("\n".join(bad) + "\n").encode()
    missing = [*lines[:2200], json.dumps({"id": "x", "body": "no text"}), *lines[2200:]]
    cases["missing-text"] = ("\n".join(missing) + "\n").encode()
    cases["gb18030"] = ("\n".join(lines) + "\n").encode("gb18030")
    mixed = "\r\n".join(lines[:1500]) + "\r\n\r\n\n" + "\n".join(lines[1500:])
    cases["bom-crlf-blank"] = b"\xef\xbb\xbf" + mixed.encode()
    cases["empty"] = b"\n  \n"
    paths = {}
    for name, data in cases.items():
        paths[name] = folder / f"{name}.jsonl"
        paths[name].write_bytes(data)
    return paths


@pytest.mark.parametrize(
    ("case", "options"),
    [
        ("malformed", ()),
        ("malformed", ("--on-error", "skip")),
        ("missing-text", ()),
        ("gb18030", ()),
        ("gb18030", ("--encoding", "utf-8")),
        ("gb18030", ("--encoding", "gb18030")),
        ("bom-crlf-blank", ()),
        ("empty", ()),
    ],
)
def test_inputs_read_in_shards_give_the_single_machine_records_and_errors(ray_cluster, tmp_path, case, options):
    source = broken_inputs(tmp_path)[case]
    single, on_ray = both(
        "dedup",
        source,
        ("--out", tmp_path / "s.jsonl", "--report", tmp_path / "s.json"),
        ("--out", tmp_path / "r", "--report", tmp_path / "r.json"),
        options,
    )
    assert on_ray.exit_code == single.exit_code, on_ray.stderr
    assert on_ray.stderr == single.stderr  # the same error, or the same skipped records, in one line each
    if single.exit_code == 0:
        assert cat(tmp_path / "r") == (tmp_path / "s.jsonl").read_bytes()
        one = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
        many = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
        assert (many["texts"], many["skipped_rows"], many["pairs"]) == (one["texts"], one["skipped_rows"], one["pairs"])
    else:
        assert single.exit_code == 2 and single.stderr.startswith("error: ") and single.stderr.count("\n") == 1
    if case == "malformed" and options:
        assert single.stderr.count("skipped: ") == 2


def test_a_missing_input_is_the_single_machine_error(ray_cluster, tmp_path):
    single, on_ray = both("dedup", tmp_path / "missing.jsonl", (), ())
    assert on_ray.exit_code == single.exit_code == 2
    assert on_ray.stderr == single.stderr == f"error: {tmp_path / 'missing.jsonl'}: file not found\n"
