"""ToxiCN (Lu et al., ACL 2023; Zhihu and Tieba comments) → VARM references.

``ToxiCN_1.0.csv``: ``platform,topic,content,toxic,toxic_one_hot,toxic_type,toxic_type_one_hot,
expression,expression_one_hot,target,length,num_attacked`` (the layout the data set's README
documents: ``toxic`` 0/1; ``toxic_type`` 0 non-toxic, 1 general offensive language, 2 hate
speech; ``expression`` 0 non-hate, 1 explicit hate, 2 implicit hate, 3 reporting; ``target`` a
one-hot list: LGBTQ, Region, Sexism, Racism, others, non-hate). ToxiCN is CC BY-NC-ND 4.0:
verimod reads it, never ships it.

Mapping:

- ``toxic`` 1 → harmful, 0 → non_harmful (annotated; the source gold, always kept).
- category: general offensive language (``toxic_type`` 1) → general_abuse; hate speech
  (``toxic_type`` 2) → from the target list: LGBTQ → sogi, Region and Racism →
  region_ethnicity, Sexism → gender; "others" or targets that map to two different categories
  → unset. Non-toxic → non_attack (derived; ``derive_non_attack``).
- stance: toxic items with ``expression`` 0, 1 or 2 → attack_or_endorse (the author's own
  offensive or hateful speech); unset otherwise.
- **Convention conflict**: ``expression`` 3 (*reporting*) items are toxic in ToxiCN — a comment
  that reports or denounces discrimination is labelled toxic hate speech. The VARM codebook
  calls reporting ``quote_or_report`` / ``oppose_attack`` and non-harmful. The source label is
  kept (harmful), the stance left unset, the item tagged ``source_counts_reporting_as_toxic``,
  and the conflict reported with its count.
- ``expression`` 1 / 2 are about how the *hate* is expressed (explicit words vs irony,
  metaphor, coded terms), not about whether the target is named: target_explicitness is not
  set; they become the tags ``explicit_hate`` / ``implicit_hate``.
- ``platform`` and ``topic`` go to ``meta.original`` with the labels; no split; id:
  ``toxicn-r<row>`` (0-based data row: the file has no id column).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from verimod.data.adapters.base import (
    EMPTY_TEXT,
    Builder,
    ConversionResult,
    adapters,
    clean_text,
    columns_check,
    make_meta,
)
from verimod.data.records import OnError

SOURCE = "toxicn"
COLUMNS = ("content", "toxic", "toxic_type", "expression", "target")
TARGETS = ("LGBTQ", "Region", "Sexism", "Racism", "others", "non-hate")
TARGET_CATEGORY = {"LGBTQ": "sogi", "Region": "region_ethnicity", "Sexism": "gender", "Racism": "region_ethnicity"}
EXPRESSION_TAGS = {"1": "explicit_hate", "2": "implicit_hate", "3": "source_counts_reporting_as_toxic"}
NOTES = (
    "label: annotated (toxic 1 → harmful, 0 → non_harmful)",
    "category: annotated — toxic_type 1 (general offensive) → general_abuse; toxic_type 2 (hate) → the target "
    "list (LGBTQ → sogi, Region / Racism → region_ethnicity, Sexism → gender; others or two categories: unset); "
    "non_attack for non-toxic items (derived)",
    "stance: annotated — attack_or_endorse for toxic items expressed explicitly, implicitly or as general "
    "offence (expression 0/1/2); unset for reporting (expression 3) and non-toxic items",
    "target, target_type, target_explicitness: not annotated (expression is about the hate, not the referent)",
)


def _one_hot(value: object, size: int) -> list[int] | None:
    """A one-hot cell (``"[0, 1, 0]"``) as a list of 0/1, or None when it is not one."""
    try:
        parsed = json.loads(str(value))
    except (TypeError, ValueError):
        return None
    if not isinstance(parsed, list) or len(parsed) != size or any(v not in (0, 1) for v in parsed):
        return None
    return parsed


@adapters.register(SOURCE)
def convert_toxicn(
    path: str | Path,
    *,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    derive_non_attack: bool = True,
) -> ConversionResult:
    """Convert ToxiCN_1.0.csv (Chinese toxic language); see the module docstring."""
    builder = Builder(SOURCE, on_error, NOTES)
    name = str(path)
    counts: Counter[str] = Counter()
    rows = builder.rows(path, encoding, check=columns_check(name, COLUMNS, "ToxiCN"))
    for number, (line, record) in enumerate(rows):
        item = _convert_row(builder, name, line, record, derive_non_attack, counts)
        if item is not None:
            builder.add(name, line, {"id": f"{SOURCE}-r{number}", **item})
    if counts["reporting"]:
        builder.conflict(
            f"{counts['reporting']} item(s) with expression 3 (reporting) are toxic in ToxiCN; the codebook calls "
            "reporting or denouncing abuse non-harmful (quote_or_report / oppose_attack). Kept as harmful (source "
            "gold), stance unset, tagged source_counts_reporting_as_toxic"
        )
    if counts["other_target"]:
        builder.note(f"{counts['other_target']} hate item(s) target 'others' only: category unset")
    if counts["mixed_target"]:
        builder.note(f"{counts['mixed_target']} hate item(s) target groups of two VARM categories: category unset")
    return builder.finish()


def _convert_row(
    builder: Builder, path: str, line: int, record: dict[str, Any], derive_non_attack: bool, counts: Counter[str]
) -> dict[str, Any] | None:
    """The reference fields of one row (None when it is skipped; counted by ``builder``)."""
    text = clean_text(record["content"])
    if text is None:
        builder.skip(EMPTY_TEXT)
        return None
    toxic = clean_text(record["toxic"]) or ""
    toxic_type = clean_text(record["toxic_type"]) or ""
    expression = clean_text(record["expression"]) or ""
    targets = _one_hot(record["target"], len(TARGETS))
    if toxic not in ("0", "1"):
        builder.invalid(path, line, "toxic", f"ToxiCN toxic must be 0 or 1, got {toxic!r}")
        return None
    if toxic_type not in ("0", "1", "2") or (toxic_type == "0") != (toxic == "0"):
        builder.invalid(path, line, "toxic_type", f"toxic_type {toxic_type!r} does not fit toxic {toxic!r}")
        return None
    if expression not in ("0", "1", "2", "3") or (expression != "0" and toxic_type != "2"):
        builder.invalid(path, line, "expression", f"expression {expression!r} does not fit toxic_type {toxic_type!r}")
        return None
    if targets is None:
        builder.invalid(path, line, "target", f"expected a one-hot list of {len(TARGETS)}, got {record['target']!r}")
        return None
    named = [TARGETS[k] for k, v in enumerate(targets) if v]
    fields: dict[str, Any] = {"label": "harmful" if toxic == "1" else "non_harmful"}
    derived: list[str] = []
    if toxic == "0":
        if derive_non_attack:
            fields["category"] = "non_attack"
            derived.append("category")
    elif toxic_type == "1":
        fields["category"] = "general_abuse"
    else:
        categories = {TARGET_CATEGORY[t] for t in named if t in TARGET_CATEGORY}
        if len(categories) == 1:
            fields["category"] = categories.pop()
        elif categories:
            counts["mixed_target"] += 1
        else:
            counts["other_target"] += 1
    if toxic == "1" and expression != "3":
        fields["stance"] = "attack_or_endorse"
    counts["reporting"] += expression == "3"
    tags = [EXPRESSION_TAGS[expression]] if expression in EXPRESSION_TAGS else []
    original = {
        "platform": record.get("platform"),
        "topic": record.get("topic"),
        "toxic": toxic,
        "toxic_type": toxic_type,
        "expression": expression,
        "target": named,
    }
    return {"text": text, **fields, "tags": tags, "meta": make_meta(SOURCE, derived, original)}
