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

from verimod.tasks.varm.codebook import Category, Explicitness, Label, Stance, TargetType


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


class VarmReference(VarmRecord):
    """One reference item: the text to moderate and its reference record."""

    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    cot: str | None = None
    split: str | None = None
    tags: list[str] = Field(default_factory=list)
    context: str | list[str] | None = None
    meta: dict[str, Any] | None = None

    _coerce_id = field_validator("id", mode="before")(_id_to_str)

    def record(self) -> VarmRecord:
        """The six-field record alone."""
        return VarmRecord(
            target=self.target,
            target_type=self.target_type,
            target_explicitness=self.target_explicitness,
            stance=self.stance,
            label=self.label,
            category=self.category,
        )


class VarmPrediction(BaseModel):
    """One prediction line: the raw model output for a reference id."""

    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1)
    output: str

    _coerce_id = field_validator("id", mode="before")(_id_to_str)
