import json

import pytest

from tests.conftest import rationale, reference_row, write_lines
from verimod.core.errors import InputError
from verimod.tasks.varm.io import load_outputs, load_references, reference_problems


def test_load_references_accepts_integer_ids_and_optional_fields(tmp_path):
    path = write_lines(
        tmp_path / "ref.jsonl",
        [
            reference_row(1, cot=rationale(), split="test", tags=["stereotype"], context="上文", meta={"src": "x"}),
            reference_row("2"),
        ],
    )
    refs = load_references(path)
    assert [r.id for r in refs] == ["1", "2"] and refs[0].tags == ["stereotype"]


@pytest.mark.parametrize(
    ("row", "line", "field", "message"),
    [
        ({"id": "a", "label": "harmful"}, 2, "text", "missing required field"),
        (reference_row("a", label="harmfull"), 2, "label", "did you mean 'harmful'"),
        (reference_row("a", category="occupation"), 2, "category", "is not one of"),
        (reference_row("a", colour="red"), 2, "colour", "unknown field"),
        (reference_row("a", text=""), 2, "text", "must not be empty"),
        (reference_row("a", target=" "), 2, "target", "blank"),
        (reference_row("a", id=True), 2, "id", "must be a string, got a boolean"),
        (reference_row("ok"), 2, "id", "duplicate id 'ok' (first on line 1)"),
    ],
)
def test_load_references_reports_first_problem(tmp_path, row, line, field, message):
    path = write_lines(tmp_path / "ref.jsonl", [reference_row("ok"), row])
    with pytest.raises(InputError) as err:
        load_references(path)
    problem = err.value.problem
    assert (problem.line, problem.field) == (line, field)
    assert message in problem.message
    assert "\n" not in str(err.value)


def test_empty_reference_file_is_an_error(tmp_path):
    with pytest.raises(InputError, match="empty"):
        load_references(write_lines(tmp_path / "ref.jsonl", []))


def test_reference_problems_reports_everything(tmp_path):
    path = write_lines(
        tmp_path / "ref.jsonl",
        [
            reference_row("a", cot=rationale()),
            reference_row("b", label="non_harmful"),  # breaks label_category (category stays status_occupation)
            "{broken",
            reference_row("a"),
            reference_row("c", cot=rationale(target="公务员")),
            reference_row("d", cot=rationale().replace("[L: harmful]", "")),
            reference_row("e", cot=rationale().replace("[", "【", 1).replace("]", "】", 1)),
            reference_row("f", stance="quote_or_report", label="harmful"),
            reference_row("g", target="no_clear_target"),
            reference_row("h", label="bad", category="worse"),
        ],
    )
    count, problems = reference_problems(path)
    assert count == 9
    found = {(p.line, p.field) for p in problems}
    assert (2, "category") in found  # label_category
    assert (3, None) in found  # broken JSON, reading continued
    assert (4, "id") in found  # duplicate
    assert (5, "cot") in found and any("anchor target = '公务员'" in p.message for p in problems)
    assert any(p.line == 6 and "does not parse: missing_anchor" in p.message for p in problems)
    assert any(p.line == 7 and "fails Format" in p.message for p in problems)
    assert (8, "stance") in found and (9, "target") in found
    assert {(10, "label"), (10, "category")} <= found
    assert all(str(p).startswith(f"{path}:") for p in problems)


def test_reference_problems_on_undecodable_file(tmp_path):
    path = tmp_path / "gbk.jsonl"
    good = reference_row("a")
    path.write_bytes(json.dumps(good).encode() + b"\n" + '{"text": "有害"}'.encode("gb18030") + b"\n")
    count, problems = reference_problems(path)
    assert count == 1 and len(problems) == 1
    assert problems[0].line == 2 and "--encoding gb18030" in problems[0].message


def test_load_outputs_errors_name_the_line(tmp_path):
    good = write_lines(tmp_path / "p.jsonl", [{"id": "a", "output": "x", "model": "m"}, {"id": 2, "output": ""}])
    assert load_outputs(good, ["a", "2", "3"]) == {"a": "x", "2": ""}
    cases = [
        ([{"id": "a", "output": "x"}, {"id": "zzz", "output": "y"}], 2, "id", "unknown id 'zzz'"),
        (
            [{"id": "a", "output": "x"}, {"id": "a", "output": "y"}],
            2,
            "id",
            "duplicate id 'a' (first on line 1)",
        ),
        ([{"id": "a"}], 1, "output", "missing required field"),
        ([{"id": "a", "output": None}], 1, "output", "must be a string, got null"),
    ]
    for rows, line, field, message in cases:
        with pytest.raises(InputError) as err:
            load_outputs(write_lines(tmp_path / "bad.jsonl", rows), ["a"], reference_path="ref.jsonl")
        assert (err.value.problem.line, err.value.problem.field) == (line, field)
        assert message in err.value.problem.message
