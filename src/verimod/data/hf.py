"""Tables that are not JSON Lines files: Hugging Face ``datasets`` sources and Parquet files.

Where verimod reads references (``eval --data``, ``score --ref``, ``validate``, ``data
profile`` …) a *source* may be, besides a JSONL file:

- ``hf:NAME`` or ``hf:NAME:SPLIT`` — a Hugging Face data set: ``NAME`` is a hub id
  (``org/name``, loaded with ``datasets.load_dataset``; needs the hub, or its local cache when
  ``HF_DATASETS_OFFLINE=1``) or a local folder (below). Without ``SPLIT`` every split is read,
  in the order the data set lists them.
- a local folder: one written by ``Dataset.save_to_disk`` (it holds ``dataset_dict.json`` or
  ``state.json``; read with ``datasets.load_from_disk``), or a hub-style folder of data files
  with or without a ``README.md`` (``verimod data export --hf`` writes one; read with
  ``datasets.load_dataset(folder)``, which follows the card's ``configs``).
- a ``*.parquet`` file (read with pyarrow; ``datasets`` is not needed).

Rows become reference objects by one rule, :func:`table_row`: a null cell is an absent field
(so ``tags``, ``cot`` … fall back to their defaults and partial references stay partial), a
``meta`` cell holding a JSON string is decoded (``data export --hf`` writes ``meta`` as JSON
text, because Parquet needs one type per column), and a row without a ``split`` takes the name of
the Hugging Face split it came from. Every row keeps its position (1-based, per split) and its
source name (``hf:NAME:SPLIT``), so an error names source, row and field like a file, line and
field. The ``datasets`` package is optional (``pip install ".[datasets]"``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from verimod.core.errors import InputError, MissingExtraError, install_hint
from verimod.core.hashing import file_sha256
from verimod.data.jsonl import dumps_line

HF_PREFIX = "hf:"
_SAVED_MARKERS = ("dataset_dict.json", "state.json")


def is_table_source(source: str | Path) -> bool:
    """True when ``source`` is read by this module: ``hf:…``, a folder or a Parquet file."""
    text = str(source)
    return text.startswith(HF_PREFIX) or Path(text).is_dir() or text.lower().endswith(".parquet")


def parse_hf_source(source: str) -> tuple[str, str | None]:
    """``"hf:org/name:test"`` → ``("org/name", "test")``; ``"hf:org/name"`` → ``("org/name", None)``.

    The split is what follows the last ``:`` when it is a plain name (letters, digits, ``_``,
    ``-``, ``.``); otherwise the whole rest is the name."""
    rest = source[len(HF_PREFIX) :] if source.startswith(HF_PREFIX) else source
    name, colon, split = rest.rpartition(":")
    if colon and name and split and all(ch.isalnum() or ch in "_-." for ch in split):
        return name, split
    if not rest:
        raise InputError.at(source, None, None, "give a data set after hf:, e.g. hf:org/name or hf:org/name:test")
    return rest, None


def table_row(row: dict[str, Any], split: str | None) -> dict[str, Any]:
    """One table row as a reference object (module docstring: nulls, ``meta``, ``split``)."""
    obj = {key: value for key, value in row.items() if value is not None}
    meta = obj.get("meta")
    if isinstance(meta, str):
        with suppress(json.JSONDecodeError):  # left as text otherwise: validation reports the field
            obj["meta"] = json.loads(meta)
    if split is not None and "split" not in obj:
        obj["split"] = split
    return obj


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise MissingExtraError(
            f"reading Hugging Face data sets needs the datasets package: {install_hint('datasets')}"
        ) from None
    return datasets


@contextmanager
def _quiet_progress(datasets: Any) -> Iterator[None]:
    """No ``datasets`` progress bars while loading (they would interleave with verimod's output)."""
    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()


def _load(source: str, name: str, split: str | None) -> Any:
    """A ``Dataset`` (a split was named) or a ``DatasetDict`` (every split)."""
    datasets = _datasets()
    folder = Path(name)
    with _quiet_progress(datasets):
        try:
            if folder.is_dir() and any((folder / marker).is_file() for marker in _SAVED_MARKERS):
                loaded = datasets.load_from_disk(str(folder))
                if split is None:
                    return loaded
                if not isinstance(loaded, datasets.DatasetDict):
                    raise InputError.at(source, None, "split", f"{name} holds a single split; drop ':{split}'")
                if split not in loaded:
                    raise InputError.at(source, None, "split", f"no split {split!r}; it has {', '.join(loaded)}")
                return loaded[split]
            return datasets.load_dataset(str(folder) if folder.is_dir() else name, split=split)
        except InputError:
            raise
        except Exception as exc:  # datasets raises many types (hub, file system, schema, split)
            message = " ".join(str(exc).split()) or type(exc).__name__
            raise InputError.at(source, None, None, f"cannot load the data set: {message}") from None


def _parquet_rows(path: str) -> Iterator[tuple[str, int, dict[str, Any]]]:
    from verimod.data.records import read_records

    for number, row in read_records(path, "parquet"):
        yield path, number, table_row(row, None)


def table_rows(source: str | Path) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """``(source name, row number, reference object)`` for every row of a table source."""
    text = str(source)
    if not text.startswith(HF_PREFIX) and not Path(text).is_dir():
        if not Path(text).is_file():
            raise InputError.at(text, None, None, "file not found")
        yield from _parquet_rows(text)
        return
    name, split = parse_hf_source(text) if text.startswith(HF_PREFIX) else (text, None)
    if not text.startswith(HF_PREFIX) and not Path(name).is_dir():
        raise InputError.at(text, None, None, "not found")
    loaded = _load(text, name, split)
    parts: Iterable[tuple[str | None, Any]]
    if hasattr(loaded, "items"):  # a DatasetDict: every split, in its order
        parts = list(loaded.items())
    else:  # one split (named, or a saved Dataset that may carry its split's name)
        found = split if split is not None else getattr(loaded, "split", None)
        parts = [(None if found is None else str(found), loaded)]
    for part_name, part in parts:
        label = f"{HF_PREFIX}{name}" + ("" if part_name is None else f":{part_name}")
        for number, row in enumerate(part, 1):
            yield label, number, table_row(dict(row), part_name)


def table_records(source: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows of :func:`table_rows` numbered 1, 2, … over the splits in order (for readers
    that name a position by one number)."""
    for number, (_, _, row) in enumerate(table_rows(source), 1):
        yield number, row


def source_label(source: str | Path) -> str:
    """How a manifest names a source: an absolute path for files and folders, ``hf:`` ids as given."""
    text = str(source)
    if text.startswith(HF_PREFIX):
        name, split = parse_hf_source(text)
        if Path(name).is_dir():
            return f"{HF_PREFIX}{Path(name).resolve()}" + (f":{split}" if split else "")
        return text
    return str(Path(text).resolve())


def rows_sha256(rows: Iterable[dict[str, Any]]) -> str:
    """sha256 of rows written as verimod JSON lines (equal to the sha256 of the JSONL file that
    :func:`verimod.data.jsonl.write_jsonl` would write from them)."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(dumps_line(row))
    return digest.hexdigest()


def source_sha256(source: str | Path, references: Iterable[Any]) -> str:
    """The content hash a manifest records: a file's sha256 for a file (JSONL or Parquet), else
    the sha256 of the loaded references written as JSON lines (``hf:`` ids and folders)."""
    text = str(source)
    if not text.startswith(HF_PREFIX) and Path(text).is_file():
        return file_sha256(text)
    return rows_sha256(r.model_dump(exclude_none=True) for r in references)
