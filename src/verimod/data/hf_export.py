"""A VARM reference set as a Hugging Face data set folder, ready to push to the hub.

:func:`export_hf` writes

- ``data/<split>-NNNNN-of-MMMMM.parquet``: the references of each split (a reference's
  ``split`` field; ``default_split`` for those without one), at most ``shard_rows`` rows per
  file. Columns: ``id``, ``text``, the six record fields, ``cot``, ``split``, ``tags`` (list of
  strings), ``context`` (text, or a list of texts when any reference has a list: a text is then
  a one-item list, rendered identically in prompts) and ``meta`` (JSON text, since a Parquet
  column has one type). Absent fields are nulls. Reading the folder back with ``--data hf:DIR``
  gives the same references (:mod:`verimod.data.hf`).
- ``README.md``: the dataset card — YAML front matter (licence, language, task, size category,
  the ``configs`` that map splits to files, ``dataset_info`` with features and split sizes)
  followed by the data card's text. A data card's own front matter is kept (its keys win, but
  ``configs`` and ``dataset_info`` always describe the files written here); without a card, a
  short generated card lists the schema and counts and says that no card was given.
- any ``attach`` files (licences, attributions) copied beside them.

Existing Parquet files under ``data/`` are removed first when ``overwrite`` is set (a stale
shard would otherwise be loaded with the new ones); without it, a folder that already holds a
``README.md`` or ``data/`` is refused.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from verimod.core.errors import InputError, MissingExtraError, install_hint
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.schema import VarmReference

_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(\r?\n|\Z)", re.DOTALL)
_STRING_COLUMNS = ("id", "text", *FIELDS, "cot", "split")
_SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


@dataclass(frozen=True)
class HfExport:
    """What :func:`export_hf` wrote."""

    folder: Path
    splits: dict[str, int]
    files: list[Path]
    card_source: str | None


def split_card(text: str, path: str) -> tuple[dict[str, Any], str]:
    """A markdown card's YAML front matter (``{}`` without one) and its body."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    try:
        meta = yaml.safe_load(match.group(1) or "") or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = None if mark is None else mark.line + 2  # +1 for 1-based, +1 for the opening ---
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError.at(path, line, None, f"front matter is not valid YAML: {problem}") from None
    if not isinstance(meta, dict):
        raise InputError.at(path, 2, None, "front matter must be a YAML mapping")
    return meta, text[match.end() :]


def _size_category(n: int) -> str:
    for bound, name in _SIZE_CATEGORIES:
        if n < bound:
            return name
    return "n>1M" if n >= 10_000_000 else "1M<n<10M"


def _context_is_list(references: Sequence[VarmReference]) -> bool:
    return any(isinstance(r.context, list) for r in references)


def _columns(references: Sequence[VarmReference], context_list: bool) -> dict[str, list[Any]]:
    columns: dict[str, list[Any]] = {name: [getattr(r, name) for r in references] for name in _STRING_COLUMNS}
    columns["tags"] = [list(r.tags) for r in references]
    if context_list:
        columns["context"] = [[r.context] if isinstance(r.context, str) else r.context for r in references]
    else:
        columns["context"] = [r.context for r in references]
    columns["meta"] = [None if r.meta is None else json.dumps(r.meta, ensure_ascii=False) for r in references]
    return columns


def _features(context_list: bool) -> list[dict[str, Any]]:
    features: list[dict[str, Any]] = [{"name": name, "dtype": "string"} for name in _STRING_COLUMNS]
    features.append({"name": "tags", "sequence": "string"})
    features.append({"name": "context", **({"sequence": "string"} if context_list else {"dtype": "string"})})
    features.append({"name": "meta", "dtype": "string"})
    return features


def _generated_card(name: str, splits: dict[str, int], references: Sequence[VarmReference]) -> str:
    labels = Counter(r.label or "(none)" for r in references)
    rows = "\n".join(f"| {split} | {count} |" for split, count in splits.items())
    label_text = ", ".join(f"{label} {count}" for label, count in sorted(labels.items()))
    return f"""# {name}

VARM reference records exported by verimod. **No data card was given for this set**: add its
sources, licences, sampling, annotation process, agreement, known limitations and intended use
before publishing it.

| split | records |
|---|---:|
{rows}

Labels: {label_text}.

## Fields

`id`, `text` (the comment), the six record fields `target`, `target_type`,
`target_explicitness`, `stance`, `label`, `category` (null when a partial reference does not
annotate one), `cot` (the reference rationale with its six anchors), `split`, `tags`
(phenomena), `context` and `meta` (JSON text). The values follow the VARM codebook
(`verimod/resources/varm_codebook.md` in the verimod package).

Score model outputs on it with `verimod score PRED.jsonl --ref hf:<repo>:test`.
"""


