r"""Any CSV / TSV / JSON / JSONL / Parquet file → VARM references, through a column map.

Column-map grammar (:func:`parse_column_map`)::

    spec    := entry (";" entry)*
    entry   := FIELD "=" columns [":" pair ("," pair)*]
    columns := COLUMN ("|" COLUMN)* ["?"]
    pair    := RAW "=" VALUE

- ``;`` separates fields and ``,`` separates the pairs of a value map, so
  ``text=content; label=toxic:1=harmful,0=non_harmful; id=idx`` is unambiguous. Without any
  value map, ``,`` may also separate fields: ``text=content,label=label,id=idx``. A spec may be
  given as several strings (one per ``--map`` option); each is parsed the same way.
- ``col_a|col_b``: the first of these columns present in a record is used; a trailing ``?``
  makes the field optional (absent column or null → field unset); otherwise an absent column
  is an error naming file, line and column.
- An empty COLUMN names the unnamed index column that pandas writes (``id=``).
- ``\`` escapes the next character (``\;`` ``\,`` ``\:`` ``\=`` ``\|`` ``\?`` ``\\``); spaces
  around names and values are ignored.
- FIELD is one of :data:`MAPPABLE`. Value maps are allowed on the discrete fields, target and
  split; a mapped VALUE of a discrete field must be canonical (``harmful``, not ``harmfull``).

Cell values: numbers and booleans are read as text (``1``, ``1.0`` → ``"1"``, ``true``); a value
found in the value map is replaced; a value that is already canonical passes through; with
``aliases=True`` (the ``varm-bench`` converter) the VARM alias table is applied
(``"status/occupation attack"`` → ``status_occupation``); any other value is an error naming
file, line and column. Empty cells leave a field unset; an empty text skips the row (counted).
``tags``: a JSON list, or text split on ``,`` / ``|``. ``context``: text or a list of texts.
Every record is validated as a :class:`~verimod.tasks.varm.schema.VarmReference`. ids: the id
column (with ``id_prefix-`` when given), else ``<id_prefix or file stem>-<line>``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verimod.core.errors import InputError, did_you_mean, shown
from verimod.data.adapters.base import (
    EMPTY_TEXT,
    Builder,
    ConversionResult,
    adapters,
    clean_text,
    make_meta,
)
from verimod.data.records import Format, OnError, guess_format
from verimod.tasks.varm.aliases import canonical_value
from verimod.tasks.varm.codebook import DISCRETE_FIELDS, VOCABULARY

#: Target fields a column may be mapped to.
MAPPABLE = (
    "id",
    "text",
    "target",
    "target_type",
    "target_explicitness",
    "stance",
    "label",
    "category",
    "cot",
    "split",
    "tags",
    "context",
)
#: Fields that take a value map.
VALUE_MAPPABLE = ("target", *DISCRETE_FIELDS, "split")
#: The default map of the ``varm-bench`` converter (key names seen in VARM-style releases).
VARM_BENCH_MAP = (
    "id=id|idx|ID|item_id?; text=text|content|comment; target=target?; "
    "target_type=target_type|targettype?; target_explicitness=target_explicitness|explicitness?; "
    "stance=stance?; label=label?; category=category?; cot=cot|CoT|rationale|reasoning?; "
    "split=split?; tags=tags?; context=context?"
)
_FIXED_SCHEMA = ("csv", "tsv", "parquet")
_SPECIAL = ";,:=|?\\"
_Tokens = list[tuple[str, bool]]


@dataclass(frozen=True)
class FieldMap:
    """How one reference field is read: candidate columns, optional value map, optional flag."""

    columns: tuple[str, ...]
    values: Mapping[str, str] = field(default_factory=dict)
    optional: bool = False


@dataclass(frozen=True)
class ColumnMap:
    """Reference field → :class:`FieldMap`; made by :func:`parse_column_map`."""

    fields: Mapping[str, FieldMap]

    def merged(self, other: ColumnMap) -> ColumnMap:
        """This map with ``other``'s entries replacing or adding fields."""
        return ColumnMap({**self.fields, **other.fields})

    def spec(self) -> str:
        """The map written back in the grammar of :func:`parse_column_map`."""
        entries = []
        for name, fmap in self.fields.items():
            text = f"{name}={'|'.join(_escape(c) for c in fmap.columns)}{'?' if fmap.optional else ''}"
            if fmap.values:
                text += ":" + ",".join(f"{_escape(k)}={_escape(v)}" for k, v in fmap.values.items())
            entries.append(text)
        return "; ".join(entries)


def _escape(text: str) -> str:
    return "".join("\\" + ch if ch in _SPECIAL else ch for ch in text)


def _tokens(text: str, where: str) -> _Tokens:
    tokens: _Tokens = []
    chars = iter(text)
    for ch in chars:
        if ch == "\\":
            escaped = next(chars, None)
            if escaped is None:
                raise InputError.at(where, None, None, f"dangling '\\' at the end of {text!r}")
            tokens.append((escaped, True))
        else:
            tokens.append((ch, False))
    return tokens


