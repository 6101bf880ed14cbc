"""Seed construction tools of SoftHateBench (stage 1): label mapping, reading and cleaning.

The paper's stage 1: source labels are mapped to hate / non-hate and only hate is kept;
near-duplicates (similarity ≥ 0.80, within one target group) are removed
(:mod:`.seed_similarity`); URLs, mentions and hashtags are stripped and texts shorter than 5
tokens dropped (this module); items that a strict majority of 11 detectors (> 7 of 11) label
hate are kept, and per group the medoid standpoint is taken, mutually entailed (NLI, both
directions) with its original sentence (:mod:`.seed_selection`, :mod:`.standpoints`).

**Label mapping** (:func:`davidson_label`, :func:`ishate_label`, :func:`hatecheck_label`,
:func:`read_seeds`):

- Davidson et al. 2017 ``class``: 0 hate speech → ``hate``; 2 neither → ``non_hate``; 1
  offensive → ``offensive`` option: ``"non_hate"`` (default: Davidson's own annotation
  separates offensive language from hate speech, and the paper's seeds are hate), ``"hate"``,
  or ``"drop"`` (neither class). Group: none (Davidson has no target column).
- ISHate ``hateful_layer``: ``HS`` → hate, ``Non-HS`` → non_hate; ``implicit_layer``
  (Explicit HS / Implicit HS) and ``subtlety_layer`` (Subtle / Non-Subtle) are kept in
  ``original`` (they are set only on HS rows). Group: ``target``. The train file holds
  34,642 augmented rows (``aug_method`` other than ``orig``; no ``message_id``), dropped
  unless ``include_augmented``: they are machine paraphrases of other rows.
- HateCheck ``label_gold``: ``hateful`` → hate, ``non-hateful`` → non_hate. Group:
  ``target_ident`` (empty for 292 cases). HateCheck's non-hateful includes abuse of
  non-protected targets (``target_group_nh``, ``target_indiv_nh``).

**Cleaning** (:func:`clean_text`): HTML entities are unescaped; URLs (``http(s)://…``,
``www.…``), a retweet marker before a mention (``RT @user:``), @mentions (``@`` not after an
ASCII letter, digit, ``_`` or ``.``, so not e-mail addresses; the name runs to the next
non-word character, with a trailing colon), Weibo topics (``#话题#``: a Han character and no
space between the two ``#``) and hashtags (``#word``) are removed, and whitespace is
collapsed. **Tokens** (:func:`count_tokens`): English — whitespace-separated tokens;
Chinese — characters that are letters or digits (Unicode L*/N*; punctuation and symbols are
not tokens); ``auto`` uses the Chinese rule when the text contains a Han character. Texts
with fewer than ``min_tokens`` (5) tokens are dropped.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from verimod.core.errors import InputError, Problem, did_you_mean
from verimod.data.records import OnError, read_records

SeedLabel = Literal["hate", "non_hate"]
Source = Literal["davidson", "ishate", "hatecheck"]
OffensivePolicy = Literal["non_hate", "hate", "drop"]
Lang = Literal["en", "zh", "auto"]
SOURCES: tuple[str, ...] = ("davidson", "ishate", "hatecheck")

# ---------------------------------------------------------------------------------------------
# label mapping and reading


@dataclass(frozen=True)
class SeedItem:
    """One seed text: id, text, binary label, source data set, target group (as the source
    names it; None where the source has none) and the source's own label fields, unchanged."""

    id: str
    text: str
    label: SeedLabel
    source: str
    group: str | None = None
    original: dict[str, Any] = field(default_factory=dict)


def davidson_label(value: object, offensive: OffensivePolicy = "non_hate") -> SeedLabel | None:
    """Davidson ``class`` → label (module docstring); None when ``offensive="drop"`` drops it.

    >>> davidson_label("0"), davidson_label(2), davidson_label(1, offensive="hate")
    ('hate', 'non_hate', 'hate')
    """
    code = str(value).strip()
    if code == "0":
        return "hate"
    if code == "2":
        return "non_hate"
    if code == "1":
        if offensive not in ("non_hate", "hate", "drop"):
            raise ValueError(f"offensive must be non_hate, hate or drop, got {offensive!r}")
        return None if offensive == "drop" else offensive
    raise ValueError(f"class must be 0 (hate), 1 (offensive) or 2 (neither), got {str(value)!r}")


_ISHATE = {"hs": "hate", "non-hs": "non_hate"}
_HATECHECK = {"hateful": "hate", "non-hateful": "non_hate"}


