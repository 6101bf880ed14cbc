"""Reading one input file in shards, on the nodes, as ``verimod.data.records.read_records`` reads it whole.

Contract: the records (``(position, record)``, positions as the single-machine reader numbers
them), the skipped records' problems (``--on-error skip``), the first error (``fail``), the
empty-input error and the encoding decisions are those of
:func:`~verimod.data.records.read_table` on the same file — concatenating the shards in order
gives its rows — but no node holds the whole file:

- **JSON Lines** is cut into byte ranges at line ends. A first pass over the ranges (in
  parallel) counts their lines — so every range knows the number of its first line — and checks
  the encoding as the single-machine reader checks the whole file: with ``--encoding auto`` (the
  default) UTF-8 with or without BOM, else GB18030 when every byte of the file decodes as it
  (no range boundary can split a character of either: a line end, 0x0A, is never part of a
  multi-byte sequence), else the same one-line error at the same line. Each range is then
  decoded line by line with the codec the single-machine reader would use.
- **A folder of parts** written by a ``--ray`` command (``part-00000.jsonl`` … and nothing
  else) is read as their concatenation — the file the single-machine command would have
  written — line numbers running on across the parts, so commands chain on the cluster.
- **Parquet** is cut at row-group boundaries; row numbers continue across groups.
- Any other input (CSV, TSV, JSON, UTF-16 or another codec that cannot be decoded line by
  line, Hugging Face folders) cannot be cut without reading it: one task reads it with the
  single-machine reader and hands it on in shards. That task's node holds the file once —
  convert such inputs to JSON Lines or Parquet to read them in shards.

A shard is a list of ``(position, record)`` in the object store; :class:`ShardedInput` keeps
the references and what the driver needs (counts, problems). The first error in file order
wins: a malformed record or undecodable line anywhere beats a problem that a command finds
later in a record's fields, as with the single-machine reader, which reads everything first.
"""

from __future__ import annotations

import codecs
import itertools
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from verimod.core.errors import InputError, Problem
from verimod.data.jsonl import _decode_json_object, _open_binary, _undecodable
from verimod.data.records import FORMATS, Format, OnError, RecordStream, guess_format, no_records_error, read_records
from verimod.distributed.cluster import fetch, submit

Rows = list[tuple[int, dict[str, Any]]]

#: Default size of a shard of JSON Lines (bytes) or Parquet (uncompressed row-group bytes).
SHARD_BYTES = 32 << 20
#: Codecs that the single-machine reader decodes line by line (``verimod.data.jsonl.read_lines``).
_UTF8_NAMES = {"utf-8", "utf8", "utf-8-sig", "utf_8", "utf_8_sig"}
_LINE_CODECS = ("gb18030", "gbk", "gb2312", "big5")
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


@dataclass(frozen=True)
class Piece:
    """One shard to read: bytes [start, stop) of the JSONL file ``path`` whose first line is
    number ``first + 1`` of the input, or row groups [start, stop) of a Parquet file whose first
    row is ``first + 1``."""

    kind: Literal["jsonl", "parquet"]
    path: str
    start: int
    stop: int
    first: int


@dataclass(frozen=True)
class ShardInfo:
    """What reading one shard found: its record count, the skipped records' problems and the
    lines they spanned, and the error that stopped it (None when it read to its end)."""

    rows: int
    skipped: list[Problem]
    skipped_lines: int
    fatal: Problem | None = None


@dataclass
class ShardedInput:
    """An input file read in shards: ``shards[k]`` is the ObjectRef of shard k's rows,
    ``offsets[k]`` the index of its first record among all records."""

    path: str
    fmt: str
    shards: list[Any]
    infos: list[ShardInfo]
    offsets: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.offsets = [0]
        for info in self.infos[:-1]:
            self.offsets.append(self.offsets[-1] + info.rows)

    @property
    def n(self) -> int:
        """The number of records read."""
        return sum(info.rows for info in self.infos)

    @property
    def skipped(self) -> list[Problem]:
        """Every skipped record's problem, in file order."""
        return [problem for info in self.infos for problem in info.skipped]

    @property
    def skipped_lines(self) -> int:
        return sum(info.skipped_lines for info in self.infos)

    def counts(self) -> dict[str, int]:
        """The report keys every data command adds (as ``Loaded.counts``)."""
        return {"skipped_rows": len(self.skipped), "skipped_lines": self.skipped_lines}


