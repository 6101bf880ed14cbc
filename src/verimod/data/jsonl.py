"""JSON Lines reading and writing with exact, one-line error reports.

Contract of :func:`read_jsonl`:
- yields ``(line_number, object)`` for every non-blank line, line numbers 1-based;
- UTF-8 with or without a byte-order mark is read by default; any other encoding must be
  named (``encoding="gb18030"``) or detected (``encoding="auto"``: UTF-8, UTF-16 by its BOM,
  or GB18030 when the whole file decodes as it); undecodable bytes raise :class:`InputError`
  naming the line and, when the line decodes as GB18030, suggesting ``--encoding gb18030``;
- a line that is not a JSON object (broken JSON, NaN/Infinity, an array) raises
  :class:`InputError` naming the line; nothing is skipped except blank lines.

:func:`write_jsonl` writes UTF-8 atomically (temporary file, then rename) with the mode an
ordinary ``open(path, "w")`` would give: ``0o666`` less the user's umask for a new file (0644
by default), the existing mode when a file is replaced. Lone surrogates,
which can occur in model outputs, are written as JSON ``\\ud800``-style escapes so that every file
written is valid UTF-8 and reads back to the same strings.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from verimod.core.errors import InputError, shown

_UTF8_NAMES = {"utf-8", "utf8", "utf-8-sig", "utf_8", "utf_8_sig"}


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _decode_json_object(text: str, path: str, line: int) -> dict[str, Any]:
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError.at(path, line, None, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise InputError.at(path, line, None, f"invalid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise InputError.at(path, line, None, f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _undecodable(path: str, line: int, raw: bytes, exc: UnicodeDecodeError, encoding: str) -> InputError:
    hint = ""
    if encoding.lower() in _UTF8_NAMES:
        try:
            raw.decode("gb18030")
            hint = "; it decodes as GB18030 (GBK): pass --encoding gb18030"
        except UnicodeDecodeError:
            hint = "; pass --encoding NAME if the file uses another encoding"
    bad = raw[exc.start : exc.start + 1].hex()
    return InputError.at(
        path, line, None, f"not valid {encoding} (byte 0x{bad} at byte offset {exc.start} of the line){hint}"
    )


def detect_encoding(data: bytes) -> str:
    """``utf-8-sig`` / ``utf-16`` (by BOM), ``utf-8`` or ``gb18030`` (by a strict decode of all the
    bytes); raises ``UnicodeDecodeError`` from the UTF-8 attempt when neither decodes."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    try:
        data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as utf8_error:
        try:
            data.decode("gb18030")
            return "gb18030"
        except UnicodeDecodeError:
            raise utf8_error from None


def _open_binary(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError.at(path, None, None, "file not found") from None
    except IsADirectoryError:
        raise InputError.at(path, None, None, "is a directory, not a file") from None
    except PermissionError:
        raise InputError.at(path, None, None, "permission denied") from None


def read_lines(path: str | Path, encoding: str | None = None) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for every line of a text file (``"-"`` is stdin).

    Lines keep no trailing newline. See the module docstring for the encoding contract.
    """
    name = str(path)
    enc = (encoding or "utf-8").lower()
    stream = _open_binary(name)
    if enc == "auto":
        data = stream.read()
        if stream is not sys.stdin.buffer:
            stream.close()
        try:
            enc = detect_encoding(data)
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise InputError.at(name, line, None, "neither UTF-8 nor GB18030; pass --encoding NAME") from None
        stream = io.BufferedReader(io.BytesIO(data))  # type: ignore[arg-type]
    try:
        head = stream.peek(4)[:4] if hasattr(stream, "peek") else b""
        if enc in _UTF8_NAMES and head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
            raise InputError.at(
                name, None, None, "the file is UTF-16 encoded; convert it to UTF-8 or pass --encoding utf-16"
            )
        decode_line = enc in _UTF8_NAMES or codecs.lookup(enc).name in ("gb18030", "gbk", "gb2312", "big5")
        if decode_line:
            for number, raw in enumerate(stream, 1):
                if number == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[3:]
                try:
                    text = raw.decode(enc)
                except UnicodeDecodeError as exc:
                    raise _undecodable(name, number, raw, exc, enc) from None
                yield number, text.rstrip("\r\n")
        else:
            reader = codecs.getreader(enc)(stream)
            number = 0
            while True:
                try:
                    text = reader.readline()
                except UnicodeDecodeError as exc:
                    raise InputError.at(name, number + 1, None, f"not valid {enc}: {exc.reason}") from None
                if not text:
                    break
                number += 1
                if number == 1:
                    text = text.lstrip("\ufeff")
                yield number, text.rstrip("\r\n")
    except LookupError:
        raise InputError.at(name, None, None, f"unknown encoding {shown(encoding)}") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def scan_jsonl(path: str | Path, encoding: str | None = None) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """Like :func:`read_jsonl`, but a line that is not a JSON object is yielded as its
    :class:`InputError` instead of raised, so a validator can report every bad line.
    Encoding problems still raise: the rest of the file cannot be trusted."""
    name = str(path)
    for number, text in read_lines(path, encoding):
        if text.strip():
            try:
                yield number, _decode_json_object(text, name, number)
            except InputError as exc:
                yield number, exc


def read_jsonl(path: str | Path, encoding: str | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for every non-blank line of a JSON Lines file."""
    for number, obj in scan_jsonl(path, encoding):
        if isinstance(obj, InputError):
            raise obj
        yield number, obj


def dumps_line(obj: Any) -> bytes:
    """One JSON line as UTF-8 bytes (lone surrogates written as ``\\ud800``-style escapes)."""
    return (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")


def current_umask() -> int:
    """The process umask (read from /proc where there is one; set and restored otherwise)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _file_mode(target: Path) -> int:
    """The permission bits a plain ``open(target, "w")`` would leave: the existing file's, or
    0o666 less the umask for a new one."""
    try:
        return target.stat().st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~current_umask()


def atomic_write(path: str | Path, chunks: Iterable[bytes], durable: bool = False) -> None:
    """Write ``chunks`` to ``path`` through a temporary file and a rename: readers never see
    a half-written file, and a crash leaves the previous version in place. The file gets the
    mode of :func:`_file_mode` (not the 0600 of the temporary file). ``durable``: the file is
    fsync'd before the rename (and the folder after it), so a power cut leaves the old or the
    new version, never an empty file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        if hasattr(os, "fchmod"):  # POSIX
            os.fchmod(fd, _file_mode(target))
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(tmp, target)
        if durable:
            fsync_folder(target.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where a folder cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_jsonl(path: str | Path, rows: Iterable[Any], durable: bool = False) -> int:
    """Write ``rows`` as JSON Lines to ``path`` atomically (``durable``: see :func:`atomic_write`);
    return the number of rows written."""
    count = 0

    def lines() -> Iterator[bytes]:
        nonlocal count
        for row in rows:
            count += 1
            yield dumps_line(row)

    atomic_write(path, lines(), durable)
    return count


def write_json(path: str | Path, obj: Any, durable: bool = False) -> None:
    """Write one JSON document (indented, UTF-8) to ``path`` atomically (``durable``: see
    :func:`atomic_write`)."""
    text = json.dumps(obj, ensure_ascii=False, indent=2) + "\n"
    atomic_write(path, [text.encode("utf-8", "backslashreplace")], durable)
