"""One reader for every tabular input: CSV, TSV, JSON, JSON Lines and Parquet.

Contract of :func:`read_records`:

- The format comes from ``fmt`` or the file name (``.csv``, ``.tsv``/``.tab``, ``.json``,
  ``.jsonl``/``.ndjson``, ``.parquet`` — also ``.parquet.gzip`` and the like).
- Text encodings: UTF-8 with or without BOM by default; ``encoding="auto"`` also detects
  UTF-16 (by its BOM) and GB18030/GBK (the whole file must decode strictly, else it is not
  that encoding); any codec name may be given. :func:`detect_encoding` is the detector.
- Every record is a ``dict`` with its source position: the physical line of a CSV/TSV row
  (its first line when a quoted field spans several), the line of a JSONL record, the
  1-based item number of a JSON array, the row number of a Parquet file.
- Malformed records — a CSV row with the wrong number of columns or broken quoting, a JSONL
  line that is not a JSON object, a JSON item that is not an object — raise
  :class:`InputError` naming file and line (``on_error="fail"``, the default), or are skipped
  and counted in ``skipped`` with their problem (``on_error="skip"``): nothing disappears
  without being counted.
- CSV/TSV are parsed strictly, with no field-size limit short of memory: a quote that is never
  closed is an error (it would otherwise swallow the rest of the file into one field), as is
  text after a closing quote. Every physical line (split at ``\n``, ``\r\n`` or ``\r``, as
  the csv module splits them) is accounted for in ``lines`` (:class:`LineAccount`): part of
  the header, of a record read, blank, or of a record skipped — a skipped record spanning
  several lines counts all of them (``skipped_lines``), and its problem names the span.
- The header of a CSV/TSV file (and the schema of a Parquet file) is read before the first
  record: ``columns`` lists it, so a file of the wrong format is recognised even when it has
  no data row. Duplicate column names are an error.
- :func:`read_table` reads every record and applies the one rule of the data commands for
  empty input: a file without a data record (empty, a header only, blank lines only, an empty
  JSON array, or every record skipped as malformed) is an :class:`InputError` (exit code 2).
- Parquet needs the optional ``pyarrow`` (``pip install ".[data]"``).
- ``hf:NAME[:SPLIT]`` and local ``datasets`` folders are read by :mod:`verimod.data.hf`
  (positions: row numbers over the splits in order).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from verimod.core.errors import InputError, Problem, install_hint
from verimod.data.jsonl import detect_encoding, scan_jsonl

Format = Literal["csv", "tsv", "json", "jsonl", "parquet"]
OnError = Literal["fail", "skip"]
FORMATS: tuple[str, ...] = ("csv", "tsv", "json", "jsonl", "parquet")
_SUFFIX = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def guess_format(path: str | Path) -> Format:
    """The format implied by a file name (``InputError`` when none is)."""
    name = Path(path).name.lower()
    if ".parquet" in name:
        return "parquet"
    for suffix in reversed(Path(name).suffixes):
        if suffix in _SUFFIX:
            return _SUFFIX[suffix]  # type: ignore[return-value]
    raise InputError.at(
        str(path), None, None, f"cannot tell the format from the name; give --format ({', '.join(FORMATS)})"
    )


@dataclass
class LineAccount:
    """Where every physical line of a CSV/TSV file went (complete once the records are consumed):
    ``total == header + records + blank + skipped``."""

    total: int = 0
    header: int = 0
    records: int = 0
    blank: int = 0
    skipped: int = 0

    @property
    def balanced(self) -> bool:
        """True when every line is accounted for."""
        return self.total == self.header + self.records + self.blank + self.skipped


@dataclass
class RecordStream:
    """What :func:`read_records` read: the records (an iterator, consumed once), the encoding used,
    the ``columns`` of the header (CSV/TSV, Parquet; None for JSON and JSONL) and, when
    ``on_error="skip"``, the skipped records' problems (filled while iterating). ``read`` counts
    the records yielded; ``lines`` accounts for every physical line of a CSV/TSV file."""

    path: str
    fmt: Format
    encoding: str | None
    records: Iterator[tuple[int, dict[str, Any]]]
    skipped: list[Problem] = field(default_factory=list)
    columns: list[str] | None = None
    lines: LineAccount | None = None
    read: int = 0

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        for item in self.records:
            self.read += 1
            yield item

    @property
    def skipped_lines(self) -> int:
        """Physical lines given up with the skipped records (one per record outside CSV/TSV)."""
        return self.lines.skipped if self.lines is not None else len(self.skipped)


def _decode(path: str, data: bytes, encoding: str | None) -> tuple[str, str]:
    if encoding in (None, "utf-8", "utf8"):
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            raise InputError.at(path, None, None, "the file is UTF-16 encoded; pass --encoding utf-16 (or auto)")
        try:
            return data.decode("utf-8-sig"), "utf-8"
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            hint = "pass --encoding gb18030 (or auto)" if _decodes(data, "gb18030") else "pass --encoding NAME"
            raise InputError.at(path, line, None, f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); {hint}") from None
    name = encoding
    if encoding == "auto":
        try:
            name = detect_encoding(data)
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise InputError.at(path, line, None, "neither UTF-8 nor GB18030; pass --encoding NAME") from None
    try:
        text = data.decode(name or "utf-8")
    except LookupError:
        raise InputError.at(path, None, None, f"unknown encoding {encoding!r}") from None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError.at(path, line, None, f"not valid {name}: {exc.reason}") from None
    return text.removeprefix("\ufeff"), name or "utf-8"


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
        return True
    except UnicodeDecodeError:
        return False


def _no_field_limit() -> int:
    """The largest field size the csv module accepts on this platform."""
    previous = csv.field_size_limit()
    for limit in (sys.maxsize, 2**31 - 1):
        try:
            csv.field_size_limit(limit)
        except OverflowError:
            continue
        csv.field_size_limit(previous)
        return limit
    return previous


_NO_FIELD_LIMIT = _no_field_limit()


def _next_row(reader: Any) -> list[str]:
    """The next row of a csv reader, with no field-size limit (restored afterwards: the limit is
    the csv module's global state)."""
    previous = csv.field_size_limit(_NO_FIELD_LIMIT)
    try:
        return next(reader)  # type: ignore[no-any-return]
    finally:
        csv.field_size_limit(previous)


def _csv_problem(exc: csv.Error, first: int, last: int) -> str:
    """A readable message for a csv syntax error in the record on lines first–last."""
    span = f"record on lines {first}–{last} ({last - first + 1} lines)" if last > first else f"record on line {first}"
    reason = str(exc)
    if "unexpected end of data" in reason:
        return f"a quote is never closed: the {span} runs to the end of the file"
    if "expected after" in reason:
        return f'text after a closing quote in the {span} (write a quote inside a quoted field as "")'
    return f"malformed {span}: {reason}"


def _is_blank(row: list[str], width: int) -> bool:
    """An empty line, or (in a file of several columns) a line of whitespace only."""
    return not row or (width > 1 and len(row) == 1 and not row[0].strip())


def _delimited(path: str, text: str, delimiter: str, stream: RecordStream, on_error: OnError) -> None:
    """Read the header of a CSV/TSV text into ``stream`` and set its records (see the module
    docstring): physical lines come from ``io.StringIO(newline="")``, the split the csv module uses."""
    lines = io.StringIO(text, newline="").readlines()
    account = stream.lines = LineAccount(total=len(lines))
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    header: list[str] | None = None
    while header is None:
        try:
            row = _next_row(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError.at(
                path,
                account.blank + 1,
                None,
                f"unreadable header: {_csv_problem(exc, account.blank + 1, reader.line_num)}",
            ) from None
        if _is_blank(row, width=2):  # before the header, a line of whitespace is blank too
            account.blank = reader.line_num
        else:
            header = row
    if header is None:
        stream.columns = []
        stream.records = iter(())
        return
    account.header = reader.line_num - account.blank
    if len(set(header)) != len(header):
        duplicated = sorted({h for h in header if header.count(h) > 1})
        raise InputError.at(
            path, reader.line_num, None, f"duplicate column name(s): {', '.join(map(repr, duplicated))}"
        )
    stream.columns = header
    stream.records = _delimited_records(path, reader, header, stream, on_error)


def _delimited_records(
    path: str, reader: Any, header: list[str], stream: RecordStream, on_error: OnError
) -> Iterator[tuple[int, dict[str, Any]]]:
    account = stream.lines
    assert account is not None
    while True:
        first = reader.line_num + 1
        try:
            row = _next_row(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # the whole record is given up, every line of it counted
            last = max(reader.line_num, first)
            account.skipped += last - first + 1
            yield from _problem(stream, on_error, Problem(path, first, None, _csv_problem(exc, first, last)))
            continue
        last = reader.line_num
        if _is_blank(row, len(header)):
            account.blank += last - first + 1
            continue
        if len(row) != len(header):
            account.skipped += last - first + 1
            span = f" (record on lines {first}–{last})" if last > first else ""
            message = f"expected {len(header)} columns, got {len(row)}{span}"
            yield from _problem(stream, on_error, Problem(path, first, None, message))
            continue
        account.records += last - first + 1
        yield first, dict(zip(header, row, strict=True))


def _problem(stream: RecordStream, on_error: OnError, problem: Problem) -> Iterator[tuple[int, dict[str, Any]]]:
    """Raise or record one malformed record (a generator so callers can ``yield from`` it)."""
    if on_error == "fail":
        raise InputError(problem)
    stream.skipped.append(problem)
    yield from ()


def _jsonl(path: str, encoding: str, stream: RecordStream, on_error: OnError) -> Iterator[tuple[int, dict[str, Any]]]:
    """JSON Lines through the streaming reader of :mod:`verimod.data.jsonl`."""
    for line, obj in scan_jsonl(path, encoding):
        if isinstance(obj, InputError):
            yield from _problem(stream, on_error, obj.problem)
        else:
            yield line, obj


def _json(path: str, text: str, stream: RecordStream, on_error: OnError) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError.at(path, exc.lineno, None, f"invalid JSON: {exc.msg}") from None
    if isinstance(data, dict):  # {id: record} (e.g. answer files) becomes records with an "id"
        items = [({"id": key, **value} if isinstance(value, dict) else value) for key, value in data.items()]
    elif isinstance(data, list):
        items = data
    else:
        raise InputError.at(path, None, None, "expected a JSON array of objects (or an object of objects)")
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict):
            yield from _problem(stream, on_error, Problem(path, number, None, f"item {number} is not a JSON object"))
            continue
        yield number, item


def _parquet(path: str, stream: RecordStream) -> None:
    """Open a Parquet file, read its schema into ``stream.columns`` and set its records."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError.at(path, None, None, f"reading Parquet needs pyarrow: {install_hint('data')}") from None
    try:
        table = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError.at(path, None, None, f"not a readable Parquet file: {exc}") from None
    stream.columns = list(table.schema_arrow.names)
    stream.records = _parquet_rows(table)


def _parquet_rows(table: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    number = 0
    for batch in table.iter_batches(batch_size=4096):
        for row in batch.to_pylist():
            number += 1
            yield number, row


def read_records(
    path: str | Path, fmt: Format | None = None, encoding: str | None = None, on_error: OnError = "fail"
) -> RecordStream:
    """Read a tabular file as ``(position, record)`` pairs (see the module docstring)."""
    name = str(path)
    if fmt is None and (name.startswith("hf:") or Path(name).is_dir()):  # a Hugging Face data set
        from verimod.data.hf import table_records

        return RecordStream(name, "parquet", None, table_records(name))
    kind = fmt or guess_format(name)
    if kind not in FORMATS:
        raise InputError.at(name, None, None, f"unknown format {kind!r}; choose one of {', '.join(FORMATS)}")
    if on_error not in ("fail", "skip"):
        raise InputError.at(name, None, None, f"--on-error must be fail or skip, got {on_error!r}")
    if kind == "jsonl" and encoding not in (None, "auto"):
        stream = RecordStream(name, kind, encoding, iter(()))
        stream.records = _jsonl(name, encoding, stream, on_error)
        return stream
    try:
        data = b"" if kind == "parquet" else Path(name).read_bytes()
    except FileNotFoundError:
        raise InputError.at(name, None, None, "file not found") from None
    except IsADirectoryError:
        raise InputError.at(name, None, None, "is a directory, not a file") from None
    if kind == "parquet":
        if not Path(name).is_file():
            raise InputError.at(name, None, None, "file not found")
        stream = RecordStream(name, kind, None, iter(()))
        _parquet(name, stream)
        return stream
    text, used = _decode(name, data, encoding)
    stream = RecordStream(name, kind, used, iter(()))
    if kind in ("csv", "tsv"):
        _delimited(name, text, "," if kind == "csv" else "\t", stream, on_error)
    elif kind == "jsonl":
        del text  # the streaming reader decodes line by line
        stream.records = _jsonl(name, "utf-8-sig" if used.startswith("utf-8") else used, stream, on_error)
    else:
        stream.records = _json(name, text, stream, on_error)
    return stream


def _why_empty(stream: RecordStream) -> str:
    """Why a stream gave no record, in words."""
    if stream.skipped:
        return f"all {len(stream.skipped)} record(s) were malformed and skipped"
    account = stream.lines
    if account is not None:
        if account.total == 0:
            return "the file is empty"
        if account.header and not account.blank:
            return "only a header line"
        if account.header:
            return "only a header and blank lines"
        return "only blank lines"
    if stream.fmt == "json":
        return "no JSON object in the file"
    if stream.fmt == "parquet":
        return "the Parquet file has no rows"
    return "the file is empty or has only blank lines"


def no_records_error(stream: RecordStream) -> InputError:
    """The error of the empty-input rule for a stream that gave no record."""
    return InputError.at(stream.path, None, None, f"no data records ({_why_empty(stream)})")


@dataclass
class Table:
    """Every record of a file (``rows``: ``(position, record)``) and how it was read."""

    stream: RecordStream
    rows: list[tuple[int, dict[str, Any]]]


def read_table(
    path: str | Path, fmt: Format | None = None, encoding: str | None = None, on_error: OnError = "fail"
) -> Table:
    """Every record of ``path`` (see :func:`read_records`); a file without a data record is an
    :class:`InputError` — the empty-input rule of every data command."""
    stream = read_records(path, fmt, encoding, on_error)
    rows = list(stream)
    if not rows:
        raise no_records_error(stream)
    return Table(stream, rows)
