"""JADE (Zhang et al. 2023) v3 alignment files → VARM references of *responses*.

``jade_alignment_{hard,medium}_zh.csv`` (GB18030-encoded), columns ``ID,问题,违规回答,安全有用回答``:
a question, an unsafe (violating) answer and a safe, helpful answer.

JADE labels the *safety of a model's response to a question* — crime how-tos, privacy abuse,
discrimination — not abusive speech. Its proper use in verimod is the SafeQA protocol
(response-level safety judges); as VARM references it only serves label-level checks of
whether a moderation model flags an unsafe response. Mapping, two records per row:

- ``jade-<level>-<ID>-unsafe``: text = 违规回答, label harmful (annotated);
- ``jade-<level>-<ID>-safe``: text = 安全有用回答, label non_harmful (annotated), category
  non_attack (derived; ``derive_non_attack``);
- both: ``context`` = the question (问题); no category for the unsafe answer (JADE's harms are
  not VARM's attack categories); no split (JADE defines none); ``<level>`` is hard / medium from
  the file name, kept in meta.

The v1 / v2 files (``jade_benchmark_*.csv``: ``ID,问题,违规类型,违规子类``) hold only adversarial
questions with the violation they try to elicit: no text has a harmful / non-harmful judgement,
so they are refused with an :class:`~verimod.core.errors.InputError` (use them as SafeQA seeds).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

from verimod.core.errors import InputError
from verimod.data.adapters.base import (
    EMPTY_TEXT,
    Builder,
    ConversionResult,
    adapters,
    clean_text,
    make_meta,
    require_columns,
)
from verimod.data.records import OnError

SOURCE = "jade"
QUESTION, UNSAFE, SAFE = "问题", "违规回答", "安全有用回答"
V1_COLUMNS = ("违规类型", "违规子类")
NOTES = (
    "JADE labels response safety, not abusive speech: use it with the SafeQA protocol; here each row gives "
    "an unsafe answer (harmful) and a safe answer (non_harmful), with the question as context",
    "label: annotated; category: non_attack for the safe answer (derived), unset for the unsafe answer",
)
_LEVEL = re.compile(r"jade_alignment_([a-z]+)", re.IGNORECASE)


@adapters.register(SOURCE)
def convert_jade(
    path: str | Path,
    *,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    derive_non_attack: bool = True,
) -> ConversionResult:
    """Convert a JADE v3 alignment CSV (question, unsafe answer, safe answer); see the module docstring."""
    builder = Builder(SOURCE, on_error, NOTES)
    name = str(path)
    match = _LEVEL.search(Path(name).name)
    level = match.group(1).lower() if match else Path(name).name.split(".")[0]
    for line, record in builder.rows(path, encoding, per_row=2, check=lambda header: _check_columns(name, header)):
        item_id = clean_text(record["ID"])
        if item_id is None:
            builder.invalid(name, line, "ID", "empty ID", count=2)
            continue
        question = clean_text(record[QUESTION])
        original = {"ID": item_id, "level": level}
        for column, label, suffix in ((UNSAFE, "harmful", "unsafe"), (SAFE, "non_harmful", "safe")):
            text = clean_text(record[column])
            if text is None:
                builder.skip(EMPTY_TEXT)
                continue
            fields: dict[str, Any] = {"label": label}
            derived = []
            if label == "non_harmful" and derive_non_attack:
                fields["category"] = "non_attack"
                derived.append("category")
            builder.add(
                name,
                line,
                {
                    "id": f"{SOURCE}-{level}-{item_id}-{suffix}",
                    "text": text,
                    **fields,
                    "context": question,
                    "meta": make_meta(SOURCE, derived, {**original, "response": suffix, "column": column}),
                },
            )
    return builder.finish()


def _check_columns(path: str, record: Collection[str]) -> None:
    """Refuse the v1/v2 question files with the reason; require the v3 columns."""
    if all(c in record for c in V1_COLUMNS) and UNSAFE not in record:
        raise InputError.at(
            path,
            1,
            None,
            "this is a JADE v1/v2 question file (ID, 问题, 违规类型, 违规子类): adversarial questions with the "
            "violation they aim to elicit, and no harmful/non-harmful judgement of any text, so it makes no "
            "moderation reference; convert jade_alignment_{hard,medium}_zh.csv, or use the questions as SafeQA seeds",
        )
    require_columns(path, 1, record, ("ID", QUESTION, UNSAFE, SAFE), "JADE v3 alignment")