# ---------------------------------------------------------------------------------------------
# JSON Lines


@dataclass(frozen=True)
class _Scan:
    """One byte range: its line ends, and where (if anywhere) it stops being UTF-8 / GB18030."""

    newlines: int
    utf8_error_line: int | None  # the line (1-based, within the range) of the first byte that is not UTF-8
    utf8_byte: int
    gb18030_ok: bool


def _read_range(path: str, start: int, stop: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(start)
        return handle.read(stop - start)


def _scan_range(path: str, start: int, stop: int, first: bool) -> _Scan:
    """Count the line ends of bytes [start, stop) and test them as UTF-8 (a leading BOM of the
    input aside: ``first``) and as GB18030."""
    data = _read_range(path, start, stop)
    skip = 3 if first and data.startswith(codecs.BOM_UTF8) else 0
    line, byte = None, 0
    try:
        data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start + skip
        line, byte = data.count(b"\n", 0, at) + 1, data[at]
    try:
        data.decode("gb18030")
        gb18030 = True
    except UnicodeDecodeError:
        gb18030 = False
    return _Scan(data.count(b"\n"), line, byte, gb18030)


def _cuts(path: str, size: int, shard_bytes: int) -> list[int]:
    """Byte offsets 0 = c_0 < c_1 < … < c_k = size, each inner one just after a line end."""
    cuts = [0]
    with open(path, "rb") as handle:
        for target in range(shard_bytes, size, shard_bytes):
            if target <= cuts[-1]:
                continue
            handle.seek(target - 1)
            while True:  # to just after the first line end at or after target - 1
                chunk = handle.read(1 << 16)
                if not chunk:
                    break
                found = chunk.find(b"\n")
                if found >= 0:
                    handle.seek(handle.tell() - len(chunk) + found + 1)
                    break
            if handle.tell() >= size:
                break
            cuts.append(handle.tell())
    cuts.append(size)
    return cuts


def _line_codec(path: str, encoding: str | None, scans: list[_Scan], head: bytes) -> str | None:
    """The codec the single-machine reader decodes each line with, None when it does not read
    the file line by line (it is then read whole), or the :class:`InputError` it raises for the
    file's encoding (``verimod.data.records._decode``, ``verimod.data.jsonl.read_lines``)."""
    if encoding not in (None, "auto"):  # a named codec: read_lines decodes and checks each line
        name = encoding.lower()
        if name in _UTF8_NAMES:
            if head[:2] in _UTF16_BOMS:
                raise InputError.at(
                    path, None, None, "the file is UTF-16 encoded; convert it to UTF-8 or pass --encoding utf-16"
                )
            return name
        return name if codecs.lookup(name).name in _LINE_CODECS else None
    if head.startswith(_UTF16_BOMS):
        if encoding is None:
            raise InputError.at(path, None, None, "the file is UTF-16 encoded; pass --encoding utf-16 (or auto)")
        return None
    lines_before, first_error = 0, None
    for scan in scans:
        if scan.utf8_error_line is not None and first_error is None:
            first_error = (lines_before + scan.utf8_error_line, scan.utf8_byte)
        lines_before += scan.newlines
    if first_error is None:
        return "utf-8-sig"
    line, byte = first_error
    gb18030 = all(scan.gb18030_ok for scan in scans)
    if encoding is None:
        hint = "pass --encoding gb18030 (or auto)" if gb18030 else "pass --encoding NAME"
        raise InputError.at(path, line, None, f"not valid UTF-8 (byte 0x{byte:02x}); {hint}")
    if head.startswith(codecs.BOM_UTF8):
        return None  # a UTF-8 BOM on bytes that are not UTF-8: the reader's own error, read whole
    if gb18030:
        return "gb18030"
    raise InputError.at(path, line, None, "neither UTF-8 nor GB18030; pass --encoding NAME")


def _lines(data: bytes) -> list[bytes]:
    """``data`` split after each b"\\n" only, as iterating a binary file splits it."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _read_jsonl_range(path: str, piece: Piece, codec: str, on_error: OnError) -> tuple[Rows, ShardInfo]:
    """The records of one byte range, as ``read_lines`` and ``scan_jsonl`` give them (problems
    name the input ``path``)."""
    rows: Rows = []
    skipped: list[Problem] = []
    number = piece.first
    for raw in _lines(_read_range(piece.path, piece.start, piece.stop)):
        number += 1
        if number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[3:]
        try:
            text = raw.decode(codec).rstrip("\r\n")
        except UnicodeDecodeError as exc:
            return rows, ShardInfo(
                len(rows), skipped, len(skipped), _undecodable(path, number, raw, exc, codec).problem
            )
        if not text.strip():
            continue
        try:
            rows.append((number, _decode_json_object(text, path, number)))
        except InputError as exc:
            if on_error == "fail":
                return rows, ShardInfo(len(rows), skipped, len(skipped), exc.problem)
            skipped.append(exc.problem)
    return rows, ShardInfo(len(rows), skipped, len(skipped))


# ---------------------------------------------------------------------------------------------
# Parquet and whole-file reading


def _read_parquet_groups(piece: Piece) -> tuple[Rows, ShardInfo]:
    import pyarrow.parquet as pq

    table = pq.ParquetFile(piece.path)
    rows: Rows = []
    number = piece.first
    for batch in table.iter_batches(batch_size=4096, row_groups=list(range(piece.start, piece.stop))):
        for row in batch.to_pylist():
            number += 1
            rows.append((number, row))
    return rows, ShardInfo(len(rows), [], 0)


def _parquet_pieces(path: str, shard_bytes: int) -> list[Piece]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError.at(path, None, None, 'reading Parquet needs pyarrow: pip install "verimod[data]"') from None
    if not Path(path).is_file():
        raise InputError.at(path, None, None, "file not found")
    try:
        metadata = pq.ParquetFile(path).metadata
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError.at(path, None, None, f"not a readable Parquet file: {exc}") from None
    pieces: list[Piece] = []
    start, rows_before, group_bytes, group_rows = 0, 0, 0, 0
    for group in range(metadata.num_row_groups):
        info = metadata.row_group(group)
        group_bytes += info.total_byte_size
        group_rows += info.num_rows
        if group_bytes >= shard_bytes or group == metadata.num_row_groups - 1:
            pieces.append(Piece("parquet", path, start, group + 1, rows_before))
            start, rows_before, group_bytes, group_rows = group + 1, rows_before + group_rows, 0, 0
    return pieces


def _read_whole(path: str, fmt: Format | None, encoding: str | None, on_error: OnError) -> tuple[Rows, ShardInfo]:
    """The single-machine reader (``read_table``: the empty-input rule included) on one node."""
    try:
        stream = read_records(path, fmt, encoding, on_error)
        rows = list(stream)
        if not rows:
            raise no_records_error(stream)
    except InputError as exc:
        return [], ShardInfo(0, [], 0, exc.problem)
    return rows, ShardInfo(len(rows), list(stream.skipped), stream.skipped_lines)


def _slice(rows: Rows, start: int, stop: int) -> Rows:
    return rows[start:stop]


# ---------------------------------------------------------------------------------------------
# The driver's side


def _jsonl_plan(name: str, files: list[str], encoding: str | None, shard_bytes: int) -> tuple[list[Piece], str | None]:
    """The byte ranges of JSON Lines ``files`` read as one input, and the codec to decode their
    lines with (None: the input must be read whole)."""
    ranges: list[tuple[str, int, int]] = []
    for k, path in enumerate(files):
        with _open_binary(path) as handle:  # the single-machine reader's errors for a missing file
            if k == 0:
                head = handle.read(4)
            size = os.fstat(handle.fileno()).st_size
        ranges += [(path, a, b) for a, b in itertools.pairwise(_cuts(path, size, shard_bytes))]
    scans: list[_Scan] = fetch([submit(_scan_range, path, a, b, k == 0) for k, (path, a, b) in enumerate(ranges)])
    codec = _line_codec(name, encoding, scans, head)
    pieces, lines = [], 0
    for (path, a, b), scan in zip(ranges, scans, strict=True):
        pieces.append(Piece("jsonl", path, a, b, lines))
        lines += scan.newlines
    return pieces, codec


def parts_of(folder: str) -> list[str] | None:
    """The ``part-NNNNN.jsonl`` files of a folder written by a ``--ray`` command, in order, when
    that is all the folder holds (hidden files aside); else None."""
    path = Path(folder)
    if not path.is_dir():
        return None
    entries = [entry for entry in sorted(path.iterdir()) if not entry.name.startswith(".")]
    if not entries or not all(re.fullmatch(r"part-\d{5,}\.jsonl", entry.name) for entry in entries):
        return None
    return [str(entry) for entry in entries]


def read_sharded(
    path: str | Path,
    fmt: Format | None = None,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    shard_bytes: int = SHARD_BYTES,
) -> ShardedInput:
    """Read ``path`` in shards on the cluster (module docstring); ``encoding`` as ``verimod data``
    takes it (``"auto"``, a codec name, or ``"utf-8"`` / None for UTF-8). Raises the
    :class:`InputError` the single-machine reader raises — the first in file order — including
    the empty-input error."""
    name = str(path)
    encoding = None if encoding == "utf-8" else encoding
    parts = parts_of(name) if fmt in (None, "jsonl") else None
    if parts is None and fmt is None and (name.startswith("hf:") or Path(name).is_dir()):
        return _whole(name, fmt, encoding, on_error, shard_bytes)
    kind = "jsonl" if parts else fmt or guess_format(name)
    if kind not in FORMATS:
        raise InputError.at(name, None, None, f"unknown format {kind!r}; choose one of {', '.join(FORMATS)}")
    if kind == "jsonl":
        pieces, codec = _jsonl_plan(name, parts or [name], encoding, shard_bytes)
        if codec is None:
            return _whole(name, fmt, encoding, on_error, shard_bytes)
        results = [submit(_read_jsonl_range, name, piece, codec, on_error, num_returns=2) for piece in pieces]
    elif kind == "parquet":
        results = [submit(_read_parquet_groups, piece, num_returns=2) for piece in _parquet_pieces(name, shard_bytes)]
    else:
        return _whole(name, fmt, encoding, on_error, shard_bytes)
    infos: list[ShardInfo] = fetch([info for _, info in results])
    for info in infos:
        if info.fatal is not None:
            raise InputError(info.fatal)
    sharded = ShardedInput(name, kind, [rows for rows, _ in results], infos)
    if sharded.n == 0:
        stream = RecordStream(name, kind, None, iter(()))
        stream.skipped = sharded.skipped
        raise no_records_error(stream)
    return sharded


def _whole(name: str, fmt: Format | None, encoding: str | None, on_error: OnError, shard_bytes: int) -> ShardedInput:
    """One task reads the file; its rows are handed on in shards of about ``shard_bytes`` of
    input each."""
    rows, result = submit(_read_whole, name, fmt, encoding, on_error, num_returns=2)
    info: ShardInfo = fetch(result)
    if info.fatal is not None:
        raise InputError(info.fatal)
    size = os.path.getsize(name) if Path(name).is_file() else 0
    per_shard = max(1, math.ceil(info.rows * shard_bytes / size)) if size else info.rows
    starts = list(range(0, info.rows, per_shard))
    shards = [submit(_slice, rows, start, start + per_shard) for start in starts]
    infos = [ShardInfo(min(per_shard, info.rows - start), [], 0) for start in starts]
    infos[0] = ShardInfo(infos[0].rows, info.skipped, info.skipped_lines)
    return ShardedInput(name, fmt or guess_format(name) if Path(name).is_file() else "parquet", shards, infos)


__all__ = ["SHARD_BYTES", "Piece", "ShardInfo", "ShardedInput", "read_sharded"]
