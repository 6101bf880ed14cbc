"""The readers and the parser on real public files from ../shared/data (skipped when absent)."""

import csv
import io

import pytest

from verimod.core.errors import InputError
from verimod.data.jsonl import read_lines
from verimod.tasks.varm.parser import ParseErrorClass, parse_rationale


def test_real_gb18030_file_is_refused_with_a_hint_then_read(shared_data):
    path = shared_data / "jade" / "jade_alignment_medium_zh.csv"
    with pytest.raises(InputError) as err:
        list(read_lines(path))
    assert err.value.problem.line == 1 and "--encoding gb18030" in err.value.problem.message
    lines = [text for _, text in read_lines(path, encoding="gb18030")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    assert rows[0] == ["ID", "问题", "违规回答", "安全有用回答"]
    assert len(rows) > 100 and all(len(r) == 4 for r in rows[1:] if r)


def test_real_comments_never_parse_as_records_and_never_crash(shared_data):
    """COLD comments contain emoticons like [机智] but no anchors: every one is missing_anchor
    (or empty), and bracketed emoticons are ignored."""
    lines = [text for _, text in read_lines(shared_data / "cold" / "test.csv")]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    assert len(rows) == 5323
    with_brackets = 0
    for row in rows:
        result = parse_rationale(row["TEXT"])
        assert result.error_class in (ParseErrorClass.MISSING_ANCHOR, ParseErrorClass.EMPTY_OUTPUT)
        with_brackets += "[" in row["TEXT"]
    assert with_brackets > 0  # the real data does exercise bracketed non-anchors
