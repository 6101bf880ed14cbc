import json

import pytest

from tests.conftest import REQUIRED_SCORE_KEYS, rationale, reference_row, write_lines


@pytest.fixture
def files(tmp_path):
    ref = write_lines(
        tmp_path / "ref.jsonl",
        [
            reference_row("a"),
            reference_row("b", target="河南人", category="region_ethnicity"),
            reference_row("c"),
        ],
    )
    pred = write_lines(
        tmp_path / "pred.jsonl",
        [
            {"id": "a", "output": rationale()},
            {"id": "b", "output": rationale(target="河南人", category="gender")},
        ],
    )
    return ref, pred


def test_score_prints_table_and_writes_json_and_per_item(cli, files, tmp_path):
    ref, pred = files
    out, items = tmp_path / "s.json", tmp_path / "items.jsonl"
    result = cli("score", pred, "--ref", ref, "--json", out, "--per-item", items)
    assert result.exit_code == 0, result.stderr
    assert "JREM" in result.stdout and "1 reference items had no prediction" in result.stdout
    scores = json.loads(out.read_text(encoding="utf-8"))
    assert set(scores) >= REQUIRED_SCORE_KEYS
    assert scores["n"] == 3 and scores["jrem"] == pytest.approx(1 / 3) and scores["parse_rate"] == pytest.approx(2 / 3)
    assert set(scores["mismatch"]) == {"target", "target_type", "explicitness", "stance", "label", "category"}
    assert set(scores["shapley"]) == {"referent", "stance", "decision"}
    rows = [json.loads(line) for line in items.read_text(encoding="utf-8").splitlines()]
    assert [(r["id"], r["status"], r["j"]) for r in rows] == [
        ("a", "ok", 1),
        ("b", "ok", 0),
        ("c", "missing", 0),
    ]
    assert rows[1]["correct"]["category"] is False and rows[1]["record"]["category"] == "gender"
    assert {"id", "status", "error_class", "record", "correct", "target_char_f1", "j"} <= set(rows[0])


def test_score_json_to_stdout_is_pure_json(cli, files):
    ref, pred = files
    result = cli("score", pred, "--ref", ref, "--json", "-")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["n"] == 3


def test_quiet_prints_nothing(cli, files):
    ref, pred = files
    result = cli("score", pred, "--ref", ref, "--quiet")
    assert result.exit_code == 0 and result.stdout == ""


def _bad(tmp_path, name, content: bytes):
    path = tmp_path / name
    path.write_bytes(content)
    return path


BAD_PREDICTIONS = [
    ("broken JSON", b'{"id": "a", "output": "x"}\n{"id": "b", "output": \n', ":2:", "invalid JSON"),
    ("missing field", b'{"id": "a"}\n', ":1:", "field 'output': missing required field"),
    ("unknown id", b'{"id": "a", "output": "x"}\n{"id": "zz", "output": "x"}\n', ":2:", "unknown id 'zz'"),
    ("duplicate id", b'{"id": "a", "output": "x"}\n{"id": "a", "output": "y"}\n', ":2:", "duplicate id 'a'"),
    (
        "wrong encoding",
        '{"id": "a", "output": "有害的评论"}\n'.encode("gb18030"),
        ":1:",
        "--encoding gb18030",
    ),
]


@pytest.mark.parametrize(("what", "content", "where", "message"), BAD_PREDICTIONS, ids=[b[0] for b in BAD_PREDICTIONS])
def test_bad_prediction_files_exit_2_with_one_line(cli_process, files, tmp_path, what, content, where, message):
    ref, _ = files
    bad = _bad(tmp_path, "bad.jsonl", content)
    result = cli_process("score", bad, "--ref", ref)
    stderr = result.stderr.decode("utf-8")
    assert result.returncode == 2, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert f"{bad}{where}" in stderr and message in stderr
    assert "Traceback" not in stderr and result.stdout == b""


BAD_REFERENCES = [
    ("unknown value", reference_row("a", stance="attack"), "field 'stance'", "is not one of"),
    (
        "missing field",
        {"id": "a", "label": "harmful"},
        "field 'text'",
        "missing required field",
    ),
    ("duplicate id", reference_row("r0"), "field 'id'", "duplicate id 'r0'"),
]


@pytest.mark.parametrize(("what", "row", "field", "message"), BAD_REFERENCES, ids=[b[0] for b in BAD_REFERENCES])
def test_bad_reference_files_exit_2_with_one_line(cli_process, tmp_path, what, row, field, message):
    ref = write_lines(tmp_path / "ref.jsonl", [reference_row("r0"), row])
    pred = write_lines(tmp_path / "pred.jsonl", [{"id": "r0", "output": rationale()}])
    result = cli_process("score", pred, "--ref", ref)
    stderr = result.stderr.decode("utf-8")
    assert result.returncode == 2 and len(stderr.strip().splitlines()) == 1
    assert f"{ref}:2: {field}" in stderr and message in stderr


def test_missing_file_exits_2(cli_process, files, tmp_path):
    ref, _ = files
    result = cli_process("score", tmp_path / "nope.jsonl", "--ref", ref)
    assert result.returncode == 2 and b"file not found" in result.stderr and b"Traceback" not in result.stderr


def test_encoding_option_reads_gb18030(cli, tmp_path):
    ref = tmp_path / "ref.jsonl"
    ref.write_bytes((json.dumps(reference_row("a"), ensure_ascii=False) + "\n").encode("gb18030"))
    pred = tmp_path / "pred.jsonl"
    pred.write_bytes((json.dumps({"id": "a", "output": rationale()}, ensure_ascii=False) + "\n").encode("gb18030"))
    result = cli("score", pred, "--ref", ref, "--encoding", "gb18030", "--json", "-")
    assert result.exit_code == 0 and json.loads(result.stdout)["jrem"] == 1.0


def test_untrusted_output_cannot_inject_markup_or_escape_codes(cli, tmp_path):
    write_lines(tmp_path / "ref.jsonl", [reference_row("a")])
    evil = "[bold red]x[/bold red]\x1b[2J\x1b]0;pwned\x07" + rationale().replace("[L: harmful]", "")
    pred = write_lines(tmp_path / "pred.jsonl", [{"id": "a", "output": evil}])
    result = cli("parse", pred)
    assert "\x1b" not in result.stdout
    result = cli("parse", "-", input=evil)
    assert "\x1b" not in result.stdout and "missing_anchor" in result.stdout
