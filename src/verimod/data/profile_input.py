"""Reading the records a data-set profile describes, with one-line errors naming file, line, field.

Any file the data commands read (CSV, TSV, JSON, JSONL, Parquet; see
:func:`verimod.data.records.read_records`). Per record:

- the text (``text_field``) must be a non-blank string;
- unless ``text_only``, the VARM annotation fields are read where present: ``target`` (a
  non-blank string), ``target_type``, ``target_explicitness``, ``stance``, ``label``,
  ``category`` (each one of the codebook's values), ``split`` (a string), ``tags`` (a list of
  strings) and ``meta.source`` (``meta`` an object, ``source`` a string). A field that is absent,
  null or an empty string is *missing* (an empty CSV cell is how a table says so) and is counted
  as such; a present field with any other value is bad input.

A bad record raises :class:`InputError` (``on_error="fail"``) or is skipped and its problem kept
(``on_error="skip"``), like the reader's malformed rows: nothing is dropped without being counted.
A file without any record is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verimod.core.errors import InputError, Problem, did_you_mean, shown
from verimod.data.records import Format, OnError, read_records
from verimod.tasks.varm.codebook import VOCABULARY

#: The annotation fields a profile reads, with their codebook vocabulary (None: free text).
ANNOTATION_FIELDS: dict[str, tuple[str, ...] | None] = {
    "label": VOCABULARY["label"],
    "category": VOCABULARY["category"],
    "stance": VOCABULARY["stance"],
    "target_type": VOCABULARY["target_type"],
    "target_explicitness": VOCABULARY["target_explicitness"],
    "split": None,
}
_TEXT_ONLY_HINT = "; --text-only profiles the texts alone"


@dataclass(frozen=True)
class ProfileItem:
    """One record as a profile sees it: its position, text, target, annotation values
    (``fields``: the keys of :data:`ANNOTATION_FIELDS` plus ``source``, None when missing) and tags."""

    line: int
    text: str
    target: str | None = None
    fields: Mapping[str, str | None] = field(default_factory=dict)
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProfileInput:
    """The items of one file, the problems of the records skipped, and the encoding read."""

    path: str
    items: list[ProfileItem]
    skipped: list[Problem]
    encoding: str | None


def _missing(value: Any) -> bool:
    return value is None or value == ""


def _annotation(path: str, line: int, name: str, value: Any, vocabulary: tuple[str, ...] | None) -> str | None:
    if _missing(value):
        return None
    if not isinstance(value, str):
        raise InputError.at(path, line, name, f"expected a string, got {type(value).__name__}{_TEXT_ONLY_HINT}")
    if vocabulary is not None and value not in vocabulary:
        message = f"{shown(value)} is not one of {', '.join(vocabulary)}{did_you_mean(value, vocabulary)}"
        raise InputError.at(path, line, name, message + _TEXT_ONLY_HINT)
    return value


def _target(path: str, line: int, value: Any) -> str | None:
    if _missing(value):
        return None
    if not isinstance(value, str) or not value.strip():
        what = f"not a string ({type(value).__name__})" if not isinstance(value, str) else "blank"
        raise InputError.at(path, line, "target", f"{what}; use no_clear_target for none{_TEXT_ONLY_HINT}")
    return value


def _tags(path: str, line: int, value: Any) -> tuple[str, ...]:
    if _missing(value):
        return ()
    if not isinstance(value, list) or not all(isinstance(tag, str) and tag for tag in value):
        raise InputError.at(path, line, "tags", f"expected a list of non-empty strings, got {shown(value)}")
    return tuple(dict.fromkeys(value))


def _source(path: str, line: int, meta: Any) -> str | None:
    if _missing(meta):
        return None
    if not isinstance(meta, dict):
        raise InputError.at(path, line, "meta", f"expected an object, got {type(meta).__name__}")
    source = meta.get("source")
    if _missing(source):
        return None
    if not isinstance(source, str):
        raise InputError.at(path, line, "meta.source", f"expected a string, got {type(source).__name__}")
    return source


def profile_item(path: str, line: int, row: Mapping[str, Any], text_field: str, text_only: bool) -> ProfileItem:
    """The :class:`ProfileItem` of one record (``InputError`` naming the field on bad input)."""
    text = row.get(text_field)
    if not isinstance(text, str):
        what = "missing" if text is None else f"not a string ({type(text).__name__})"
        raise InputError.at(path, line, text_field, f"{what}; choose the text column with --text-field")
    if not text.strip():
        raise InputError.at(path, line, text_field, "empty text")
    if text_only:
        return ProfileItem(line, text)
    fields = {name: _annotation(path, line, name, row.get(name), vocab) for name, vocab in ANNOTATION_FIELDS.items()}
    fields["source"] = _source(path, line, row.get("meta"))
    return ProfileItem(line, text, _target(path, line, row.get("target")), fields, _tags(path, line, row.get("tags")))


def read_profile_input(
    path: str | Path,
    *,
    fmt: Format | None = None,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    text_field: str = "text",
    text_only: bool = False,
) -> ProfileInput:
    """Every record of ``path`` as a :class:`ProfileItem` (module docstring for the contract)."""
    name = str(path)
    stream = read_records(path, fmt, encoding, on_error)
    items: list[ProfileItem] = []
    problems: list[Problem] = []
    for line, row in stream:
        try:
            items.append(profile_item(name, line, row, text_field, text_only))
        except InputError as exc:
            if on_error == "fail":
                raise
            problems.append(exc.problem)
    skipped = sorted([*stream.skipped, *problems], key=lambda p: p.line or 0)
    if not items:
        detail = f" ({len(skipped)} skipped as malformed)" if skipped else ""
        raise InputError.at(name, None, None, f"no records to profile{detail}")
    return ProfileInput(name, items, skipped, stream.encoding)
