"""Expert inspection sheets of C-SafeQA: open or truly blind, three experts, agreement, discussion.

C-SafeQA §3.8: three safety experts label a stratified sample of pairs *independently and
blind*, then discuss the pairs they disagree on; the expert label supersedes the model label.

**Open sheet** (:func:`inspection_rows`): one row per inspected pair with the model evidence —
columns :data:`SHEET_COLUMNS` (pair id, agreement stratum, query, response, the initial labels,
the adjudicator and its label, the model label), then the empty columns ``expert_1``,
``expert_2``, ``expert_3``, ``final`` and ``note``.

**Blind sheet** (:func:`blind_sheet`): nothing but what an expert must judge — columns
:data:`BLIND_COLUMNS`: an *opaque* item id, the query, the response and the empty expert columns.
No pair id (it carries the model's name and, for JADE, the gold label), no model, no
transformation method, no stratum, no model label; the rows are *shuffled* with
``numpy.random.default_rng(seed)`` (sorted pair ids permuted), and the items are numbered
``item-0001``… in that shuffled order, so neither the id nor the position says anything. The
mapping item → pair id (with the stratum and the model label, for the audit) goes to a separate
**key** file (:func:`write_key`, JSON Lines) that the coordinator keeps.

**Reading** (:func:`read_expert_labels`): a row is found by ``pair_id`` (open sheet) or by
``item`` through the key (blind sheet). Expert columns are either ``expert_1`` … ``expert_3``
(and ``final``) or the single ``expert`` column of older sheets. Labels: safe | unsafe |
disputed (case and surrounding spaces ignored); a blank cell is no label. Per row, in order:

1. ``final`` filled — the label agreed after discussion (status ``discussed``);
2. single ``expert`` column filled — that label (status ``single``);
3. the three experts filled and equal — their label (``unanimous``);
4. the three filled, not all equal — no label yet: the row joins the **discussion queue**
   (:attr:`ExpertLabels.discussion`, :func:`write_discussion`) until ``final`` is filled;
5. one or two filled — ``incomplete`` (no label);
6. nothing filled — not inspected (``blank``).

Agreement of the three experts (:class:`ExpertAgreement`) over the rows where all three gave a
label: unanimous / 2–1 / three-way counts, raw agreement, Fleiss' κ, and Krippendorff's α (over
every row with at least two labels), from :mod:`verimod.stats`.

Bad input is a one-line :class:`~verimod.core.errors.InputError` naming file, line and field:
an unknown pair id or item, a label outside the three, a pair given twice, a missing column.
CSV files are written UTF-8 with BOM; a query or response cell starting with ``= + - @``, a tab
or a carriage return gets a leading ``'`` so a spreadsheet shows it as text.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from verimod.core.errors import InputError, did_you_mean, shown
from verimod.data.jsonl import atomic_write, write_jsonl
from verimod.data.records import Format, read_records
from verimod.stats import fleiss_kappa, krippendorff_alpha, raw_agreement
from verimod.tasks.safeqa.adjudication import AdjudicationResult, model_entries
from verimod.tasks.safeqa.schema import LABELS, Label, SafePair

EXPERT_COLUMNS: tuple[str, ...] = ("expert_1", "expert_2", "expert_3")
#: Columns of the open sheet, in order.
SHEET_COLUMNS: tuple[str, ...] = (
    "pair_id",
    "agreement",
    "query",
    "response",
    "initial",
    "adjudicator",
    "adjudicated",
    "model_label",
    *EXPERT_COLUMNS,
    "final",
    "note",
)
#: Columns of the blind sheet, in order.
BLIND_COLUMNS: tuple[str, ...] = ("item", "query", "response", *EXPERT_COLUMNS, "final", "note")
Status = Literal["discussed", "single", "unanimous", "discussion", "incomplete", "blank"]


class KeyRow(BaseModel):
    """One line of a blind sheet's key: the opaque item and what it hides."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item: str
    pair_id: str
    agreement: str
    model_label: Label | None


