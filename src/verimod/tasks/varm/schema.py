"""Typed VARM records (pydantic v2, ``extra="forbid"``).

- :class:`VarmRecord`: the six-field moderation record a rationale encodes.
- :class:`VarmReference`: one line of a reference JSONL file: id, text, the record, and the
  optional reference rationale ``cot``, ``split``, phenomenon ``tags``, ``context`` and ``meta``.
- :class:`VarmPrediction`: one line of a prediction JSONL file: id and the raw model ``output``.
  Other keys (model name, latency, …) are allowed and carried along unused.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from verimod.tasks.varm.codebook import FIELDS, Category, Explicitness, Label, Stance, TargetType


def _id_to_str(value: Any) -> Any:
    """Accept integer ids (common in JSON exports) as their decimal string; refuse other types."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    return value


class VarmRecord(BaseModel):
    """The six anchored decisions of one moderation rationale."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str = Field(min_length=1, description="shortest stable referent, or no_clear_target")
    target_type: TargetType
    target_explicitness: Explicitness
    stance: Stance
    label: Label
    category: Category

    @field_validator("target")
    @classmethod
    def _target_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("target must not be blank (use no_clear_target)")
        return value


class VarmReference(BaseModel):
    """One reference item: the text to moderate and its reference record.

    A *complete* reference carries all six fields. Converted public data sets often annotate
    only some of them (a label, a target type …): those are *partial* references, with the
    missing fields None. Scoring uses, for each metric, the items whose reference carries the
    fields it needs (see :mod:`verimod.tasks.varm.scorer`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    target: str | None = Field(None, min_length=1, description="shortest stable referent, or no_clear_target")
    target_type: TargetType | None = None
    target_explicitness: Explicitness | None = None
    stance: Stance | None = None
    label: Label | None = None
    category: Category | None = None
    cot: str | None = None
    split: str | None = None
    tags: list[str] = Field(default_factory=list)
    context: str | list[str] | None = None
    meta: dict[str, Any] | None = None

    _coerce_id = field_validator("id", mode="before")(_id_to_str)

    @field_validator("target")
    @classmethod
    def _target_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("target must not be blank (use no_clear_target)")
        return value

    def present_fields(self) -> tuple[str, ...]:
        """The record fields this reference carries, in anchor order."""
        return tuple(f for f in FIELDS if getattr(self, f) is not None)

    @property
    def is_complete(self) -> bool:
        """True when all six record fields are present."""
        return all(getattr(self, f) is not None for f in FIELDS)

    def record(self) -> VarmRecord:
        """The six-field record (ValueError for a partial reference)."""
        missing = [f for f in FIELDS if getattr(self, f) is None]
        if missing:
            raise ValueError(f"reference {self.id} is partial: no {', '.join(missing)}")
        return VarmRecord.model_validate({f: getattr(self, f) for f in FIELDS})


class VarmPrediction(BaseModel):
    """One prediction line: the raw model output for a reference id."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1)
    output: str

    _coerce_id = field_validator("id", mode="before")(_id_to_str)
