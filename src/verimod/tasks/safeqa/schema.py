"""Typed C-SafeQA records (pydantic v2, ``extra="forbid"``).

- :class:`SafeQuery`: a seed (base pool) or adversarial query, with its form, risk point,
  category and — for adversarial queries — the seed it came from and the transformation.
- :class:`SafeResponse`: one target model's answer to one query (an empty text is allowed and
  counts as a safe refusal).
- :class:`ReferenceLabel`: the shared label of a query–response pair with its provenance (the
  initial judges' labels, the adjudicator's, the experts', and — when the data set itself gives
  one, as JADE does — the source's gold label, kept beside the adjudicated label).
- :class:`JudgeOutput`: one judge's verdict on one pair: raw text, normalised label (safe |
  unsafe | disputed | invalid) and, for classifier-style judges, a probability of unsafe.
- :class:`SafePair`: a query, a response and (optionally) the reference label — the unit the
  metrics count.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

QueryForm = Literal["question", "declarative"]
QueryPool = Literal["base", "adversarial"]
Label = Literal["safe", "unsafe", "disputed"]
JudgeLabel = Literal["safe", "unsafe", "disputed", "invalid"]
Channel = Literal["programmatic", "template", "llm-rewrite"]
LABELS: tuple[str, ...] = ("safe", "unsafe", "disputed")
JUDGE_LABELS: tuple[str, ...] = ("safe", "unsafe", "disputed", "invalid")


def _id(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class SafeQuery(BaseModel):
    """A query put to target models."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    form: QueryForm = "question"
    pool: QueryPool = "base"
    seed_id: str | None = None  # the base query an adversarial one was made from
    method: str | None = None  # the transformation (adversarial queries)
    risk_point: str | None = None
    category: str | None = None
    meta: dict[str, Any] | None = None

    _coerce = field_validator("id", "seed_id", mode="before")(_id)


class SafeResponse(BaseModel):
    """One target model's answer to one query (empty text: a safe refusal)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query_id: str = Field(min_length=1)
    model: str = Field(min_length=1)
    text: str = ""
    error: str | None = None  # the model call failed: no answer to judge
    finish_reason: str | None = None  # "length": the answer was cut by the token budget
    generation: dict[str, Any] | None = None  # the generation options it was made with (provenance)

    _coerce = field_validator("query_id", mode="before")(_id)

    @property
    def pair_id(self) -> str:
        """``<query id>::<model>``: the identity of the query–response pair."""
        return f"{self.query_id}::{self.model}"


class Provenance(BaseModel):
    """Where a reference label came from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    initial: dict[str, JudgeLabel] = Field(default_factory=dict)  # judge name → label
    agreement: Literal["unanimous", "majority", "split", "none"] | None = None
    adjudicator: str | None = None
    adjudicated: JudgeLabel | None = None
    expert: Label | None = None
    experts: list[Label | None] | None = None  # the three blind expert labels, when inspected
    source: str | None = None  # e.g. "jade" when the data set itself gives the label
    source_label: Label | None = None  # the data set's own (gold) label, kept beside the adjudicated one


class ReferenceLabel(BaseModel):
    """The shared reference label of a query–response pair."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pair_id: str = Field(min_length=1)
    label: Label
    provenance: Provenance = Provenance()


class JudgeOutput(BaseModel):
    """One judge's verdict on one query–response pair."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pair_id: str = Field(min_length=1)
    judge: str = Field(min_length=1)
    raw: str | None = None
    label: JudgeLabel
    probability_unsafe: float | None = Field(None, ge=0.0, le=1.0)
    categories: list[str] = Field(default_factory=list)
    error: str | None = None
    reason: str | None = None  # why the output was normalised to "invalid" (or another note of the normaliser)
    format: str | None = None  # the judge format that built the request and read the answer
    finish_reason: str | None = None  # "length": the judge's answer was cut by the token budget
    generation: dict[str, Any] | None = None  # the generation options the verdict was made with (provenance)


class SafePair(BaseModel):
    """A query, one response to it and, when known, its reference label."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: SafeQuery
    response: SafeResponse
    reference: ReferenceLabel | None = None

    @property
    def pair_id(self) -> str:
        """The response's pair id."""
        return self.response.pair_id
