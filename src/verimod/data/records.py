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
- Malformed records — a CSV row with the wrong number of columns, a JSONL line that is not a
  JSON object, a JSON item that is not an object — raise :class:`InputError` naming file and
  line (``on_error="fail"``, the default), or are skipped and counted in ``skipped`` with
  their problem (``on_error="skip"``): nothing disappears without being counted.
- Parquet needs the optional ``pyarrow`` (``pip install "verimod[data]"``).
- ``hf:NAME[:SPLIT]`` and local ``datasets`` folders are read by :mod:`verimod.data.hf`
  (positions: row numbers over the splits in order).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from verimod.core.errors import InputError, Problem
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
class RecordStream:
    """What :func:`read_records` read: the records (an iterator, consumed once), the encoding used
    and, when ``on_error="skip"``, the skipped records' problems (filled while iterating)."""

    path: str
    fmt: Format
    encoding: str | None
    records: Iterator[tuple[int, dict[str, Any]]]
    skipped: list[Problem] = field(default_factory=list)

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return self.records


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


def _delimited(
    path: str, text: str, delimiter: str, stream: RecordStream, on_error: OnError
) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise InputError.at(path, 1, None, f"unreadable header: {exc}") from None
    if len(set(header)) != len(header):
        duplicated = sorted({h for h in header if header.count(h) > 1})
        raise InputError.at(path, 1, None, f"duplicate column name(s): {', '.join(map(repr, duplicated))}")
    start = reader.line_num + 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield from _problem(stream, on_error, Problem(path, start, None, f"malformed row: {exc}"))
            start = reader.line_num + 1
            continue
        line, start = start, reader.line_num + 1
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != len(header):
            message = f"expected {len(header)} columns, got {len(row)}"
            yield from _problem(stream, on_error, Problem(path, line, None, message))
            continue
        yield line, dict(zip(header, row, strict=True))


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


def _parquet(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError.at(path, None, None, 'reading Parquet needs pyarrow: pip install "verimod[data]"') from None
    try:
        table = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError.at(path, None, None, f"not a readable Parquet file: {exc}") from None
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
        return RecordStream(name, kind, None, _parquet(name))
    text, used = _decode(name, data, encoding)
    stream = RecordStream(name, kind, used, iter(()))
    if kind in ("csv", "tsv"):
        stream.records = _delimited(name, text, "," if kind == "csv" else "\t", stream, on_error)
    elif kind == "jsonl":
        del text  # the streaming reader decodes line by line
        stream.records = _jsonl(name, "utf-8-sig" if used.startswith("utf-8") else used, stream, on_error)
    else:
        stream.records = _json(name, text, stream, on_error)
    return stream