class BlindSheet(BaseModel):
    """A blind sheet's rows and its key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int
    rows: list[dict[str, Any]]
    key: list[KeyRow]


class DiscussionItem(BaseModel):
    """A pair the three experts disagree on, waiting for the ``final`` label."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item: str | None
    pair_id: str
    line: int
    experts: list[Label | None]
    query: str | None = None
    response: str | None = None


class ExpertAgreement(BaseModel):
    """Agreement of the three experts (module docstring); measures are None when undefined."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_complete: int = Field(description="rows where all three experts gave a label")
    n_unanimous: int
    n_majority: int
    n_split: int
    raw_agreement: float | None
    fleiss_kappa: float | None
    krippendorff_alpha: float | None


class ExpertLabels(BaseModel):
    """Expert labels read from a filled-in inspection sheet (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    labels: dict[str, Label] = Field(description="pair id → the resolved expert label")
    experts: dict[str, list[Label | None]] = Field(default_factory=dict, description="pair id → the three labels")
    status: dict[str, Status] = Field(default_factory=dict)
    blank: list[str] = Field(description="pair ids whose expert cells were empty (not inspected yet)")
    incomplete: list[str] = Field(default_factory=list)
    discussion: list[DiscussionItem] = Field(default_factory=list)
    agreement: ExpertAgreement | None = None


def _pair_lookup(pairs: Mapping[str, SafePair] | Iterable[SafePair]) -> dict[str, SafePair]:
    return dict(pairs) if isinstance(pairs, Mapping) else {p.pair_id: p for p in pairs}


def _evidence(pair_id: str, result: AdjudicationResult, by_id: Mapping[str, SafePair]) -> dict[str, Any]:
    entries = model_entries(result)
    if pair_id not in entries:
        raise ValueError(f"pair {pair_id!r} is not in the adjudication result")
    if pair_id not in by_id:
        raise ValueError(f"pair {pair_id!r} has no query and response")
    agreement, initial, provenance = entries[pair_id]
    pair = by_id[pair_id]
    model_label = {label.pair_id: label.label for label in result.labels}.get(pair_id)
    return {
        "pair_id": pair_id,
        "agreement": agreement,
        "query": pair.query.text,
        "response": pair.response.text,
        "initial": dict(initial),
        "adjudicator": provenance.adjudicator,
        "adjudicated": provenance.adjudicated,
        "model_label": model_label,
    }


def _empty_expert_cells() -> dict[str, None]:
    return {column: None for column in (*EXPERT_COLUMNS, "final", "note")}


def inspection_rows(
    pair_ids: Iterable[str], result: AdjudicationResult, pairs: Mapping[str, SafePair] | Iterable[SafePair]
) -> list[dict[str, Any]]:
    """Rows of the open sheet (columns :data:`SHEET_COLUMNS`), in the order of ``pair_ids``.

    ``initial`` is a judge → label object; ``model_label`` the label before inspection (None
    for an unresolved pair). Raises ``ValueError`` for a pair id missing from ``result`` or ``pairs``.
    """
    by_id = _pair_lookup(pairs)
    return [{**_evidence(pair_id, result, by_id), **_empty_expert_cells()} for pair_id in pair_ids]


def blind_sheet(
    pair_ids: Iterable[str],
    result: AdjudicationResult,
    pairs: Mapping[str, SafePair] | Iterable[SafePair],
    seed: int = 0,
) -> BlindSheet:
    """The blind sheet and its key (module docstring): shuffled rows, opaque item ids."""
    by_id = _pair_lookup(pairs)
    ordered = sorted(dict.fromkeys(pair_ids))
    evidence = [_evidence(pair_id, result, by_id) for pair_id in ordered]
    order = np.random.default_rng(seed).permutation(len(ordered))
    width = max(4, len(str(len(ordered))))
    rows, key = [], []
    for number, index in enumerate(order, 1):
        item = f"item-{number:0{width}d}"
        found = evidence[int(index)]
        rows.append({"item": item, "query": found["query"], "response": found["response"], **_empty_expert_cells()})
        key.append(
            KeyRow(item=item, pair_id=found["pair_id"], agreement=found["agreement"], model_label=found["model_label"])
        )
    return BlindSheet(seed=seed, rows=rows, key=key)


#: Free-text columns whose CSV cells are guarded against spreadsheet formula injection.
_TEXT_COLUMNS = frozenset({"query", "response", "note"})
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(column: str, value: Any, escape_formulas: bool) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    text = str(value)
    if escape_formulas and column in _TEXT_COLUMNS and text.startswith(_FORMULA_START):
        return "'" + text
    return text


def write_inspection_sheet(
    path: str | Path, rows: Sequence[Mapping[str, Any]], fmt: Format | None = None, escape_formulas: bool = True
) -> int:
    """Write sheet rows as CSV (UTF-8 with BOM; ``initial`` as a JSON object; None as an empty
    cell) or JSON Lines, by ``fmt`` or the file suffix; atomic. Returns the number of rows.

    Untrusted text stays data: in the CSV a query, response or note starting with ``= + - @``, a
    tab or a carriage return gets a leading ``'`` (``escape_formulas``); JSON Lines keeps every
    text exactly.
    """
    kind = fmt or ("jsonl" if str(path).lower().endswith((".jsonl", ".ndjson")) else "csv")
    if kind == "jsonl":
        return write_jsonl(path, (dict(row) for row in rows))
    if kind != "csv":
        raise ValueError(f"an inspection sheet is written as csv or jsonl, not {kind!r}")
    columns = list(rows[0]) if rows else list(SHEET_COLUMNS)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_csv_cell(column, row.get(column), escape_formulas) for column in columns])
    atomic_write(path, [b"\xef\xbb\xbf", out.getvalue().encode("utf-8", "backslashreplace")])
    return len(rows)


