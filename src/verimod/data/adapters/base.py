"""What every data-set adapter shares: the result it returns and a builder that counts.

Counting contract (checked by the tests of every adapter):

- ``read``: source rows seen, malformed ones included;
- ``candidates``: the records those rows could give (one per row; two per JADE row);
- ``converted + sum(skipped.values()) == candidates``: a record is either converted or
  skipped under a named reason — nothing disappears without being counted;
- ``problems``: the position (file, line, field) of every record skipped as malformed or
  invalid with ``on_error="skip"``; with ``on_error="fail"`` the first one raises
  :class:`~verimod.core.errors.InputError` instead.

Input contract of :meth:`Builder.rows`: a fixed-schema adapter names its ``columns``; they are
checked against the file's *header* (CSV/TSV header row, Parquet schema) before any row is
read — so a file of another format is refused even with no data row — or, for JSON/JSONL, which
have no header, against the first record. A main file without a data record is an
:class:`~verimod.core.errors.InputError` (the empty-input rule of every data command).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verimod.core.errors import InputError, Problem
from verimod.core.registry import Registry
from verimod.core.validation import validation_problems
from verimod.data.records import Format, OnError, RecordStream, no_records_error, read_records
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.schema import VarmReference

#: A check of a file's column names (raises :class:`InputError` naming what is missing).
HeaderCheck = Callable[[Collection[str]], None]

#: An adapter: ``adapter(path, *, encoding=..., on_error=..., **options) -> ConversionResult``.
Adapter = Callable[..., "ConversionResult"]

#: The data adapters by name; each adapter module registers itself with ``@adapters.register``.
adapters: Registry[Adapter] = Registry("data adapter")

#: Reasons shared by all adapters (adapters add their own).
MALFORMED = "malformed row"
INVALID = "invalid value"
DUPLICATE = "duplicate id"
EMPTY_TEXT = "empty text"


@dataclass
class ConversionResult:
    """The references an adapter made from a public data set, with exact counts and notes.

    ``notes`` state the mapping (which fields are annotated, which derived) and anything
    noteworthy seen in the files; ``conflicts`` every place where the source's convention
    differs from the VARM codebook's (the source value is kept, never relabelled, with a count);
    :meth:`field_counts` says how many records carry each field.
    """

    source: str
    paths: list[str] = field(default_factory=list)
    references: list[VarmReference] = field(default_factory=list)
    read: int = 0
    candidates: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    encoding: str | None = None
    conflicts: list[str] = field(default_factory=list)

    @property
    def converted(self) -> int:
        """Number of references made."""
        return len(self.references)

    def field_counts(self) -> dict[str, dict[str, int]]:
        """``{field: {"set": n, "derived": m}}`` for the record fields set on any reference."""
        counts: dict[str, dict[str, int]] = {}
        for name in FIELDS:
            present = [r for r in self.references if getattr(r, name) is not None]
            if present:
                derived = sum(1 for r in present if name in (r.meta or {}).get("derived", ()))
                counts[name] = {"set": len(present), "derived": derived}
        return counts

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary (what ``verimod data convert --json`` should print)."""
        return {
            "source": self.source,
            "paths": self.paths,
            "encoding": self.encoding,
            "read": self.read,
            "candidates": self.candidates,
            "converted": self.converted,
            "skipped": dict(sorted(self.skipped.items())),
            "problems": [str(p) for p in self.problems],
            "fields": self.field_counts(),
            "notes": self.notes,
            "conflicts": self.conflicts,
        }