def _prepare_folder(folder: Path, overwrite: bool) -> None:
    data = folder / "data"
    if not overwrite and ((folder / "README.md").exists() or data.exists()):
        raise InputError.at(str(folder), None, None, "already holds a README.md or data/; pass --overwrite to replace")
    if data.is_dir():
        for stale in data.glob("*.parquet"):
            stale.unlink()
    data.mkdir(parents=True, exist_ok=True)


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingExtraError(f"writing Parquet needs pyarrow: {install_hint('datasets')}") from None
    return pa, pq


def reference_table(references: Sequence[VarmReference], context_list: bool | None = None) -> Any:
    """The references as a pyarrow table with the export's columns and types (module docstring);
    ``context_list`` None: a list column when any reference has a list context."""
    pa, _ = _pyarrow()
    as_list = _context_is_list(references) if context_list is None else context_list
    schema = pa.schema(
        [(column, pa.string()) for column in _STRING_COLUMNS]
        + [("tags", pa.list_(pa.string()))]
        + [("context", pa.list_(pa.string()) if as_list else pa.string()), ("meta", pa.string())]
    )
    return pa.table(_columns(references, as_list), schema=schema)


def write_parquet(references: Sequence[VarmReference], path: str | Path) -> Path:
    """One Parquet file of ``references`` (the columns of :func:`reference_table`)."""
    _, pq = _pyarrow()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(reference_table(references), target)
    return target


def export_hf(
    references: Sequence[VarmReference],
    folder: str | Path,
    *,
    name: str,
    card: str | Path | None = None,
    license_id: str | None = None,
    default_split: str = "test",
    shard_rows: int = 500_000,
    attach: Sequence[str | Path] = (),
    overwrite: bool = False,
) -> HfExport:
    """Write ``references`` as a hub-ready data set folder (see the module docstring)."""
    _, pq = _pyarrow()
    if shard_rows < 1:
        raise InputError.at("--shard-rows", None, None, f"must be at least 1, got {shard_rows}")
    by_split: dict[str, list[VarmReference]] = {}
    for reference in references:
        split = reference.split or default_split
        if not _SPLIT_NAME.match(split):
            raise InputError.at(
                reference.id, None, "split", f"{split!r} is not a Hugging Face split name (letters, digits, _)"
            )
        by_split.setdefault(split, []).append(reference)
    card_meta: dict[str, Any] = {}
    body: str
    if card is not None:
        card_path = Path(card)
        try:
            card_text = card_path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError.at(str(card), None, None, f"cannot read the data card: {exc}") from None
        card_meta, body = split_card(card_text, str(card))
    for path in attach:
        if not Path(path).is_file():
            raise InputError.at(str(path), None, None, "file to attach not found")
    out = Path(folder)
    _prepare_folder(out, overwrite)
    context_list = _context_is_list(references)
    files: list[Path] = []
    arrow_bytes: dict[str, int] = {}
    for split, items in by_split.items():
        shards = max(1, -(-len(items) // shard_rows))
        for index in range(shards):
            chunk = items[index * shard_rows : (index + 1) * shard_rows]
            target = out / "data" / f"{split}-{index:05d}-of-{shards:05d}.parquet"
            table = reference_table(chunk, context_list)
            pq.write_table(table, target)
            arrow_bytes[split] = arrow_bytes.get(split, 0) + table.nbytes
            files.append(target)
    splits = {split: len(items) for split, items in by_split.items()}
    if card is None:
        body = _generated_card(name, splits, references)
    front = {
        "license": license_id or "unknown",
        "language": ["zh"],
        "task_categories": ["text-classification"],
        "task_ids": ["hate-speech-detection"],
        "pretty_name": name,
        "size_categories": [_size_category(len(references))],
        "tags": ["verimod", "varm", "content-moderation", "abusive-language"],
        **card_meta,
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": split, "path": f"data/{split}-*"} for split in by_split],
            }
        ],
        "dataset_info": {
            "features": _features(context_list),
            "splits": [
                {"name": split, "num_bytes": arrow_bytes[split], "num_examples": count}
                for split, count in splits.items()
            ],
        },
    }
    if license_id is not None:
        front["license"] = license_id
    readme = "---\n" + yaml.safe_dump(front, allow_unicode=True, sort_keys=False) + "---\n\n" + body.lstrip("\n")
    (out / "README.md").write_text(readme, encoding="utf-8")
    for path in attach:
        shutil.copyfile(path, out / Path(path).name)
    return HfExport(out, splits, files, None if card is None else str(card))