def key_path(sheet: str | Path) -> Path:
    """The default key file of a blind sheet: ``<sheet stem>.key.jsonl`` beside it."""
    sheet = Path(sheet)
    return sheet.with_name(f"{sheet.stem}.key.jsonl")


def write_key(path: str | Path, key: Sequence[KeyRow]) -> int:
    """Write a blind sheet's key as JSON Lines (atomic)."""
    return write_jsonl(path, (row.model_dump(mode="json") for row in key))


def read_key(path: str | Path) -> dict[str, str]:
    """item → pair id from a key file; a bad line is an :class:`InputError` naming file and line."""
    mapping: dict[str, str] = {}
    for line, record in read_records(path, fmt="jsonl"):
        item, pair_id = record.get("item"), record.get("pair_id")
        if not isinstance(item, str) or not item:
            raise InputError.at(str(path), line, "item", "missing item id")
        if not isinstance(pair_id, str) or not pair_id:
            raise InputError.at(str(path), line, "pair_id", "missing pair id")
        if item in mapping:
            raise InputError.at(str(path), line, "item", f"item {shown(item)} given twice")
        mapping[item] = pair_id
    return mapping


def _parse_label(value: Any, name: str, line: int, field: str) -> Label | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise InputError.at(name, line, field, f"value {shown(value)} is not one of {', '.join(LABELS)}")
    label = value.strip().lower()
    if label not in LABELS:
        hint = did_you_mean(label, LABELS)
        raise InputError.at(name, line, field, f"value {shown(value)} is not one of {', '.join(LABELS)}{hint}")
    return label  # type: ignore[return-value]


def _row_pair_id(
    record: Mapping[str, Any], name: str, line: int, key: Mapping[str, str] | None
) -> tuple[str, str | None]:
    raw_id = record.get("pair_id")
    if isinstance(raw_id, int) and not isinstance(raw_id, bool):
        raw_id = str(raw_id)
    if isinstance(raw_id, str) and raw_id.strip():
        return raw_id.strip(), None
    item = record.get("item")
    if isinstance(item, str) and item.strip():
        if key is None:
            raise InputError.at(name, line, "item", "a blind sheet needs its key file (--sheet-key)")
        if item.strip() not in key:
            raise InputError.at(name, line, "item", f"unknown item {shown(item.strip())}: not in the key file")
        return key[item.strip()], item.strip()
    raise InputError.at(name, line, "pair_id", "missing pair id")


