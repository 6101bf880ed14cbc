"""The shared tabular reader on small fixtures and on the real public files."""

import codecs
import json

import pytest

from verimod.core.errors import InputError
from verimod.data.records import detect_encoding, guess_format, read_records


def write(tmp_path, name, content, encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(content.encode(encoding) if isinstance(content, str) else content)
    return path


def test_csv_with_bom_quotes_and_multiline_fields(tmp_path):
    content = '\ufeffid,text,label\n1,"第一行\n第二行",1\n2,"含,逗号",0\n\n3,普通,1\n'
    stream = read_records(write(tmp_path, "a.csv", content))
    rows = list(stream)
    assert [line for line, _ in rows] == [2, 4, 6]
    assert rows[0][1] == {"id": "1", "text": "第一行\n第二行", "label": "1"}
    assert rows[1][1]["text"] == "含,逗号" and stream.encoding == "utf-8"


def test_tsv_and_wrong_column_counts(tmp_path):
    path = write(tmp_path, "a.tsv", "id\ttext\n1\t好\n2\t多\t余\n3\n4\t行\n")
    with pytest.raises(InputError) as err:
        list(read_records(path))
    assert (err.value.problem.line, "expected 2 columns, got 3") == (3, err.value.problem.message)
    stream = read_records(path, on_error="skip")
    assert [r["id"] for _, r in stream] == ["1", "4"]
    assert [(p.line, p.message) for p in stream.skipped] == [
        (3, "expected 2 columns, got 3"),
        (4, "expected 2 columns, got 1"),
    ]


def test_duplicate_columns_are_an_error(tmp_path):
    with pytest.raises(InputError, match="duplicate column"):
        list(read_records(write(tmp_path, "a.csv", "id,id\n1,2\n")))


def test_jsonl_skip_and_fail(tmp_path):
    path = write(tmp_path, "a.jsonl", '{"id": 1}\n{bad\n[1]\n\n{"id": 2}\n')
    with pytest.raises(InputError) as err:
        list(read_records(path))
    assert err.value.problem.line == 2
    stream = read_records(path, on_error="skip")
    assert [line for line, _ in stream] == [1, 5] and [p.line for p in stream.skipped] == [2, 3]


def test_json_array_and_object_of_objects(tmp_path):
    rows = list(read_records(write(tmp_path, "a.json", json.dumps([{"a": 1}, 5, {"a": 2}])), on_error="skip"))
    assert rows == [(1, {"a": 1}), (3, {"a": 2})]
    keyed = list(read_records(write(tmp_path, "b.json", json.dumps({"12": {"answer": 1}, "7": {"answer": 0}}))))
    assert [r for _, r in keyed] == [{"id": "12", "answer": 1}, {"id": "7", "answer": 0}]


def test_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow", reason="pyarrow (verimod[data]) is not installed")
    import pyarrow.parquet as pq

    path = tmp_path / "a.parquet.gzip"
    pq.write_table(pa.table({"text": ["甲", "乙"], "label": [1, 0]}), path, compression="gzip")
    assert list(read_records(path)) == [(1, {"text": "甲", "label": 1}), (2, {"text": "乙", "label": 0})]
    bad = write(tmp_path, "bad.parquet", b"not parquet")
    with pytest.raises(InputError, match="Parquet"):
        list(read_records(bad))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_encodings_detected_refused_or_chosen(tmp_path, fmt):
    content = "text\n中文有害评论\n" if fmt == "csv" else '{"text": "中文有害评论"}\n'
    path = write(tmp_path, f"a.{fmt}", content, "gb18030")
    with pytest.raises(InputError, match="gb18030"):
        list(read_records(path))
    stream = read_records(path, encoding="auto")
    assert [r["text"] for _, r in stream] == ["中文有害评论"] and stream.encoding == "gb18030"
    assert [r["text"] for _, r in read_records(path, encoding="gbk")] == ["中文有害评论"]
    utf16 = write(tmp_path, f"b.{fmt}", content, "utf-16")
    assert [r["text"] for _, r in read_records(utf16, encoding="auto")] == ["中文有害评论"]
    with pytest.raises(InputError, match="UTF-16"):
        list(read_records(utf16))


def test_detect_encoding_and_guess_format():
    assert detect_encoding(codecs.BOM_UTF8 + "中".encode()) == "utf-8-sig"
    assert detect_encoding("中文".encode()) == "utf-8"
    assert detect_encoding("中文".encode("gb18030")) == "gb18030"
    with pytest.raises(UnicodeDecodeError):
        detect_encoding(b"\xff\xfe\xfa"[1:] + b"\x80\x80")
    assert guess_format("x.parquet.gzip") == "parquet" and guess_format("x.TSV") == "tsv"
    with pytest.raises(InputError, match="--format"):
        guess_format("x.xlsx")


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_records(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="unknown format"):
        read_records(tmp_path / "a.csv", fmt="xml")  # type: ignore[arg-type]


def test_real_files(shared_data):
    cold = list(read_records(shared_data / "cold" / "test.csv"))
    assert len(cold) == 5323 and set(cold[0][1]) == {"", "split", "topic", "label", "fine-grained-label", "TEXT"}
    jade = read_records(shared_data / "jade" / "jade_alignment_medium_zh.csv", encoding="auto")
    rows = list(jade)
    assert (
        jade.encoding == "gb18030"
        and len(rows) == 500
        and set(rows[0][1]) == {"ID", "问题", "违规回答", "安全有用回答"}
    )
    answers = list(read_records(shared_data / "safetybench-zh" / "test_answers_zh_subset.json"))
    assert len(answers) == 2100 and {"id", "category", "answer"} <= set(answers[0][1])
    pytest.importorskip("pyarrow", reason="pyarrow (verimod[data]) is not installed")
    ishate = read_records(shared_data / "ishate" / "ishate_dev.parquet.gzip")
    first = next(iter(ishate))
    assert first[0] == 1 and "text" in first[1]