def _lookup(table: dict[str, str], value: object, name: str) -> SeedLabel:
    key = str(value).strip().casefold()
    if key not in table:
        choices = {"HS": "hs", "Non-HS": "non-hs"} if table is _ISHATE else {k: k for k in table}
        hint = did_you_mean(key, list(choices.values()))
        raise ValueError(f"{name} must be {' or '.join(choices)}, got {str(value)!r}{hint}")
    return table[key]  # type: ignore[return-value]


def ishate_label(value: object) -> SeedLabel:
    """ISHate ``hateful_layer`` → label: ``HS`` → hate, ``Non-HS`` → non_hate."""
    return _lookup(_ISHATE, value, "hateful_layer")


def hatecheck_label(value: object) -> SeedLabel:
    """HateCheck ``label_gold`` → label: ``hateful`` → hate, ``non-hateful`` → non_hate."""
    return _lookup(_HATECHECK, value, "label_gold")


@dataclass
class SeedRead:
    """What :func:`read_seeds` read: items and exact counts (``converted + Σ skipped == read``)."""

    source: str
    path: str
    items: list[SeedItem] = field(default_factory=list)
    read: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)

    @property
    def converted(self) -> int:
        """Number of items read."""
        return len(self.items)

    def counts(self) -> dict[str, int]:
        """``{"read", "converted", "hate", "non_hate", <skip reason>…}`` for reports."""
        out = {"read": self.read, "converted": self.converted, "hate": 0, "non_hate": 0}
        for item in self.items:
            out[item.label] += 1
        out.update(self.skipped)
        return out


_COLUMNS: dict[str, tuple[str, str]] = {  # source → (text column, label column)
    "davidson": ("tweet", "class"),
    "ishate": ("text", "hateful_layer"),
    "hatecheck": ("test_case", "label_gold"),
}


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value) or not str(value).strip()


def _ishate_split(path: str) -> str:
    stem = Path(path).name.split(".")[0]
    return stem.removeprefix("ishate_") or "data"


def read_seeds(
    path: str | Path,
    source: Source,
    *,
    offensive: OffensivePolicy = "non_hate",
    include_augmented: bool = False,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
) -> SeedRead:
    """Read one file of a seed source as :class:`SeedItem` s (mapping in the module docstring).

    Files go through :func:`verimod.data.records.read_records` (Davidson and HateCheck CSV,
    ISHate Parquet). Ids: ``davidson-<index>``, ``hatecheck-<case_id>``,
    ``ishate-<split>-r<row>`` (ISHate's ``message_id`` repeats). Skipped rows are counted by
    reason (``empty text``, ``offensive dropped``, ``augmented``, ``invalid value``,
    ``malformed row``). A missing column raises :class:`~verimod.core.errors.InputError`;
    an invalid label raises it (``on_error="fail"``) or is counted (``"skip"``), naming file,
    line and field.
    """
    if source not in _COLUMNS:
        raise InputError.at(str(path), None, None, f"unknown seed source {source!r}{did_you_mean(source, SOURCES)}")
    name = str(path)
    text_column, label_column = _COLUMNS[source]
    stream = read_records(name, encoding=encoding, on_error=on_error)
    result = SeedRead(source, name)
    for line, record in stream:
        result.read += 1
        if result.read == 1:
            for column in (text_column, label_column):
                if column not in record:
                    raise InputError.at(name, line, column, f"missing column for {source} (columns: {list(record)})")
        try:
            item = _seed_item(source, name, line, record, offensive, include_augmented)
        except ValueError as exc:
            problem = Problem(name, line, label_column, str(exc))
            if on_error == "fail":
                raise InputError(problem) from None
            result.problems.append(problem)
            result.skipped["invalid value"] += 1
            continue
        if isinstance(item, str):
            result.skipped[item] += 1
        else:
            result.items.append(item)
    for problem in stream.skipped:
        result.read += 1
        result.problems.append(problem)
        result.skipped["malformed row"] += 1
    return result


