"""The shared tabular reader on small fixtures and on the real public files."""

import codecs
import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from verimod.core.errors import InputError
from verimod.data.records import detect_encoding, guess_format, read_records, read_table


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


# ---------------------------------------------------------------- strict CSV: nothing lost silently


def _six_rows(broken_cell: str, column: int) -> str:
    rows = [["1", "甲", "0"], ["2", "乙", "1"], ["3", "丙", "0"], ["4", "丁", "1"], ["5", "戊", "0"], ["6", "己", "1"]]
    rows[2][column] = broken_cell
    return "id,text,label\n" + "".join(",".join(row) + "\n" for row in rows)


def test_an_unterminated_quote_in_the_last_column_is_an_error_not_a_swallowed_file(tmp_path):
    path = write(tmp_path, "a.csv", _six_rows('"0', 2))  # line 4 opens a quote that never closes
    with pytest.raises(InputError) as err:
        list(read_records(path))
    assert err.value.problem.line == 4 and "never closed" in err.value.problem.message
    stream = read_records(path, on_error="skip")
    assert [r["id"] for _, r in stream] == ["1", "2"]
    assert stream.lines is not None and stream.lines.balanced
    assert stream.skipped_lines == 4 and "lines 4–7" in stream.skipped[0].message  # every lost line counted


def test_skip_counts_every_line_a_broken_middle_field_swallows(tmp_path):
    content = _six_rows('"丙', 1).replace("6,己,1", '6,"己",1')  # the quote closes on line 7: lines 4–7 form one record
    path = write(tmp_path, "a.csv", content)
    stream = read_records(path, on_error="skip")
    assert [r["id"] for _, r in stream] == ["1", "2"]
    assert len(stream.skipped) == 1 and stream.skipped_lines == 4
    assert stream.lines is not None and (stream.lines.records, stream.lines.skipped, stream.lines.total) == (2, 4, 7)


def test_fields_longer_than_the_csv_module_default_limit_are_read(tmp_path):
    import csv

    long = "长" * (csv.field_size_limit() + 10)
    path = write(tmp_path, "a.csv", f'id,text\n1,"{long}"\n2,{long}\n')
    assert [len(r["text"]) for _, r in read_records(path)] == [len(long), len(long)]
    assert csv.field_size_limit() == 131072  # the module's global setting is left as it was


def test_text_after_a_closing_quote_and_blank_lines_are_accounted_for(tmp_path):
    path = write(tmp_path, "a.csv", 'id,text\n\n1,"好"x\n2,ok\n   \n')
    with pytest.raises(InputError, match="after a closing quote"):
        list(read_records(path))
    stream = read_records(path, on_error="skip")
    assert [line for line, _ in stream] == [4]
    assert stream.lines is not None and (stream.lines.blank, stream.lines.skipped, stream.lines.balanced) == (
        2,
        1,
        True,
    )


def test_header_is_read_before_any_row_and_blank_lines_before_it_are_skipped(tmp_path):
    stream = read_records(write(tmp_path, "a.csv", "\n\nid,text\n"))
    assert stream.columns == ["id", "text"] and list(stream) == []
    assert stream.lines is not None and (stream.lines.blank, stream.lines.header) == (2, 1)


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("empty.csv", "", "the file is empty"),
        ("header.csv", "id,text\n", "only a header line"),
        ("blank.csv", "\n \n", "only blank lines"),
        ("empty.jsonl", "\n", "the file is empty or has only blank lines"),
        ("empty.json", "[]", "no JSON object in the file"),
        ("bad.csv", 'id,text\n1,"x"y\n', "all 1 record(s) were malformed and skipped"),
    ],
)
def test_read_table_refuses_input_without_a_data_record(tmp_path, name, content, why):
    with pytest.raises(InputError) as err:
        read_table(write(tmp_path, name, content), on_error="skip")
    assert err.value.problem.message == f"no data records ({why})"


# ---------------------------------------------------------------- property: hostile cells round-trip

_HOSTILE = st.one_of(
    st.text(max_size=12),
    st.sampled_from(['"', '""', ",", "\t", "\n", "\r", "\r\n", "\ufeff", "\x00", " ", "a,b", '"quoted"', "行\n二", ""]),
    st.builds(lambda s, k: s * k, st.text(min_size=1, max_size=3), st.integers(1, 70_000)),  # huge fields
)


@st.composite
def _tables(draw):
    width = draw(st.integers(1, 4))
    header = draw(st.lists(_HOSTILE, min_size=width, max_size=width, unique=True))
    rows = draw(st.lists(st.lists(_HOSTILE, min_size=width, max_size=width), max_size=6))
    return header, rows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(table=_tables(), delimiter=st.sampled_from([",", "\t"]), crlf=st.booleans())
def test_hostile_tables_read_back_exactly(tmp_path_factory, table, delimiter, crlf):
    import csv
    import io

    header, rows = table
    assume(len(header) > 1 or header[0].strip())  # a lone blank header cell is a blank line: no header at all
    buffer = io.StringIO(newline="")
    # csv.writer quotes only the characters of its line terminator: with "\n" alone, quote every field
    style = {"lineterminator": "\r\n"} if crlf else {"lineterminator": "\n", "quoting": csv.QUOTE_ALL}
    csv.writer(buffer, delimiter=delimiter, **style).writerows([header, *rows])
    path = tmp_path_factory.mktemp("t") / ("a.csv" if delimiter == "," else "a.tsv")
    path.write_bytes(codecs.BOM_UTF8 + buffer.getvalue().encode("utf-8", "surrogatepass"))
    stream = read_records(path)
    got = [record for _, record in stream]
    assert got == [dict(zip(header, row, strict=True)) for row in rows]
    assert stream.columns == header and stream.lines is not None and stream.lines.balanced
    assert stream.lines.skipped == 0 and not stream.skipped


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet='ab",\n\r\t 甲', max_size=80))
def test_every_physical_line_of_any_text_is_accounted_for(tmp_path_factory, text):
    """Arbitrary text (broken quoting included): in skip mode every line is header, record, blank
    or skipped; in fail mode the result is the same records or an InputError, never other rows."""
    path = tmp_path_factory.mktemp("t") / "a.csv"
    path.write_text(text, encoding="utf-8", newline="")
    lines = len(io_lines(text))
    try:
        skipping = read_records(path, on_error="skip")
        kept = list(skipping)
    except InputError:  # an unreadable header or duplicate column names: nothing can be read
        return
    assert skipping.lines is not None and skipping.lines.balanced and skipping.lines.total == lines
    try:
        failing = list(read_records(path))
    except InputError as exc:
        assert skipping.skipped and exc.problem.line == skipping.skipped[0].line
    else:
        assert failing == kept and not skipping.skipped


def io_lines(text):
    import io

    return io.StringIO(text, newline="").readlines()


@pytest.mark.parametrize(
    ("name", "rows"),
    [
        ("cold/train.csv", 25726),
        ("cold/dev.csv", 6431),
        ("cold/test.csv", 5323),
        ("davidson/labeled_data.csv", 24783),  # tweets with line breaks: 26,953 lines of records
        ("hatecheck-en/test_suite_cases.csv", 3728),
        ("jade/jade_alignment_medium_zh.csv", 500),
        ("swsr/SexComment.csv", 8969),
        ("swsr/SexWeibo.csv", 1527),
    ],
)
def test_the_strict_reader_reads_every_real_csv_whole(shared_data, name, rows):
    stream = read_records(shared_data / name, encoding="auto")
    assert len(list(stream)) == rows and not stream.skipped
    assert stream.lines is not None and stream.lines.balanced and stream.lines.skipped == 0
