import json

import pytest

from tests.tasks.toxirex.helpers import FIXTURES, fixture_lines, full, no_implication, not_toxic
from verimod.core.errors import InputError
from verimod.tasks.toxirex.io import load_annotations, load_predictions, write_records
from verimod.tasks.toxirex.parse import (
    PARSER_VERSION,
    ErrorClass,
    comment_predictions,
    parse_comment_output,
    parse_thread_output,
)

IDS = ["t-c1", "t-c2", "t-c3", "t-c4"]


def thread(*entries) -> str:
    return json.dumps({"comments": [{"messageNr": nr, **data} for nr, data in entries]}, ensure_ascii=False)


def test_valid_thread_output_and_absent_messages():
    raw = thread((2, full()), (3, no_implication(False, True)))
    result = parse_thread_output(raw, n_messages=4)
    assert result.ok and result.error_class is None and not result.extracted
    assert sorted(result.messages) == [2, 3]
    records = comment_predictions(result, IDS, "t", model="m")
    assert [r.comment_id for r in records] == IDS
    assert records[0].reasoning is not None and records[0].reasoning.toxicity is False  # absent → not toxic
    assert records[1].reasoning is not None and records[1].reasoning.has_implication is True
    assert all(r.parser_version == PARSER_VERSION and r.model == "m" for r in records)
    strict = comment_predictions(result, IDS, absent="invalid")
    assert [r.error_class for r in strict] == ["missing", None, None, "missing"]


@pytest.mark.parametrize(
    "wrap",
    [
        lambda s: f"```json\n{s}\n```",
        lambda s: f"  <think>Message 2 wishes harm on someone.</think>\n{s}\n",
        lambda s: f"<think>…</think>\n```\n{s}\n```",
    ],
)
def test_fenced_and_thinking_outputs_are_unwrapped(wrap):
    result = parse_thread_output(wrap(thread((1, full()))))
    assert result.ok and result.extracted and list(result.messages) == [1]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "empty output"),
        ("   \n", "empty output"),
        ('Here is my answer: {"comments": []}', "invalid JSON"),
        ('{"comments": [{"messageNr": 1, "toxicity": tr', "invalid JSON"),
        ('{"comments": [{"messageNr": 1, "toxicity": NaN}]}', "NaN is not valid JSON"),
        ('```json\n{"comments": []}', "invalid JSON"),
    ],
)
def test_invalid_json_fails_every_comment(raw, message):
    result = parse_thread_output(raw, 4)
    assert result.error_class is ErrorClass.INVALID_JSON
    assert message in str(result.failures[0]) and result.failures[0].path is None
    records = comment_predictions(result, IDS)
    assert {r.error_class for r in records} == {"invalid_json"} and all(r.reasoning is None for r in records)
    assert all("\n" not in (r.error or "") for r in records)


def test_schema_violation_names_the_field_and_fails_only_its_message():
    bad = full()
    bad["propositionComposition"]["implPolarity"] = "Neutral"
    raw = thread((1, not_toxic()), (2, bad), (3, full()))
    result = parse_thread_output(raw, 4)
    assert result.error_class is ErrorClass.SCHEMA_VIOLATION
    (failure,) = result.failures
    assert failure.path == "comments.1.propositionComposition.implPolarity" and failure.message_nr == 2
    assert "Neutral" in failure.message
    records = comment_predictions(result, IDS)
    assert [r.error_class for r in records] == [None, "schema_violation", None, None]
    assert records[1].error is not None and records[1].error.startswith("schema_violation: comments.1.")


@pytest.mark.parametrize(
    ("raw", "path", "fragment"),
    [
        ("[]", None, "expected a JSON object"),
        ('{"comment": []}', "comment", "unknown field"),
        ('{"comments": {}}', "comments", "must be a list"),
        ("{}", "comments", "missing required field"),
        ('{"comments": [], "comments": []}', None, "duplicate key 'comments'"),
    ],
)
def test_thread_level_schema_violations(raw, path, fragment):
    result = parse_thread_output(raw)
    assert result.error_class is ErrorClass.SCHEMA_VIOLATION
    assert any(f.path == path and fragment in f.message for f in result.failures)
    assert {r.error_class for r in comment_predictions(result, IDS)} == {"schema_violation"}


def test_unknown_and_missing_fields_inside_a_message():
    extra = {**not_toxic(), "severity": "high"}
    missing = {"counternarrative": False}
    result = parse_thread_output(thread((1, extra), (2, missing)))
    assert [(f.path, f.message, f.message_nr) for f in result.failures] == [
        ("comments.0.severity", "unknown field", 1),
        ("comments.1.toxicity", "missing required field", 2),
    ]


