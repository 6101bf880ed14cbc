"""COLD (Chinese Offensive Language Dataset, Deng et al., EMNLP 2022) → VARM references.

Files ``train.csv`` / ``dev.csv`` / ``test.csv`` (UTF-8 with BOM), columns
``,split,topic,label,fine-grained-label,TEXT`` (the first column is an unnamed row index;
``fine-grained-label`` only in the test file).

Mapping:

- test file (``fine-grained-label``): 1 attack individual → harmful, single, attack_or_endorse;
  2 attack group → harmful, group, attack_or_endorse; 3 anti-bias → non_harmful,
  oppose_attack, category non_attack; 0 other non-offensive → non_harmful, category non_attack.
- train / dev: ``label`` 1 → harmful, 0 → non_harmful.
- category non_attack for every non_harmful item is *derived* (codebook: non_harmful ⇔
  non_attack; ``derive_non_attack``); for harmful items ``derive_category`` (default on) gives
  topic race / region → region_ethnicity and gender → gender, also *derived*: the topic is what
  the post is about, not a judgement of what the comment attacks.
- split: the file name (train / dev / test) — the real dev.csv says ``train`` in its split
  column for 3,215 of its rows; the file is the official split, so the name wins — else the
  split column; ``split=...`` overrides both. The split column's value stays in meta.
- id: ``cold-<split>-<index>`` from the index column when it is unique in the file (test);
  train.csv and dev.csv repeat indices, so their ids use the 0-based
  data row instead: ``cold-train-r0`` is the first data row (pandas ``iloc`` order).
"""

from __future__ import annotations

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

SOURCE = "cold"
SPLITS = ("train", "dev", "test")
TOPIC_CATEGORY = {"race": "region_ethnicity", "region": "region_ethnicity", "gender": "gender"}
#: fine-grained label → (label, target_type, stance); None: not annotated.
FINE_GRAINED: dict[str, tuple[str, str | None, str | None]] = {
    "0": ("non_harmful", None, None),
    "1": ("harmful", "single", "attack_or_endorse"),
    "2": ("harmful", "group", "attack_or_endorse"),
    "3": ("non_harmful", None, "oppose_attack"),
}
COARSE = {"1": "harmful", "0": "non_harmful"}
#: Measured on the bundled varm-open set (tests/data/test_adapters.py recomputes it): offensive
#: COLD comments whose annotation passes record a disputed non-harmful reading.
OFFENSIVE_READ_NON_HARMFUL = "484 of 1,204 (40 %)"
NOTES = (
    "label: annotated (test: fine-grained-label; train/dev: label)",
    "target_type, stance: annotated in the test file only (fine-grained 1 → single, 2 → group, "
    "both attack_or_endorse; 3 anti-bias → oppose_attack)",
    "category: derived — non_attack for non_harmful (codebook); region_ethnicity / gender from the topic "
    "of harmful items when derive_category is on",
)


@adapters.register(SOURCE)
def convert_cold(
    path: str | Path,
    *,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    derive_category: bool = True,
    derive_non_attack: bool = True,
    split: str | None = None,
) -> ConversionResult:
    """Convert one COLD CSV file (train, dev or test); see the module docstring for the mapping."""
    builder = Builder(SOURCE, on_error, NOTES)
    name = str(path)
    stem = Path(name).name.split(".")[0].lower()
    file_split = split or (stem if stem in SPLITS else None)
    converted: list[tuple[int, int, str, str | None, dict[str, Any]]] = []
    indices: Counter[str] = Counter()
    disagree = 0
    check = columns_check(name, ("", "split", "topic", "label", "TEXT"), "COLD")
    for number, (line, record) in enumerate(builder.rows(path, encoding, check=check)):
        fine = "fine-grained-label" in builder.columns
        index = str(record[""]).strip()
        indices[index] += 1
        row_split = file_split or clean_text(record["split"])
        disagree += row_split != clean_text(record["split"])
        item = _convert_row(builder, name, line, record, bool(fine), derive_category, derive_non_attack)
        if item is not None:
            converted.append((line, number, index, row_split, item))
    by_index = all(n == 1 for n in indices.values())
    if not by_index:
        builder.note(f"{Path(name).name}: the index column repeats; ids use the 0-based data row (r0, r1, …)")
    for line, number, index, row_split, item in converted:
        key = index if by_index else f"r{number}"
        item_id = f"{SOURCE}-{row_split}-{key}" if row_split else f"{SOURCE}-{key}"
        builder.add(name, line, {"id": item_id, "split": row_split, **item})
    if disagree and file_split:
        builder.note(
            f"{Path(name).name}: {disagree} row(s) name another split in the split column; split = {file_split}"
        )
    harmful = sum(item.get("label") == "harmful" for *_, item in converted)
    if harmful:
        builder.conflict(
            f"{harmful} item(s) are offensive in COLD, whose offensive label also covers some quotation and "
            "counter-speech that the VARM codebook calls non-harmful (convention e; in varm-open "
            f"{OFFENSIVE_READ_NON_HARMFUL} of the offensive COLD comments carry a disputed non-harmful reading "
            "from the annotation passes). Kept as harmful (source gold); stance set only where the test "
            "file's fine-grained label fixes it"
        )
    return builder.finish()


def _convert_row(
    builder: Builder,
    path: str,
    line: int,
    record: dict[str, Any],
    fine: bool,
    derive_category: bool,
    derive_non_attack: bool,
) -> dict[str, Any] | None:
    """The reference fields of one row (None when it is skipped; counted by ``builder``)."""
    text = clean_text(record["TEXT"])
    if text is None:
        builder.skip(EMPTY_TEXT)
        return None
    coarse = clean_text(record["label"]) or ""
    if coarse not in COARSE:
        builder.invalid(path, line, "label", f"COLD label must be 0 or 1, got {coarse!r}")
        return None
    original: dict[str, Any] = {
        "index": record[""],
        "split": record["split"],
        "topic": record["topic"],
        "label": coarse,
    }
    fields: dict[str, Any] = {"label": COARSE[coarse]}
    if fine:
        grain = clean_text(record["fine-grained-label"]) or ""
        if grain not in FINE_GRAINED or FINE_GRAINED[grain][0] != COARSE[coarse]:
            builder.invalid(
                path, line, "fine-grained-label", f"fine-grained label {grain!r} does not fit label {coarse!r}"
            )
            return None
        original["fine-grained-label"] = grain
        _, target_type, stance = FINE_GRAINED[grain]
        fields.update(target_type=target_type, stance=stance)
    derived: list[str] = []
    topic = clean_text(record["topic"])
    if fields["label"] == "non_harmful" and derive_non_attack:
        fields["category"] = "non_attack"
        derived.append("category")
    elif fields["label"] == "harmful" and derive_category and topic in TOPIC_CATEGORY:
        fields["category"] = TOPIC_CATEGORY[topic]
        derived.append("category")
    return {"text": text, **fields, "meta": make_meta(SOURCE, derived, original)}