class Builder:
    """Collects references and counts for one conversion (used by every adapter)."""

    def __init__(self, source: str, on_error: OnError, notes: Iterable[str] = ()) -> None:
        if on_error not in ("fail", "skip"):
            raise InputError.at("--on-error", None, None, f"must be fail or skip, got {on_error!r}")
        self.result = ConversionResult(source, notes=list(notes))
        self.on_error: OnError = on_error
        self._skipped: Counter[str] = Counter()
        self._ids: set[str] = set()
        #: The column names of the main file (its header, or the keys of its first record).
        self.columns: list[str] = []

    def rows(
        self,
        path: str | Path,
        encoding: str | None,
        fmt: Format | None = None,
        per_row: int = 1,
        check: HeaderCheck | None = None,
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """The rows of the main input file, counted as read; malformed rows (``on_error="skip"``)
        are counted as ``per_row`` skipped records each once the file is exhausted. ``check``
        runs on the header before the first row (see the module docstring); a file without a
        data record raises :class:`InputError`."""
        stream = read_records(path, fmt=fmt, encoding=encoding, on_error=self.on_error)
        self.result.paths.append(str(path))
        self.result.encoding = stream.encoding
        self._header(stream, check)
        for line, record in stream:
            if stream.columns is None and stream.read == 1:  # JSON/JSONL: the first record is the schema
                self.columns = list(record)
                if check is not None:
                    check(record)
            self.result.read += 1
            self.result.candidates += per_row
            yield line, record
        malformed = len(stream.skipped)
        self.result.read += malformed
        self.result.candidates += malformed * per_row
        self.skip(MALFORMED, malformed * per_row)
        self.result.problems.extend(stream.skipped)
        if not stream.read:
            raise no_records_error(stream)

    def _header(self, stream: RecordStream, check: HeaderCheck | None) -> None:
        if stream.columns is not None:
            self.columns = list(stream.columns)
            if check is not None and (stream.columns or stream.fmt == "parquet"):  # no header: the empty-input rule
                check(stream.columns)

    def side_rows(
        self, path: str | Path, encoding: str | None, check: HeaderCheck | None = None
    ) -> list[tuple[int, dict[str, Any]]]:
        """All rows of an auxiliary file (parent posts, answers): not counted as candidates;
        malformed rows there fail or are kept as problems with a note, per ``on_error``;
        ``check`` runs on its header as in :meth:`rows`."""
        stream = read_records(path, encoding=encoding, on_error=self.on_error)
        if stream.columns is not None and check is not None:
            check(stream.columns)
        rows = list(stream)
        if rows and stream.columns is None and check is not None:
            check(rows[0][1])
        self.result.paths.append(str(path))
        if stream.skipped:
            self.result.problems.extend(stream.skipped)
            self.note(f"{Path(path).name}: {len(stream.skipped)} malformed row(s) skipped")
        return rows

    def skip(self, reason: str, count: int = 1) -> None:
        """Count ``count`` records skipped for ``reason``."""
        if count:
            self._skipped[reason] += count

    def invalid(
        self, path: str, line: int | None, name: str | None, message: str, count: int = 1, reason: str = INVALID
    ) -> None:
        """A bad value: raise (``on_error="fail"``) or keep the problem and skip ``count`` records."""
        problem = Problem(path, line, name, message)
        if self.on_error == "fail":
            raise InputError(problem)
        self.result.problems.append(problem)
        self.skip(reason, count)

    def note(self, text: str) -> None:
        """Add a note to the result."""
        self.result.notes.append(text)

    def conflict(self, text: str) -> None:
        """Report a convention conflict (the source value was kept)."""
        self.result.conflicts.append(text)

    def add(self, path: str, line: int, data: dict[str, Any]) -> bool:
        """Validate ``data`` as a :class:`VarmReference` and keep it (False when it was refused)."""
        try:
            reference = VarmReference.model_validate(data)
        except ValidationError as exc:
            problem = validation_problems(exc, VarmReference, path, line)[0]
            self.invalid(path, line, problem.field, problem.message)
            return False
        if reference.id in self._ids:
            self.invalid(path, line, "id", f"duplicate id {reference.id!r}", reason=DUPLICATE)
            return False
        self._ids.add(reference.id)
        self.result.references.append(reference)
        return True

    def finish(self) -> ConversionResult:
        """The result, with the skipped counts filled in."""
        self.result.skipped = dict(sorted(self._skipped.items()))
        return self.result


def clean_text(value: object) -> str | None:
    """A cell as text with outer whitespace removed; None when absent or blank."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    text = text.strip()
    return text or None


def make_meta(source: str, derived: Sequence[str], original: Mapping[str, Any]) -> dict[str, Any]:
    """``meta`` of a converted record: source name, derived fields (anchor order), original labels."""
    return {"source": source, "derived": [f for f in FIELDS if f in derived], "original": dict(original)}


def require_columns(path: str, line: int, record: Collection[str], columns: Sequence[str], what: str) -> None:
    """Raise :class:`InputError` when a fixed-schema file lacks one of ``columns`` (``record``: its
    header, or a record's keys)."""
    missing = [c for c in columns if c not in record]
    if missing:
        have = ", ".join(repr(k) for k in record) or "none"
        raise InputError.at(
            path, line, missing[0], f"not a {what} file: no column {', '.join(map(repr, missing))} (columns: {have})"
        )


def columns_check(path: str | Path, columns: Sequence[str], what: str) -> HeaderCheck:
    """A :data:`HeaderCheck` requiring ``columns`` (line 1 is where a header is)."""
    return lambda header: require_columns(str(path), 1, header, columns, what)