def test_message_numbers_duplicate_out_of_range_or_unreadable():
    dup = parse_thread_output(thread((1, not_toxic()), (2, full()), (2, not_toxic())), 4)
    assert [f.path for f in dup.failures] == ["comments.2.messageNr"]
    assert "duplicate messageNr 2 (first at comments.1)" in dup.failures[0].message
    assert [r.error_class for r in comment_predictions(dup, IDS)] == [None, "schema_violation", None, None]
    # a message beyond the thread cannot be attributed: the absent messages fail with it
    beyond = parse_thread_output(thread((1, not_toxic()), (9, full())), 4)
    assert beyond.failures[0].message_nr is None and "beyond the 4 messages" in beyond.failures[0].message
    assert [r.error_class for r in comment_predictions(beyond, IDS)] == [None] + ["schema_violation"] * 3
    text_number = parse_thread_output(json.dumps({"comments": [{"messageNr": "1", **not_toxic()}]}), 4)
    assert [(f.path, f.message_nr) for f in text_number.failures] == [("comments.0.messageNr", None)]
    unnumbered = json.dumps({"comments": [{"messageNr": 1, **not_toxic()}, not_toxic()]})
    result = parse_thread_output(unnumbered, 4)
    assert result.failures[0].path == "comments.1.messageNr" and result.failures[0].message_nr is None
    assert [r.error_class for r in comment_predictions(result, IDS)] == [None] + ["schema_violation"] * 3


def test_stopping_violations_are_their_own_class():
    stopped_but_filled = {**full(), "toxicity": False, "counternarrative": False}
    result = parse_thread_output(thread((1, stopped_but_filled), (2, full())), 4)
    assert result.error_class is ErrorClass.STOPPING_VIOLATION
    assert [f.path for f in result.failures][:2] == ["comments.0.justInappropriate", "comments.0.hasImplication"]
    assert all(f.message_nr == 1 for f in result.failures)
    assert "because toxicity and counternarrative are both false" in result.failures[0].message
    records = comment_predictions(result, IDS)
    assert [r.error_class for r in records] == ["stopping_violation", None, None, None]
    relaxed = parse_thread_output(thread((1, stopped_but_filled)), 4, allow_unreached=True)
    assert relaxed.ok and relaxed.messages[1].composition is not None
    incomplete = parse_thread_output(thread((1, {**no_implication(), "hasImplication": True})))
    assert incomplete.failures[0].path == "comments.0.implication"
    assert incomplete.failures[0].message == "missing; required because hasImplication is true"


def test_comment_scope():
    ok = parse_comment_output(json.dumps(full()))
    assert ok.ok and ok.messages[0].toxicity is True
    assert parse_comment_output("[1]").error_class is ErrorClass.SCHEMA_VIOLATION
    assert parse_comment_output("{").error_class is ErrorClass.INVALID_JSON
    stopped = parse_comment_output(json.dumps({**full(), "justInappropriate": True}))
    assert stopped.error_class is ErrorClass.STOPPING_VIOLATION and stopped.failures[0].path == "hasImplication"
    assert not stopped.messages


# ---------------------------------------------------------------- files


def test_prediction_records_round_trip(tmp_path):
    result = parse_thread_output(thread((2, full()), (3, {"toxicity": "maybe", "counternarrative": False})), 4)
    records = comment_predictions(result, IDS, "t", model="m")
    path = tmp_path / "predictions.jsonl"
    assert write_records(path, records) == 4
    assert load_predictions(path) == records


def _write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_annotation_files_report_file_line_and_field(tmp_path):
    lines = fixture_lines("annotations.jsonl")
    assert len(load_annotations(FIXTURES / "annotations.jsonl")) == len(lines)
    bad_value = [lines[0], {**lines[3], "reasoning": {**lines[3]["reasoning"], "implSarcasm": "no"}}]
    with pytest.raises(InputError, match=r"a\.jsonl:2: field 'reasoning\.implSarcasm'"):
        load_annotations(_write(tmp_path / "a.jsonl", bad_value))
    stopped = {**lines[3], "reasoning": {**lines[3]["reasoning"], "toxicity": False}}
    with pytest.raises(InputError) as info:
        load_annotations(_write(tmp_path / "b.jsonl", [lines[0], stopped]))
    assert info.value.problem.field == "reasoning.justInappropriate"
    assert "must be null because toxicity and counternarrative are both false" in str(info.value)
    with pytest.raises(InputError, match=r"c\.jsonl:2: field 'annotator': .*already annotated"):
        load_annotations(_write(tmp_path / "c.jsonl", [lines[0], lines[0]]))
    with pytest.raises(InputError, match="no annotations"):
        load_annotations(_write(tmp_path / "d.jsonl", []))


def test_prediction_files_allow_unreached_only_on_request(tmp_path):
    unconstrained = {"commentId": "c1", "reasoning": {**full(), "hasImplication": False}}
    path = _write(tmp_path / "p.jsonl", [unconstrained])
    with pytest.raises(InputError, match=r"p\.jsonl:1: field 'reasoning\.implication'"):
        load_predictions(path)
    assert load_predictions(path, allow_unreached=True)[0].reasoning is not None
    with pytest.raises(InputError, match="already predicted"):
        load_predictions(_write(tmp_path / "q.jsonl", [unconstrained, unconstrained]), allow_unreached=True)
