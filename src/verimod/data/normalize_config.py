"""Configuration and report of the text-normalisation pipeline (see :mod:`verimod.data.normalize`).

:class:`NormalizeConfig` holds one field per rule and filter; every default is the choice a
corpus builder gets without asking, and the module docstring of :mod:`verimod.data.normalize`
says why each default is what it is. :class:`NormalizeReport` counts what every rule changed
and what every filter removed, so that ``records_in == records_out + sum(removed.values())``.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Why a record was removed, in the order the filters are tried (the first that applies wins).
REMOVAL_REASONS: tuple[str, ...] = ("missing_text", "empty", "symbol_only", "too_short", "spam", "duplicate")

RemovalReason = Literal["missing_text", "empty", "symbol_only", "too_short", "spam", "duplicate"]
Punctuation = Literal["keep", "ascii", "cjk"]
TopicMode = Literal["keep", "unwrap", "remove"]
OpenccConfig = Literal["t2s", "tw2s", "hk2s", "tw2sp"]


class Placeholders(BaseModel):
    """What each generalised item becomes. ``""`` removes the item instead.

    A placeholder must be NFKC-stable, printable and free of surrounding whitespace; the
    pipeline also checks that no rule rewrites it (so that normalising twice equals once).
    The defaults use ``<…>``, which no rule touches, rather than ``[…]`` (Weibo emoticon
    syntax, removed by the ``emoticons`` option).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = ""
    email: str = "<邮箱>"
    id_card: str = "<身份证号>"
    phone: str = "<手机号>"
    landline: str = "<电话>"
    qq: str = "<QQ号>"
    wechat: str = "<微信号>"
    mention: str = "@用户"

    @field_validator("*")
    @classmethod
    def _stable(cls, value: str) -> str:
        if value != value.strip() or len(value) > 20:
            raise ValueError("a placeholder has no surrounding whitespace and at most 20 characters")
        if unicodedata.normalize("NFKC", value) != value:
            raise ValueError(f"placeholder {value!r} is not NFKC-normalised")
        if any(not ch.isprintable() for ch in value):
            raise ValueError(f"placeholder {value!r} contains a non-printable character")
        return value


