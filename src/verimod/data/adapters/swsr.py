"""SWSR (Sina Weibo Sexism Review, Jiang et al. 2022) → VARM references.

``SexComment.csv``: ``index,weibo_id,comment_text,gender,location,like,date,label,category,target``;
``SexWeibo.csv`` (the parent posts) beside it, joined on ``weibo_id``.

Mapping:

- ``label`` 1 (sexist) → harmful, 0 → non_harmful. SWSR annotates *sexism* only: a comment
  labelled 0 is not sexist, which is not a judgement that it is free of every other abuse.
- sexist items: category gender (annotated: sexism is a gender attack by definition);
  ``target`` I → single, G → group where given.
- non-sexist items: category non_attack, *derived* (codebook; ``derive_non_attack``).
- ``context``: the parent post's ``weibo_text`` (``posts=`` or ``SexWeibo.csv`` beside the file).
- meta.original: ``index``, ``weibo_id``, ``label``, ``category`` (MA / SCB / SO / SA), ``target``.
- Dropped, never copied anywhere: the commenter's gender, location, like count and date, and
  every user column of the post file (personal data, not needed).
- split: SWSR defines none. ``split="verimod"`` sets each comment's split from verimod's split
  of SWSR (``resources/splits/swsr.json``: train / dev / test, stratified, near-duplicates and
  comments under one post kept in one split); ``split=PATH`` reads another file of that layout
  (``{"train": [ids], "dev": [ids], "test": [ids]}``). A comment the file does not list gets no
  split (counted in the notes). id: ``swsr-<index>``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verimod.core.errors import InputError
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
from verimod.resources import resource_path

SOURCE = "swsr"
POSTS_FILE = "SexWeibo.csv"
#: Measured on the bundled varm-open set (tests/data/test_adapters.py recomputes it): label-0
#: SWSR comments whose annotation passes record a disputed harmful reading.
NOT_SEXIST_READ_HARMFUL = "39 of 392 (10 %)"
LABELS = {"1": "harmful", "0": "non_harmful"}
TARGETS = {"I": "single", "G": "group"}
CATEGORIES = ("MA", "SCB", "SO", "SA")
VERIMOD_SPLIT = "splits/swsr.json"
SPLIT_NAMES = ("train", "dev", "test")
COLUMNS = ("index", "weibo_id", "comment_text", "label", "category", "target")
NOTES = (
    "label: annotated (1 sexist → harmful, 0 → non_harmful; SWSR annotates sexism only)",
    "category: gender for sexist items (annotated); non_attack for the others (derived)",
    "target_type: annotated for sexist items (I → single, G → group)",
    "context: the parent Weibo post; commenter gender/location/like/date dropped (personal data)",
)


@adapters.register(SOURCE)
def convert_swsr(
    path: str | Path,
    *,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    posts: str | Path | None = None,
    derive_non_attack: bool = True,
    split: str | None = None,
) -> ConversionResult:
    """Convert SWSR's SexComment.csv, with the parent posts as context; see the module docstring."""
    builder = Builder(SOURCE, on_error, NOTES)
    name = str(path)
    splits = _split_table(split)
    parents = _posts(builder, Path(name), posts, encoding)
    no_parent = unlisted = 0
    for line, record in builder.rows(path, encoding, check=columns_check(name, COLUMNS, "SWSR SexComment")):
        item = _convert_row(builder, name, line, record, derive_non_attack)
        if item is None:
            continue
        weibo_id = str(record["weibo_id"]).strip()
        context = parents.get(weibo_id) if parents is not None else None
        no_parent += parents is not None and context is None
        item_split = splits.get(item["id"]) if splits is not None else None
        unlisted += splits is not None and item_split is None
        builder.add(name, line, {**item, "context": context, "split": item_split})
    if no_parent:
        builder.note(f"{no_parent} comment(s) have no parent post in {POSTS_FILE}: no context")
    not_sexist = sum(r.label == "non_harmful" for r in builder.result.references)
    if not_sexist:
        builder.conflict(
            f"{not_sexist} item(s) have SWSR label 0, which means 'not sexist', not 'not abusive': a non-sexist "
            "insult stays non_harmful (source gold; convention e of the VARM codebook), category non_attack derived "
            f"(in varm-open {NOT_SEXIST_READ_HARMFUL} of the label-0 SWSR comments carry a disputed harmful reading)"
        )
    if splits is not None:
        builder.note(f"split: from {split} ({len(splits)} ids listed); {unlisted} comment(s) not listed: no split")
    return builder.finish()


