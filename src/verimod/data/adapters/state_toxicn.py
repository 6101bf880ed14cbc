"""STATE ToxiCN (Bai et al. 2025; span-level Chinese hate speech) → VARM references.

Two layouts, both as the data set's repository and the CCL25-Eval Task 10 documentation describe:

- **quadruple columns** (``data/train.json``, ``data/test.json``): a JSON list of objects
  ``{"id", "content", "platform", "topic", "sen_hate": "0"|"1", "Q1 Target", "Q1 Argument",
  "Q1 Group", "Q1 hateful", "Q2 Target", …}``;
- **output string** (the evaluation format): ``{"id", "content", "output"}`` with
  ``output = "Target | Argument | Targeted Group | Hateful [SEP] … [END]"``.

A quadruple is (Target span, Argument span, Targeted Group, hateful / non-hate); Target may be
``NULL`` (no explicit target); Group is ``Region``, ``Racism``, ``Sexism``, ``LGBTQ``,
``others`` or ``non-hate``, possibly several joined by commas. STATE ToxiCN's licence does not
allow verimod to ship it; verimod reads it.

Mapping:

- label: ``sen_hate`` 1 → harmful, 0 → non_harmful (annotated; in the output layout, harmful
  when any quadruple is ``hate``).
- target: the Target span of the hateful quadruples when they name exactly one distinct span
  and it occurs in the text (annotated, with target_explicitness explicit, annotated too: the
  span is written in the text); several distinct hateful targets → unset (tagged
  ``multi_target``); ``NULL`` → unset (tagged ``null_target``). Non-hateful items: unset (the
  quadruple's "target" there is whatever the comment is about, not a referent in VARM's sense).
- category: from the Groups of the hateful quadruples — Region and Racism → region_ethnicity,
  Sexism → gender, LGBTQ → sogi; "others" or two VARM categories → unset. Non-hateful:
  non_attack (derived; ``derive_non_attack``).
- stance: attack_or_endorse for harmful items (derived: the codebook's harmful ⇒ attack).
- the Argument spans go to ``meta.original`` with the quadruples. No split; id: ``state-<id>``.

Convention conflicts reported (the source value is kept): an item labelled hateful
(``sen_hate`` 1) without a hateful quadruple, or the reverse.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from verimod.data.adapters.base import (
    EMPTY_TEXT,
    MALFORMED,
    Builder,
    ConversionResult,
    adapters,
    clean_text,
    make_meta,
)
from verimod.data.records import OnError

SOURCE = "state-toxicn"
GROUP_CATEGORY = {"Region": "region_ethnicity", "Racism": "region_ethnicity", "Sexism": "gender", "LGBTQ": "sogi"}
GROUPS = (*GROUP_CATEGORY, "others", "non-hate")
NULL_TARGET = "NULL"
_QUAD_KEY = re.compile(r"^Q(\d+) (Target|Argument|Group|hateful)$")
NOTES = (
    "label: annotated (sen_hate 1 → harmful, 0 → non_harmful; output layout: any hateful quadruple)",
    "target, target_explicitness: annotated — the one distinct Target span of the hateful quadruples, when it "
    "occurs in the text (explicit); unset for NULL, several targets, or non-hateful items",
    "category: annotated from the hateful quadruples' Groups (Region / Racism → region_ethnicity, Sexism → "
    "gender, LGBTQ → sogi; others or two categories: unset); non_attack for non-hateful items (derived)",
    "stance: derived — attack_or_endorse for harmful items (codebook)",
)


def parse_output(output: str) -> list[dict[str, str]]:
    """The quadruples of an output string ``"T | A | G | hateful [SEP] … [END]"``
    (``ValueError`` when a quadruple does not have four parts)."""
    body = output.strip()
    if body.endswith("[END]"):
        body = body[: -len("[END]")]
    quads = []
    for part in body.split("[SEP]"):
        if not part.strip():
            continue
        pieces = [p.strip() for p in part.split("|")]
        if len(pieces) != 4:
            raise ValueError(
                f"quadruple {part.strip()!r} has {len(pieces)} parts, not 4 (Target | Argument | Group | hateful)"
            )
        quads.append(dict(zip(("Target", "Argument", "Group", "hateful"), pieces, strict=True)))
    return quads


def _quadruples(record: dict[str, Any]) -> list[dict[str, str]]:
    """The quadruple columns of a record, in Q-number order."""
    found: dict[int, dict[str, str]] = {}
    for key, value in record.items():
        match = _QUAD_KEY.match(str(key))
        if match:
            found.setdefault(int(match.group(1)), {})[match.group(2)] = "" if value is None else str(value).strip()
    return [found[k] for k in sorted(found)]


@adapters.register(SOURCE)
def convert_state_toxicn(
    path: str | Path,
    *,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    derive_non_attack: bool = True,
) -> ConversionResult:
    """Convert a STATE ToxiCN JSON file (quadruple columns or output strings); see the module docstring."""
    builder = Builder(SOURCE, on_error, NOTES)
    name = str(path)
    counts: Counter[str] = Counter()
    for line, record in builder.rows(path, encoding):
        if "content" not in record or "id" not in record:
            builder.invalid(name, line, "content", "a STATE ToxiCN item needs 'id' and 'content'", reason=MALFORMED)
            continue
        item = _convert(builder, name, line, record, derive_non_attack, counts)
        if item is not None:
            builder.add(name, line, item)
    if counts["label_without_quad"]:
        builder.conflict(
            f"{counts['label_without_quad']} item(s) labelled hateful (sen_hate 1) have no hateful quadruple: "
            "kept as harmful (source gold), no target or category"
        )
    if counts["quad_without_label"]:
        builder.conflict(
            f"{counts['quad_without_label']} item(s) labelled non-hateful (sen_hate 0) have a hateful quadruple: "
            "kept as non_harmful (source gold), the quadruple ignored"
        )
    for reason in ("multi_target", "null_target", "target_not_in_text", "other_group", "mixed_group"):
        if counts[reason]:
            builder.note(f"{counts[reason]} harmful item(s): {reason.replace('_', ' ')} → field(s) unset")
    return builder.finish()


def _convert(
    builder: Builder, path: str, line: int, record: dict[str, Any], derive_non_attack: bool, counts: Counter[str]
) -> dict[str, Any] | None:
    text = clean_text(record["content"])
    if text is None:
        builder.skip(EMPTY_TEXT)
        return None
    try:
        quads = parse_output(str(record["output"])) if "output" in record else _quadruples(record)
    except ValueError as exc:
        builder.invalid(path, line, "output", str(exc))
        return None
    for quad in quads:
        groups = [g.strip() for g in quad.get("Group", "").split(",") if g.strip()]
        if quad.get("hateful") not in ("hate", "non-hate") or any(g not in GROUPS for g in groups):
            builder.invalid(path, line, "quadruple", f"unknown hateful / group value in {quad}")
            return None
    hateful = [q for q in quads if q["hateful"] == "hate"]
    if "sen_hate" in record:
        flag = clean_text(record["sen_hate"]) or ""
        if flag not in ("0", "1"):
            builder.invalid(path, line, "sen_hate", f"must be 0 or 1, got {flag!r}")
            return None
        harmful = flag == "1"
    else:
        harmful = bool(hateful)
    counts["label_without_quad"] += harmful and not hateful
    counts["quad_without_label"] += not harmful and bool(hateful)
    fields: dict[str, Any] = {"label": "harmful" if harmful else "non_harmful"}
    derived: list[str] = []
    tags: list[str] = []
    if harmful and hateful:
        fields["stance"] = "attack_or_endorse"
        derived.append("stance")
        targets = list(dict.fromkeys(q["Target"] for q in hateful))
        if len(targets) > 1:
            counts["multi_target"] += 1
            tags.append("multi_target")
        elif targets[0] == NULL_TARGET:
            counts["null_target"] += 1
            tags.append("null_target")
        elif targets[0] and targets[0] in text:
            fields.update(target=targets[0], target_explicitness="explicit")
        else:
            counts["target_not_in_text"] += 1
        named = {g.strip() for q in hateful for g in q["Group"].split(",")}
        categories = {GROUP_CATEGORY[g] for g in named if g in GROUP_CATEGORY}
        if len(categories) == 1:
            fields["category"] = categories.pop()
        else:
            counts["mixed_group" if categories else "other_group"] += 1
    elif harmful:
        fields["stance"] = "attack_or_endorse"
        derived.append("stance")
    elif derive_non_attack:
        fields["category"] = "non_attack"
        derived.append("category")
    original = {
        "id": record["id"],
        "platform": record.get("platform"),
        "topic": record.get("topic"),
        "sen_hate": record.get("sen_hate"),
        "quadruples": quads,
    }
    return {
        "id": f"state-{str(record['id']).strip()}",
        "text": text,
        **fields,
        "tags": tags,
        "meta": make_meta(SOURCE, derived, original),
    }