def _split(tokens: _Tokens, sep: str, maxsplit: int = -1) -> list[_Tokens]:
    parts: list[_Tokens] = [[]]
    for token in tokens:
        if token == (sep, False) and (maxsplit < 0 or len(parts) <= maxsplit):
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


def _has(tokens: _Tokens, ch: str) -> bool:
    return (ch, False) in tokens


def _text(tokens: _Tokens) -> str:
    return "".join(ch for ch, _ in tokens).strip()


def parse_column_map(spec: str | Sequence[str], where: str = "--map", require_text: bool = True) -> ColumnMap:
    """Parse ``field=column[:raw=value,...]`` entries (grammar in the module docstring).

    ``require_text=False`` accepts a map without ``text`` (an override of some fields).

    >>> parse_column_map("text=content; label=toxic:1=harmful,0=non_harmful").fields["label"].values
    {'1': 'harmful', '0': 'non_harmful'}
    """
    entries: list[_Tokens] = []
    for part in [spec] if isinstance(spec, str) else spec:
        tokens = _tokens(part, where)
        if _has(tokens, ";"):
            entries.extend(_split(tokens, ";"))
        elif not _has(tokens, ":"):
            entries.extend(_split(tokens, ","))
        else:
            entries.append(tokens)
    fields: dict[str, FieldMap] = {}
    for entry in entries:
        if not _text(entry):
            continue
        name, fmap = _entry(entry, where)
        if name in fields:
            raise InputError.at(where, None, name, "mapped twice")
        fields[name] = fmap
    if require_text and "text" not in fields:
        raise InputError.at(where, None, "text", "the map must say which column holds the text (text=COLUMN)")
    return ColumnMap(fields)


def _entry(entry: _Tokens, where: str) -> tuple[str, FieldMap]:
    head = _split(entry, "=", 1)
    name = _text(head[0])
    if len(head) < 2 or not name:
        raise InputError.at(where, None, None, f"expected FIELD=COLUMN, got {_text(entry)!r}")
    if name not in MAPPABLE:
        hint = did_you_mean(name, MAPPABLE)
        raise InputError.at(where, None, name, f"unknown field{hint}; fields: {', '.join(MAPPABLE)}")
    columns_part, *value_part = _split(head[1], ":", 1)
    while columns_part and not columns_part[-1][1] and columns_part[-1][0].isspace():
        columns_part = columns_part[:-1]
    optional = bool(columns_part) and columns_part[-1] == ("?", False)
    if optional:
        columns_part = columns_part[:-1]
    for ch in ",=?":
        if _has(columns_part, ch):
            raise InputError.at(
                where, None, name, f"column name with an unescaped {ch!r}: separate fields with ';' or write \\{ch}"
            )
    columns = tuple(_text(c) for c in _split(columns_part, "|"))
    if len(columns) > 1 and not all(columns):
        raise InputError.at(where, None, name, "empty column name among alternatives")
    values = _value_map(name, value_part[0], where) if value_part else {}
    return name, FieldMap(columns, values, optional)


def _value_map(name: str, tokens: _Tokens, where: str) -> dict[str, str]:
    if name not in VALUE_MAPPABLE:
        raise InputError.at(where, None, name, f"takes no value map (only {', '.join(VALUE_MAPPABLE)} do)")
    values: dict[str, str] = {}
    for pair in _split(tokens, ","):
        if not _text(pair):
            continue
        parts = _split(pair, "=", 1)
        raw = _text(parts[0])
        value = _text(parts[1]) if len(parts) == 2 else ""
        if not raw or not value:
            raise InputError.at(where, None, name, f"expected RAW=VALUE in the value map, got {_text(pair)!r}")
        if raw in MAPPABLE and not any(escaped for _, escaped in parts[0]):
            raise InputError.at(
                where,
                None,
                name,
                f"{_text(pair)!r} in the value map looks like a field: separate fields with ';' "
                f"(to map a cell value {raw!r}, escape it: \\{raw})",
            )
        if name in VOCABULARY and value not in VOCABULARY[name]:
            hint = did_you_mean(value, VOCABULARY[name]) or f"; values: {', '.join(VOCABULARY[name])}"
            raise InputError.at(where, None, name, f"{value!r} is not a {name} value{hint}")
        if raw in values:
            raise InputError.at(where, None, name, f"value {raw!r} is mapped twice")
        values[raw] = value
    return values


class _BadCell(ValueError):
    """A cell that cannot be read as the field needs."""


