import codecs
import json
import os

import pytest

from tests.helpers.syncs import record_syncs
from verimod.core.errors import InputError
from verimod.data.jsonl import read_jsonl, scan_jsonl, write_json, write_jsonl


def test_reads_utf8_with_and_without_bom_and_skips_blank_lines(tmp_path):
    body = '{"id": "1", "text": "河南人"}\n\n  \n{"id": "2"}\r\n'
    plain = tmp_path / "plain.jsonl"
    plain.write_text(body, encoding="utf-8")
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(codecs.BOM_UTF8 + body.encode("utf-8"))
    for path in (plain, bom):
        assert list(read_jsonl(path)) == [(1, {"id": "1", "text": "河南人"}), (4, {"id": "2"})]


def test_gb18030_file_is_rejected_with_a_hint_and_read_with_encoding(tmp_path):
    path = tmp_path / "gbk.jsonl"
    path.write_bytes('{"id": "a"}\n{"text": "违规回答"}\n'.encode("gb18030"))
    with pytest.raises(InputError) as err:
        list(read_jsonl(path))
    problem = err.value.problem
    assert problem.line == 2 and "UTF-8" in problem.message.upper() and "--encoding gb18030" in problem.message
    assert list(read_jsonl(path, encoding="gb18030"))[1] == (2, {"text": "违规回答"})


def test_utf16_is_named(tmp_path):
    path = tmp_path / "u16.jsonl"
    path.write_bytes('{"id": "a"}\n'.encode("utf-16"))
    with pytest.raises(InputError, match="UTF-16"):
        list(read_jsonl(path))
    assert list(read_jsonl(path, encoding="utf-16")) == [(1, {"id": "a"})]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "a",', "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"x": NaN}', "NaN"),
        ("not json", "invalid JSON"),
    ],
)
def test_bad_lines_name_their_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"ok": 1}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        list(read_jsonl(path))
    assert err.value.problem.line == 2 and message in err.value.problem.message
    assert str(err.value).startswith(f"{path}:2: ")
    scanned = list(scan_jsonl(path))
    assert scanned[0] == (1, {"ok": 1}) and isinstance(scanned[1][1], InputError)


def test_missing_file_and_unknown_encoding(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        list(read_jsonl(tmp_path / "nope.jsonl"))
    path = tmp_path / "a.jsonl"
    path.write_text("{}\n", encoding="utf-8")
    with pytest.raises(InputError, match="unknown encoding"):
        list(read_jsonl(path, encoding="klingon"))


def test_written_files_are_valid_utf8_and_round_trip_lone_surrogates(tmp_path):
    rows = [{"id": "a", "output": "半个\ud800代理对"}, {"id": "b", "output": "\u2028行分隔"}]
    path = tmp_path / "out" / "rows.jsonl"
    assert write_jsonl(path, rows) == 2
    path.read_bytes().decode("utf-8")  # strict UTF-8
    assert [obj for _, obj in read_jsonl(path)] == rows
    write_json(tmp_path / "x.json", {"v": "\udfff"})
    assert json.loads((tmp_path / "x.json").read_text(encoding="utf-8")) == {"v": "\udfff"}


def test_failed_write_leaves_no_partial_file(tmp_path):
    path = tmp_path / "rows.jsonl"

    def rows():
        yield {"a": 1}
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_jsonl(path, rows())
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_auto_encoding_detects_gb18030_utf16_and_utf8(tmp_path):
    rows = [{"id": "a", "text": "违规回答的文本"}]
    for encoding in ("gb18030", "utf-16", "utf-8-sig", "utf-8"):
        path = tmp_path / f"{encoding}.jsonl"
        path.write_bytes((json.dumps(rows[0], ensure_ascii=False) + "\n").encode(encoding))
        assert [obj for _, obj in read_jsonl(path, encoding="auto")] == rows, encoding
    garbage = tmp_path / "g.jsonl"
    garbage.write_bytes(b'{"id": "\x80\x80"}\n')  # neither valid UTF-8 nor GB18030
    with pytest.raises(InputError, match="neither UTF-8 nor GB18030"):
        list(read_jsonl(garbage, encoding="auto"))


# ---------------------------------------------------------------- issue 18: file modes


def _mode(path):
    import stat

    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_get_the_mode_of_the_umask(tmp_path, umask, mode):
    import os

    old = os.umask(umask)
    try:
        write_jsonl(tmp_path / "a.jsonl", [{"a": 1}])
        write_json(tmp_path / "deep" / "b.json", {"b": 2})
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.jsonl") == mode and _mode(tmp_path / "deep" / "b.json") == mode
    assert not [p for p in tmp_path.rglob(".*.tmp")]  # no temporary file left behind


def test_replacing_a_file_keeps_its_mode(tmp_path):
    path = tmp_path / "a.jsonl"
    write_jsonl(path, [{"a": 1}])
    path.chmod(0o640)
    write_jsonl(path, [{"a": 2}])
    assert _mode(path) == 0o640 and list(read_jsonl(path)) == [(1, {"a": 2})]


def test_the_html_report_gets_the_mode_of_the_umask(tmp_path, monkeypatch):
    """The HTML report is written by the same atomic writer (report/html.py): 0644 under umask 022."""
    import os

    from typer.testing import CliRunner

    from tests.conftest import write_lines
    from verimod.cli.app import app
    from verimod.report.html import build_report
    from verimod.tasks.varm.evaluate import load_run
    from verimod.tasks.varm.starter import load_starter

    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    test = load_starter("test")[:4]
    data = write_lines(tmp_path / "data.jsonl", [r.model_dump(exclude_none=True) for r in test])
    outputs = write_lines(tmp_path / "out.jsonl", [{"id": r.id, "output": r.cot} for r in test])
    args = ["eval", "--model", f"scripted:{outputs}", "--data", str(data), "--runs-dir", str(tmp_path / "runs")]
    assert CliRunner().invoke(app, args, catch_exceptions=False).exit_code == 0
    old = os.umask(0o022)
    try:
        page = build_report([load_run(next((tmp_path / "runs").iterdir()))], tmp_path / "report.html")
    finally:
        os.umask(old)
    assert _mode(page) == 0o644 and page.read_text(encoding="utf-8").startswith("<!")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to name the synced files")
def test_a_durable_write_is_synced_before_it_replaces_the_old_file(tmp_path, monkeypatch):
    """Issue #20: fsync before os.replace where durability is promised (a power cut must leave
    the old or the new version, never an empty file)."""
    events = record_syncs(monkeypatch)
    write_json(tmp_path / "scores.json", {"n": 1}, durable=True)
    temporary, replaced, folder = events
    assert temporary[0] == "fsync" and temporary[1].startswith(".scores.json.") and temporary[1].endswith(".tmp")
    assert replaced == ("replace", "scores.json") and folder == ("fsync", "folder")
    events.clear()
    write_jsonl(tmp_path / "items.jsonl", [{"id": "a"}])  # not promised: no fsync
    assert events == [("replace", "items.jsonl")]
    assert json.loads((tmp_path / "scores.json").read_text(encoding="utf-8")) == {"n": 1}