def _split_table(split: str | None) -> dict[str, str] | None:
    """``{id: split}`` from verimod's SWSR split (``"verimod"``) or a split file (a path)."""
    if split is None:
        return None
    path = resource_path(VERIMOD_SPLIT) if split == "verimod" else Path(split)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError.at(str(path), None, "split", f"cannot read the split file: {exc}") from None
    table: dict[str, str] = {}
    for name in SPLIT_NAMES:
        ids = data.get(name, []) if isinstance(data, dict) else None
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise InputError.at(str(path), None, name, "expected a list of ids (swsr-<index>)")
        for item in ids:
            if table.setdefault(item, name) != name:
                raise InputError.at(str(path), None, name, f"id {item!r} is listed in two splits")
    return table


def _posts(builder: Builder, comments: Path, posts: str | Path | None, encoding: str | None) -> dict[str, str] | None:
    """``{weibo_id: post text}`` from the post file (None, with a note, when there is none beside)."""
    if posts is None:
        beside = comments.with_name(POSTS_FILE)
        if not beside.is_file():
            builder.note(f"no {POSTS_FILE} beside {comments.name}: converted without context (give posts=PATH)")
            return None
        posts = beside
    table: dict[str, str] = {}
    rows = builder.side_rows(posts, encoding, check=columns_check(posts, ("weibo_id", "weibo_text"), "SWSR SexWeibo"))
    for line, record in rows:
        key = str(record["weibo_id"]).strip()
        text = clean_text(record["weibo_text"])
        if key in table:
            builder.invalid(str(posts), line, "weibo_id", f"post {key!r} occurs twice; the first is kept", count=0)
        elif text is not None:
            table[key] = text
    return table


def _convert_row(
    builder: Builder, path: str, line: int, record: dict[str, Any], derive_non_attack: bool
) -> dict[str, Any] | None:
    """The reference fields of one comment (None when it is skipped; counted by ``builder``)."""
    text = clean_text(record["comment_text"])
    if text is None:
        builder.skip(EMPTY_TEXT)
        return None
    label = clean_text(record["label"]) or ""
    category = clean_text(record["category"])
    target = clean_text(record["target"])
    if label not in LABELS:
        builder.invalid(path, line, "label", f"SWSR label must be 0 or 1, got {label!r}")
        return None
    if category is not None and category not in CATEGORIES:
        choices = ", ".join(CATEGORIES)
        builder.invalid(path, line, "category", f"SWSR category must be one of {choices}, got {category!r}")
        return None
    if target is not None and target not in TARGETS:
        builder.invalid(path, line, "target", f"SWSR target must be I or G, got {target!r}")
        return None
    if label == "0" and (category or target):
        builder.invalid(path, line, "category", "a non-sexist comment (label 0) has a category or target")
        return None
    fields: dict[str, Any] = {"label": LABELS[label]}
    derived: list[str] = []
    if label == "1":
        fields["category"] = "gender"
        if target is not None:
            fields["target_type"] = TARGETS[target]
    elif derive_non_attack:
        fields["category"] = "non_attack"
        derived.append("category")
    original = {
        "index": record["index"],
        "weibo_id": record["weibo_id"],
        "label": label,
        "category": category,
        "target": target,
    }
    return {
        "id": f"{SOURCE}-{str(record['index']).strip()}",
        "text": text,
        **fields,
        "meta": make_meta(SOURCE, derived, original),
    }
