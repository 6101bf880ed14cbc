import json
import re
import tempfile

import pytest

from tests.conftest import CANONICAL, rationale, reference_row, write_lines
from verimod.tasks.varm.starter import starter_path


def test_parse_stdin_text(cli):
    result = cli("parse", "-", input=CANONICAL)
    assert result.exit_code == 0
    assert "target=小县城公务员" in result.stdout and "format ok" in result.stdout


def test_parse_jsonl_as_json_lines(cli, tmp_path):
    pred = write_lines(
        tmp_path / "p.jsonl",
        [
            {"id": "a", "output": CANONICAL},
            {"id": "b", "output": CANONICAL.replace("[L: harmful]", "")},
            {"id": "c", "output": ""},
        ],
    )
    result = cli("parse", pred, "--json")
    assert result.exit_code == 0
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["id"], r["status"], r["error_class"]) for r in rows] == [
        ("a", "ok", None),
        ("b", "parse_error", "missing_anchor"),
        ("c", "parse_error", "empty_output"),
    ]
    assert rows[0]["anchors"][0]["start"] == CANONICAL.index("[T:")


def test_parse_text_file_is_one_output(cli, tmp_path):
    path = tmp_path / "out.txt"
    path.write_text(CANONICAL.replace("。", "。\n"), encoding="utf-8")
    result = cli("parse", path)
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 1
    assert result.stdout.startswith("out.txt  ok  target=小县城公务员")


def test_parse_bad_jsonl_exits_2(cli_process, tmp_path):
    path = write_lines(tmp_path / "p.jsonl", ['{"id": "a", "output": 3}'])
    result = cli_process("parse", path)
    assert (
        result.returncode == 2 and f"{path}:1: field 'output': must be a string, got a number".encode() in result.stderr
    )


def test_validate_ok_and_problems(cli, tmp_path):
    good = write_lines(tmp_path / "good.jsonl", [reference_row("a", cot=rationale())])
    result = cli("validate", good)
    assert result.exit_code == 0 and "OK" in result.stdout
    bad = write_lines(
        tmp_path / "bad.jsonl",
        [
            reference_row("a", cot=rationale(category="gender")),
            reference_row("a", label="non_harmful"),
            "{oops",
        ],
    )
    result = cli("validate", bad)
    assert result.exit_code == 2
    lines = [line for line in result.stdout.splitlines() if re.match(rf"{re.escape(str(bad))}:\d+: ", line)]
    assert any(f"{bad}:1: field 'cot': anchor category" in line for line in lines)
    assert any(f"{bad}:2: field 'id': duplicate id" in line for line in lines)
    assert any(f"{bad}:2: field 'category': breaks the codebook" in line for line in lines)
    assert any(f"{bad}:3: invalid JSON" in line for line in lines)
    report = json.loads(cli("validate", bad, "--json").stdout)
    assert report["items"] == 2 and len(report["problems"]) == len(lines)


def test_validate_bundled_starter(cli):
    result = cli("validate", starter_path())
    assert result.exit_code == 0, result.stdout


def test_demo_is_deterministic_and_rescorable(cli, tmp_path):
    first = cli("demo", "--out", tmp_path / "d1", "--json", tmp_path / "d1.json")
    assert first.exit_code == 0 and "Demonstration" in first.stdout and "JREM" in first.stdout
    cli("demo", "--out", tmp_path / "d2", "--json", tmp_path / "d2.json", "--quiet")
    assert (tmp_path / "d1.json").read_bytes() == (tmp_path / "d2.json").read_bytes()
    scores = json.loads((tmp_path / "d1.json").read_text(encoding="utf-8"))
    assert 0 < scores["jrem"] < scores["parse_rate"] < 1
    rescored = cli(
        "score",
        tmp_path / "d1" / "demo_predictions.jsonl",
        "--ref",
        tmp_path / "d1" / "starter_test.jsonl",
        "--json",
        "-",
    )
    assert json.loads(rescored.stdout) == scores


def test_version_and_help(cli):
    assert cli("--version").stdout.startswith("verimod ")
    for command in ("score", "parse", "validate", "demo"):
        result = cli(command, "--help")
        assert result.exit_code == 0 and "Example" in result.stdout


def test_validate_requires_complete_records_unless_partial(cli, tmp_path):
    partial = write_lines(tmp_path / "p.jsonl", [{"id": "a", "text": "一条足够长的评论文本内容。", "label": "harmful"}])
    result = cli("validate", partial)
    assert result.exit_code == 2 and f"{partial}:1: field 'target': missing required field" in result.stdout
    assert cli("validate", partial, "--partial").exit_code == 0
    broken = write_lines(
        tmp_path / "b.jsonl", [{"id": "a", "text": "文本", "label": "harmful", "stance": "oppose_attack"}]
    )
    result = cli("validate", broken, "--partial")
    assert result.exit_code == 2 and "field 'stance': breaks the codebook" in result.stdout


def test_score_reports_partial_fields(cli, tmp_path):
    ref = write_lines(
        tmp_path / "r.jsonl",
        [
            {"id": "a", "text": "一条足够长的评论文本内容。", "label": "harmful"},
            {"id": "b", "text": "另一条足够长的评论文本内容。", "label": "non_harmful", "category": "non_attack"},
        ],
    )
    pred = write_lines(tmp_path / "p.jsonl", [{"id": "a", "output": rationale()}, {"id": "b", "output": rationale()}])
    result = cli("score", pred, "--ref", ref)
    assert result.exit_code == 0
    assert "partial references: label scored on" in result.stdout and "2 / 2" in result.stdout
    assert "n/a" in result.stdout  # T-F1 has no item to be scored on
    scores = json.loads(cli("score", pred, "--ref", ref, "--json", "-").stdout)
    assert scores["fields_scored"]["label"] == 2 and scores["target_char_f1"] is None and scores["jrem"] == 0.5


