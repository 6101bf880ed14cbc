"""Options and helpers shared by the ``verimod data`` commands.

Every option is checked while the command line is parsed — types, ranges, choices, encoding
names, thread counts — so a bad value is one line and exit code 2 before any file is read.
Inputs are read with :func:`verimod.data.records.read_table`: the empty-input rule (a file with
no data record is an error) holds for every data command.
"""

from __future__ import annotations

import codecs
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from verimod.core.errors import InputError, Problem, one_line
from verimod.data.jsonl import write_json
from verimod.data.records import FORMATS, Format, OnError, read_table


def check_encoding(value: str | None) -> str | None:
    """``auto``, None or a codec Python knows (a typer callback: a bad name is a usage error)."""
    if value is None or value == "auto":
        return value
    try:
        codecs.lookup(value)
    except LookupError:
        raise typer.BadParameter(f"unknown encoding {value!r}; give auto or a codec name such as gb18030") from None
    return value


def check_workers(value: int) -> int:
    """A thread count for RapidFuzz: ≥ 1, or -1 for every core."""
    if value == 0 or value < -1:
        raise typer.BadParameter(f"give a number of threads ≥ 1, or -1 for every core; got {value}")
    return value


TextField = Annotated[str, typer.Option("--text-field", help="The column or key holding the text.")]
Threshold = Annotated[
    float, typer.Option(min=0.0, max=100.0, help="Near-duplicate threshold: RapidFuzz fuzz.ratio ≥ this (0–100).")
]
FormatOpt = Annotated[
    Literal["csv", "tsv", "json", "jsonl", "parquet"] | None,
    typer.Option("--format", help=f"Input format ({', '.join(FORMATS)}); default: from the file name."),
]
EncodingOpt = Annotated[
    str,
    typer.Option(
        "--encoding",
        callback=check_encoding,
        help="Input encoding: auto (UTF-8, UTF-16 or GB18030 detected) or a codec name.",
    ),
]
OnErrorOpt = Annotated[
    Literal["fail", "skip"],
    typer.Option("--on-error", help="Malformed rows: fail (exit 2) or skip (each reported, lines counted)."),
]
WorkersOpt = Annotated[
    int,
    typer.Option(
        callback=check_workers,
        help="Threads RapidFuzz uses to verify candidate pairs (-1: every core); the filters run in one.",
    ),
]
ReportOpt = Annotated[str | None, typer.Option("--report", help="Write the report as JSON ('-': stdout).")]
SeedOpt = Annotated[int, typer.Option(min=0, help="Seed (≥ 0); the same seed gives the same result.")]


@dataclass(frozen=True)
class Loaded:
    """The records of an input file (``rows``: ``(line, record)``) and what was skipped."""

    rows: list[tuple[int, dict[str, Any]]]
    skipped: int
    skipped_lines: int

    def counts(self) -> dict[str, int]:
        """The report keys every data command adds."""
        return {"skipped_rows": self.skipped, "skipped_lines": self.skipped_lines}


def load_table(path: Path, fmt: Format | None, encoding: str, on_error: OnError) -> Loaded:
    """Every record of a tabular file, each skipped one reported on stderr; a file without a
    data record is an :class:`InputError` (the empty-input rule)."""
    table = read_table(path, fmt, None if encoding == "utf-8" else encoding, on_error)
    stream = table.stream
    echo_skipped(path, stream.skipped, stream.skipped_lines)
    return Loaded(table.rows, len(stream.skipped), stream.skipped_lines)


def echo_skipped(path: Path, skipped: Sequence[Problem], skipped_lines: int) -> None:
    """Each skipped record's problem on stderr, then how many records and lines were skipped."""
    for problem in skipped:
        typer.echo(f"skipped: {one_line(str(problem))}", err=True)
    if skipped:
        typer.echo(f"skipped {len(skipped)} malformed record(s) of {path} ({skipped_lines} line(s))", err=True)


def texts_of(path: Path, rows: Sequence[tuple[int, dict[str, Any]]], field: str) -> list[str]:
    """The text of every record; a missing or non-string text is an error naming its line."""
    texts = []
    for line, row in rows:
        value = row.get(field)
        if not isinstance(value, str):
            what = "missing" if value is None else f"not a string ({type(value).__name__})"
            raise InputError.at(str(path), line, field, f"{what}; choose the text column with --text-field")
        texts.append(value)
    return texts


def format_score(score: float) -> str:
    """A fuzz.ratio score with one decimal, or as many as it takes not to show a score below 100
    as 100.0 (a pair of long texts one edit apart scores 99.99…).

    >>> format_score(92.30769), format_score(100.0), format_score(99.99999)
    ('92.3', '100.0', '99.99999')
    """
    for digits in range(1, 18):
        text = f"{score:.{digits}f}"
        if score >= 100 or float(text) < 100:
            return text
    return repr(score)


def emit_report(report: dict[str, Any], target: str | None) -> None:
    """Write a report as JSON to ``target`` (a file, or stdout for ``-``; nothing for None)."""
    if target == "-":
        sys.stdout.write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    elif target:
        write_json(target, report)