def _scalar(value: Any) -> str | None:
    """A cell as stripped text (None when empty); numbers and booleans as their text."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float | str):
        return str(value).strip() or None
    raise _BadCell(f"expected a single value, got {shown(value)}")


def _field_value(name: str, fmap: FieldMap, raw: Any, aliases: bool) -> Any:
    """The reference value of one mapped cell (raises :class:`_BadCell`)."""
    if name in ("tags", "context"):
        return _listish(name, raw)
    if name == "cot":
        if raw is not None and not isinstance(raw, str):
            raise _BadCell(f"expected text, got {shown(raw)}")
        return raw if raw and raw.strip() else None
    value = _scalar(raw)
    if value is None or name in ("id", "text"):
        return value
    if value in fmap.values:
        return fmap.values[value]
    if name == "split":
        return value
    if name == "target":
        return canonical_value("target", value) if aliases else value
    if value in VOCABULARY[name]:
        return value
    canonical = canonical_value(name, value) if aliases else None
    if canonical is None:
        raise _BadCell(
            f"unmapped value {value!r}; map it ({name}={{column}}:{_escape(value)}=VALUE) or use one of "
            + ", ".join(VOCABULARY[name])
        )
    return canonical


def _listish(name: str, raw: Any) -> Any:
    if raw is None:
        return [] if name == "tags" else None
    if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        return [x.strip() for x in raw if x.strip()] if name == "tags" else raw
    if isinstance(raw, str):
        if name == "context":
            return raw if raw.strip() else None
        return [t.strip() for t in raw.replace("|", ",").split(",") if t.strip()]
    raise _BadCell(f"expected text or a list of texts, got {shown(raw)}")


def _as_map(column_map: ColumnMap | str | Sequence[str] | None) -> ColumnMap:
    if column_map is None:
        raise InputError.at("--map", None, None, "the generic converter needs a column map, e.g. --map 'text=content'")
    return column_map if isinstance(column_map, ColumnMap) else parse_column_map(column_map)


@adapters.register("generic")
def convert_generic(
    path: str | Path,
    *,
    column_map: ColumnMap | str | Sequence[str] | None = None,
    fmt: Format | None = None,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    source: str = "generic",
    id_prefix: str = "",
    aliases: bool = False,
) -> ConversionResult:
    """Convert any tabular file through a column map (``--map``); see the module docstring."""
    return _convert(path, _as_map(column_map), fmt, encoding, on_error, source, id_prefix, aliases)


@adapters.register("varm-bench")
def convert_varm_bench(
    path: str | Path,
    *,
    column_map: ColumnMap | str | Sequence[str] | None = None,
    fmt: Format | None = None,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    id_prefix: str = "",
) -> ConversionResult:
    """Convert a VARM-Bench release (JSON/JSONL with the six fields and cot); ``column_map``
    entries replace those of :data:`VARM_BENCH_MAP`; values go through the VARM alias table."""
    cmap = parse_column_map(VARM_BENCH_MAP)
    if column_map is not None:
        override = column_map if isinstance(column_map, ColumnMap) else parse_column_map(column_map, require_text=False)
        cmap = cmap.merged(override)
    return _convert(path, cmap, fmt, encoding, on_error, "varm-bench", id_prefix, True)


def _convert(
    path: str | Path,
    cmap: ColumnMap,
    fmt: Format | None,
    encoding: str | None,
    on_error: OnError,
    source: str,
    id_prefix: str,
    aliases: bool,
) -> ConversionResult:
    name = str(path)
    notes = [f"column map: {cmap.spec()}", "every field as given in the file; none derived"]
    if aliases:
        notes.append("values canonicalised through the VARM alias table")
    builder = Builder(source, on_error, notes)
    fixed = (fmt or guess_format(name)) in _FIXED_SCHEMA
    stem = Path(name).name.split(".")[0]
    check = (lambda header: _check_schema(name, cmap, header)) if fixed else None
    for line, record in builder.rows(path, encoding, fmt, check=check):
        data = _row(builder, cmap, name, line, record, aliases)
        if data is None:
            continue
        original = data.pop("_original")
        if data.get("id") is None:
            data["id"] = f"{id_prefix or stem}-{line}"
        elif id_prefix:
            data["id"] = f"{id_prefix}-{data['id']}"
        data["meta"] = make_meta(source, (), original)
        builder.add(name, line, data)
    return builder.finish()


def _check_schema(path: str, cmap: ColumnMap, record: Collection[str]) -> None:
    for name, fmap in cmap.fields.items():
        if not fmap.optional and not any(c in record for c in fmap.columns):
            have = ", ".join(repr(k) for k in record) or "none"
            raise InputError.at(path, 1, fmap.columns[0], f"no such column (mapped to {name}); columns: {have}")


def _row(
    builder: Builder, cmap: ColumnMap, path: str, line: int, record: Mapping[str, Any], aliases: bool
) -> dict[str, Any] | None:
    data: dict[str, Any] = {}
    original: dict[str, Any] = {}
    for name, fmap in cmap.fields.items():
        column = next((c for c in fmap.columns if c in record), None)
        if column is None:
            if fmap.optional:
                continue
            builder.invalid(path, line, fmap.columns[0], f"no such column (mapped to {name})")
            return None
        problem: str | None = None
        try:
            value = _field_value(name, fmap, record[column], aliases)
        except _BadCell as exc:
            problem = str(exc).replace("{column}", _escape(column))
        if problem is not None:
            builder.invalid(path, line, column, problem)
            return None
        if name == "text" and clean_text(value) is None:
            builder.skip(EMPTY_TEXT)
            return None
        if name == "id" and value is None and not fmap.optional:
            builder.invalid(path, line, column, "empty id")
            return None
        if name in VALUE_MAPPABLE and value is not None and _scalar(record[column]) != value:
            original[column] = record[column]
        data[name] = value
    data["_original"] = original
    return data