def _seed_item(
    source: str, path: str, line: int, record: dict[str, Any], offensive: OffensivePolicy, include_augmented: bool
) -> SeedItem | str:
    """The item of one row, or the reason it is skipped; ValueError for an invalid label."""
    augmented = str(record.get("aug_method") or "orig").strip() != "orig"
    if source == "ishate" and augmented and not include_augmented:
        return "augmented"
    if _blank(record[_COLUMNS[source][0]]):
        return "empty text"
    text = str(record[_COLUMNS[source][0]]).strip()
    if source == "davidson":
        label = davidson_label(record["class"], offensive)
        if label is None:
            return "offensive dropped"
        index = str(record.get("", "")).strip() or f"r{line}"
        counts = ("count", "hate_speech", "offensive_language", "neither", "class")
        return SeedItem(f"davidson-{index}", text, label, source, None, {k: record.get(k) for k in counts})
    if source == "ishate":
        label = ishate_label(record["hateful_layer"])
        layers = ("message_id", "source", "hateful_layer", "implicit_layer", "subtlety_layer", "aug_method")
        original = {k: record.get(k) for k in layers if k in record}
        group = None if _blank(record.get("target")) else str(record["target"]).strip()
        return SeedItem(f"ishate-{_ishate_split(path)}-r{line}", text, label, source, group, original)
    label = hatecheck_label(record["label_gold"])
    keys = ("case_id", "functionality", "label_gold", "target_ident", "direction")
    group = None if _blank(record.get("target_ident")) else str(record["target_ident"]).strip()
    case = str(record.get("case_id", "")).strip() or f"r{line}"
    return SeedItem(f"hatecheck-{case}", text, label, source, group, {k: record.get(k) for k in keys})


# ---------------------------------------------------------------------------------------------
# cleaning and tokens

_URL = re.compile(r"(?i)(?:\bhttps?://|\bwww\.)\S*")
_RETWEET = re.compile(r"(?<![\w@])RT\s*:?\s*(?=@)")
_MENTION = re.compile(r"(?<![A-Za-z0-9_.@])@[\w-]+:?")
_TOPIC = re.compile(r"#(?=[^#\s]*[\u3400-\u9fff])[^#\s]{1,48}#")
_HASHTAG = re.compile(r"(?<![A-Za-z0-9_&#])#\w+")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")


def clean_text(text: str, *, hashtags: Literal["remove", "keep_word"] = "remove") -> str:
    """``text`` without URLs, mentions and hashtags (module docstring); whitespace collapsed.

    ``hashtags="keep_word"`` removes only the ``#`` signs (``#Democrat`` → ``Democrat``).

    >>> clean_text("!!! RT @mayasolovely: As a woman &amp; #MAGA http://t.co/x")
    '!!! As a woman &'
    >>> clean_text("#热门话题# 这些人@小明 真是")
    '这些人 真是'
    """
    out = html.unescape(text)
    out = _URL.sub(" ", out)
    out = _RETWEET.sub(" ", out)
    out = _MENTION.sub(" ", out)
    if hashtags == "remove":
        out = _TOPIC.sub(" ", out)
        out = _HASHTAG.sub(" ", out)
    elif hashtags == "keep_word":
        out = _TOPIC.sub(lambda m: " " + m.group(0).strip("#") + " ", out)
        out = re.sub(r"(?<![A-Za-z0-9_&#])#(?=\w)", "", out)
    else:
        raise ValueError(f"hashtags must be 'remove' or 'keep_word', got {hashtags!r}")
    return " ".join(out.split())


def count_tokens(text: str, lang: Lang = "auto") -> int:
    """Tokens of ``text``: whitespace tokens (``en``), letter/digit characters (``zh``), or
    ``zh`` when the text contains a Han character else ``en`` (``auto``).

    >>> count_tokens("they are a risk to us"), count_tokens("这些人就是危险！"), count_tokens("我爱 NBA")
    (6, 7, 5)
    """
    if lang == "auto":
        lang = "zh" if _HAN.search(text) else "en"
    if lang == "en":
        return len(text.split())
    if lang == "zh":
        return sum(1 for ch in text if unicodedata.category(ch)[0] in "LN")
    raise ValueError(f"lang must be en, zh or auto, got {lang!r}")


@dataclass
class CleanResult:
    """Cleaned items (same ids, cleaned text) and the ids dropped as too short."""

    items: list[SeedItem]
    dropped: list[str]


def clean_items(
    items: Sequence[SeedItem],
    *,
    min_tokens: int = 5,
    lang: Lang = "auto",
    hashtags: Literal["remove", "keep_word"] = "remove",
) -> CleanResult:
    """:func:`clean_text` every item and drop those with fewer than ``min_tokens`` tokens."""
    kept: list[SeedItem] = []
    dropped: list[str] = []
    for item in items:
        text = clean_text(item.text, hashtags=hashtags)
        if count_tokens(text, lang) < min_tokens:
            dropped.append(item.id)
        else:
            kept.append(SeedItem(item.id, text, item.label, item.source, item.group, item.original))
    return CleanResult(kept, dropped)