class NormalizeConfig(BaseModel):
    """Every option of the pipeline. Rules run in the fixed order of ``RULE_ORDER``
    (:mod:`verimod.data.normalize_rules`); filters in the order of ``REMOVAL_REASONS``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # --- text rules ---------------------------------------------------------------------------
    literal_escapes: bool = Field(True, description='decode \\r \\n \\t \\" \\uXXXX written out as text')
    html: bool = Field(True, description="unescape HTML entities (ending in ';') and remove HTML tags")
    controls: bool = Field(True, description="remove zero-width, bidi and control characters")
    keep_newlines: bool = Field(False, description="keep line breaks (as '\\n') instead of turning them into spaces")
    nfkc: bool = Field(True, description="Unicode NFKC, keeping Chinese full-width punctuation")
    punctuation: Punctuation = Field(
        "keep", description="keep: marks as typed; ascii: ，！？ → ,!? ; cjk: ,!? after Chinese → ，！？"
    )
    t2s: bool = Field(False, description="Traditional → Simplified with OpenCC (needs verimod[data])")
    opencc_config: OpenccConfig = Field("t2s", description="OpenCC configuration used when t2s is on")
    urls: bool = Field(True, description="remove URLs (or replace them with placeholders.url)")
    emoticons: bool = Field(False, description="remove Weibo bracket emoticons such as [哈哈] [doge]")
    emoji: bool = Field(False, description="remove emoji (incl. ZWJ sequences, keycaps, flags)")
    topics: TopicMode = Field("unwrap", description="#话题#: keep as is, unwrap to its text, or remove")
    emails: bool = True
    id_cards: bool = Field(True, description="resident ID numbers with a valid checksum → placeholder")
    phones: bool = Field(True, description="mainland mobile numbers → placeholder")
    landlines: bool = Field(True, description="landline numbers with an area code → placeholder")
    qq: bool = Field(True, description="QQ numbers after a cue (QQ, 扣扣, 群号…) → placeholder")
    wechat: bool = Field(True, description="WeChat ids after a cue (微信, vx, v信, wx…) → placeholder")
    mentions: bool = Field(True, description="@handles → placeholders.mention")
    whitespace: bool = Field(True, description="collapse whitespace runs, trim, drop spaces beside Chinese marks")
    remove_cjk_spaces: bool = Field(False, description="also drop a space between two Chinese characters")
    placeholders: Placeholders = Placeholders()

    # --- record filters -----------------------------------------------------------------------
    drop_empty: bool = Field(True, description="remove records whose text is empty after normalisation")
    drop_symbol_only: bool = Field(True, description="remove texts with no letter, digit or CJK character")
    min_length: int = Field(
        0, ge=0, description="remove texts shorter than this (see text_length); 0 = off (the default: see the README)"
    )
    drop_spam: bool = Field(True, description="remove advertisements/spam (normalize_patterns.json)")
    spam_threshold: int = Field(2, ge=1, description="spam when the matched weights sum to at least this")
    spam_patterns: Path | None = Field(None, description="a JSON file replacing the bundled spam patterns")
    drop_duplicates: bool = Field(True, description="remove exact duplicates of an earlier kept text")

    # --- records ------------------------------------------------------------------------------
    keep_original: str | None = Field(None, description="field that receives the original text (None: not kept)")
    missing_text: Literal["error", "reject"] = Field(
        "error", description="a record without a string text field: raise InputError, or reject it"
    )


class NormalizeReport(BaseModel):
    """What a run changed and removed.

    - ``changed[rule]``: texts that rule changed (over every text normalised, kept or not);
    - ``replaced[rule]``: items it replaced or removed (URLs, phone numbers, emoji…);
    - ``left_alone``: look-alikes deliberately not changed, e.g. ``id_cards.bad_checksum``;
    - ``removed[reason]``: records removed by each filter; ``spam_patterns``: removed spam
      records per matched pattern (a record can count under several patterns);
    - ``duplicate_conflicts``: removed duplicates whose label differs from the kept copy's (they
      are counted under ``removed["duplicate"]`` too), in ``conflict_groups`` distinct texts.

    The invariant ``records_in == records_out + sum(removed.values())`` is checked by
    :meth:`check` when the run ends (``complete`` is then True).
    """

    model_config = ConfigDict(extra="forbid")

    config: NormalizeConfig
    records_in: int = 0
    records_out: int = 0
    texts_changed: int = 0
    removed: dict[str, int] = Field(default_factory=lambda: dict.fromkeys(REMOVAL_REASONS, 0))
    changed: dict[str, int] = Field(default_factory=dict)
    replaced: dict[str, int] = Field(default_factory=dict)
    left_alone: dict[str, int] = Field(default_factory=dict)
    spam_patterns: dict[str, int] = Field(default_factory=dict)
    duplicate_conflicts: int = 0
    conflict_groups: int = 0
    complete: bool = False

    def check(self) -> None:
        """Raise ``AssertionError`` unless every record read is either kept or counted removed."""
        removed = sum(self.removed.values())
        if self.records_in != self.records_out + removed:
            raise AssertionError(
                f"normalisation lost records: {self.records_in} in != {self.records_out} out + {removed} removed"
            )

    def lines(self) -> list[str]:
        """A short human-readable summary, one fact per line (for the command line)."""
        out = [f"records: {self.records_in} in, {self.records_out} kept, {self.records_in - self.records_out} removed"]
        out += [f"  removed {reason}: {n}" for reason, n in self.removed.items() if n]
        if self.duplicate_conflicts:
            out.append(
                f"  of the duplicates, {self.duplicate_conflicts} carry another label than the kept copy "
                f"({self.conflict_groups} texts with conflicting labels)"
            )
        out.append(f"texts changed: {self.texts_changed}")
        for rule, n in self.changed.items():
            if n:
                items = self.replaced.get(rule, 0)
                out.append(f"  {rule}: {n} texts" + (f", {items} items" if items else ""))
        out += [f"  left alone {key}: {n}" for key, n in self.left_alone.items() if n]
        return out