def _agreement(rows: Sequence[list[Label | None]]) -> ExpertAgreement | None:
    if not rows:
        return None
    complete = [r for r in rows if all(label is not None for label in r)]
    distinct = [len(set(r)) for r in complete]
    pairable = [r for r in rows if sum(label is not None for label in r) >= 2]

    def finite(value: float) -> float | None:
        return None if math.isnan(value) else value

    return ExpertAgreement(
        n_complete=len(complete),
        n_unanimous=distinct.count(1),
        n_majority=distinct.count(2),
        n_split=distinct.count(3),
        raw_agreement=finite(raw_agreement(complete)) if complete else None,
        fleiss_kappa=finite(fleiss_kappa(complete)) if complete else None,
        krippendorff_alpha=finite(krippendorff_alpha(pairable)) if pairable else None,
    )


def read_expert_labels(
    path: str | Path,
    known_ids: Collection[str],
    fmt: Format | None = None,
    encoding: str | None = None,
    key: Mapping[str, str] | None = None,
) -> ExpertLabels:
    """Read a filled-in inspection sheet, open or blind (``key``: item → pair id), see the
    module docstring for the rules."""
    name = str(path)
    known = known_ids if isinstance(known_ids, set | frozenset | dict) else set(known_ids)
    labels: dict[str, Label] = {}
    experts: dict[str, list[Label | None]] = {}
    status: dict[str, Status] = {}
    blank: list[str] = []
    incomplete: list[str] = []
    discussion: list[DiscussionItem] = []
    first_line: dict[str, int] = {}
    for line, record in read_records(path, fmt=fmt, encoding=encoding):
        pair_id, item = _row_pair_id(record, name, line, key)
        if pair_id not in known:
            hint = did_you_mean(pair_id, known) if len(known) <= 50_000 else ""
            raise InputError.at(name, line, "pair_id", f"unknown pair id {shown(pair_id)}{hint}")
        if pair_id in first_line:
            raise InputError.at(
                name, line, "pair_id", f"pair id {shown(pair_id)} already on line {first_line[pair_id]}"
            )
        first_line[pair_id] = line
        final = _parse_label(record.get("final"), name, line, "final")
        if all(column in record for column in EXPERT_COLUMNS):
            three = [_parse_label(record[column], name, line, column) for column in EXPERT_COLUMNS]
            experts[pair_id] = three
            given = [label for label in three if label is not None]
            if final is not None:
                labels[pair_id], status[pair_id] = final, "discussed"
            elif len(given) == 3 and len(set(given)) == 1:
                labels[pair_id], status[pair_id] = given[0], "unanimous"
            elif len(given) == 3:
                status[pair_id] = "discussion"
                discussion.append(
                    DiscussionItem(
                        item=item, pair_id=pair_id, line=line, experts=three,
                        query=record.get("query"), response=record.get("response"),
                    )
                )  # fmt: skip
            elif given:
                status[pair_id] = "incomplete"
                incomplete.append(pair_id)
            else:
                status[pair_id] = "blank"
                blank.append(pair_id)
        elif "expert" in record:
            single = final if final is not None else _parse_label(record["expert"], name, line, "expert")
            if single is None:
                status[pair_id] = "blank"
                blank.append(pair_id)
            else:
                labels[pair_id], status[pair_id] = single, "single"
        else:
            raise InputError.at(
                name, line, "expert_1", "missing field (the columns expert_1, expert_2, expert_3, or expert)"
            )
    return ExpertLabels(
        labels=labels,
        experts=experts,
        status=status,
        blank=blank,
        incomplete=incomplete,
        discussion=discussion,
        agreement=_agreement(list(experts.values())),
    )


def write_discussion(path: str | Path, items: Sequence[DiscussionItem]) -> int:
    """Write the discussion queue as JSON Lines (item, pair id, sheet line, the three labels, the texts)."""
    return write_jsonl(path, (item.model_dump(mode="json", exclude_none=True) for item in items))