def test_validate_splits_finds_leakage_drift_and_missing_splits(cli, tmp_path):
    rows = [
        reference_row("a", split="train", text="小县城公务员也就靠个编制，离了编制啥也不是。"),
        reference_row("b", split="test", text="小县城公务员也就靠个编制，离了编制啥也不是！"),
        reference_row(
            "c",
            split="train",
            text="今天天气很好，我们一起去公园散步吧。",
            label="non_harmful",
            category="non_attack",
            stance="neutral_mention",
        ),
        reference_row("d", text="另一条没有划分的评论，内容足够长了。"),
    ]
    path = write_lines(tmp_path / "s.jsonl", rows)
    assert cli("validate", path).exit_code == 0
    result = cli("validate", path, "--splits")
    assert result.exit_code == 2
    assert f"{path}:4: field 'split': missing" in result.stdout
    assert f"{path}:2: field 'split': near-duplicate (fuzz.ratio" in result.stdout and "of line 1" in result.stdout
    assert "label 'harmful'" not in result.stdout  # 1 test item: a 33-point drift is chance (z-test)
    every_drift = cli("validate", path, "--splits", "--drift-alpha", "1").stdout
    assert "split 'test': label 'harmful' is 100.0%" in every_drift
    assert "near-duplicate" not in cli("validate", path, "--splits", "--threshold", "99.5").stdout
    for option, value in (("--threshold", "150"), ("--threshold", "-1"), ("--max-drift", "-1")):
        refused = cli("validate", path, "--splits", option, value)
        assert refused.exit_code == 2 and f"Invalid value for '{option}'" in refused.output


def test_validate_splits_flags_drift_beyond_chance(cli, tmp_path):
    rows = []
    for i in range(400):  # train: 10 % harmful; test: 40 % harmful — far beyond chance at n = 200
        split = "train" if i < 200 else "test"
        harmful = (i % 10 == 0) if split == "train" else (i % 5 < 2)
        fields = {} if harmful else {"label": "non_harmful", "category": "non_attack", "stance": "neutral_mention"}
        rows.append(
            reference_row(
                f"r{i}",
                split=split,
                text=f"第{i}条评论，内容各不相同：{'甲乙丙丁'[i % 4] * (i % 7 + 1)}{i * 7919}",
                **fields,
            )
        )
    path = write_lines(tmp_path / "d.jsonl", rows)
    result = cli("validate", path, "--splits")
    assert result.exit_code == 2 and "split 'test': label 'harmful' is 40.0% vs 25.0% overall" in result.stdout
    assert "p = " in result.stdout


def test_demo_without_out_leaves_no_folder_behind(cli, tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    for _ in range(2):
        result = cli("demo")
        assert result.exit_code == 0, result.stderr
        assert "No files kept (keep them with --out DIR)." in result.stdout
    assert list(scratch.iterdir()) == []


def test_demo_suggests_a_command_that_survives_80_columns(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / "a-folder-with-a-long-name-so-that-the-command-is-wider-than-the-terminal"
    result = cli("demo", "--out", out)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    (command,) = [line.strip() for line in lines if line.strip().startswith("verimod score ")]
    predictions, references = out / "demo_predictions.jsonl", out / f"starter_{'test'}.jsonl"
    assert command == f"verimod score {predictions} --ref {references}"  # one line, never folded
    assert f"Files kept in {out}; re-score them with:" in " ".join(result.stdout.split())
    rescored = cli(*command.split()[1:], "--json", "-")  # the suggestion, as printed, works
    assert rescored.exit_code == 0 and json.loads(rescored.stdout)["n"] == 128


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("refs.csv", "id,text,label\n" + "".join(f"{i},文本{i},1\n" for i in range(300)), "a CSV file"),
        ("refs.tsv", "id\ttext\n" + "".join(f"{i}\t文本{i}\n" for i in range(50)), "a TSV file"),
        ("refs.json", json.dumps([{"id": "a", "text": "t"}]), "a JSON document"),
        ("refs.jsonl", "id,text\n1,文本\n2,文本\n", "not JSON Lines"),
    ],
)
def test_validate_a_file_that_is_not_json_lines_is_one_line_with_a_hint(cli, tmp_path, name, content, kind):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    result = cli("validate", path)
    assert result.exit_code == 2
    problem, verdict = result.stdout.strip().splitlines()
    prefix = f"{path}:1: {kind}" + (", not JSON Lines" if kind != "not JSON Lines" else "")
    assert problem.startswith(prefix + " (one JSON object per line); convert it first: verimod data convert ")
    assert f"{path} refs.jsonl" in problem and "verimod data convert --list" in problem
    assert verdict == f"{path}: 0 item(s) checked, 1 problem(s)"
    as_json = json.loads(cli("validate", path, "--json").stdout)
    assert len(as_json["problems"]) == 1 and as_json["problems"][0]["line"] == 1


def test_validate_still_reports_each_broken_line_of_a_json_lines_file(cli, tmp_path):
    rows = [json.dumps(reference_row(f"r{i}"), ensure_ascii=False) for i in range(3)]
    path = write_lines(tmp_path / "refs.jsonl", [rows[0], "{broken", rows[1], "not json either", rows[2]])
    result = cli("validate", path)
    assert result.exit_code == 2
    assert [line.split(": ")[0] for line in result.stdout.splitlines()[:2]] == [f"{path}:2", f"{path}:4"]
