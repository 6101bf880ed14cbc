"""The toxic reasoning schema of ToxiREX as pydantic v2 models (``extra="forbid"``).

One :class:`ToxicReasoning` per comment. JSON uses the paper's camelCase variable names
(``justInappropriate``, ``hasImplication``, ``implCategory``, ``subjectTokens``,
``authorPrefer`` …); Python code uses snake_case attributes. Both spellings validate; dumps
use the JSON names (``serialize_by_alias``). Booleans and ``messageNr`` are strict: JSON
``true``/``false`` and integers only (``"yes"`` or ``"1"`` is a schema violation, not coerced).

Annotation order and what each answer unlocks (see :mod:`verimod.tasks.toxirex.stopping`)::

    toxicity, counternarrative          always
    justInappropriate                   if toxicity or counternarrative
    hasImplication                      if justInappropriate is false
    implication, propositionComposition,
    implSarcasm, implStereotype,
    attitudes                           if hasImplication is true

The *proposition composition* (:class:`PropositionComposition`): a content category
(Situation | Quality | Behavior) with a polarity (Negative | Positive) predicated of a
subject, at one or more times (past / present / future), with a specificity (personal: one
individual; group), optionally compared to an *other*, plus the implication topic (a short
phrase naming what is predicated) and the tokens that express it (``implTokens``).

Roles (:class:`Role`) say who a subject or other is in the conversation: the author, another
conversation participant, or someone else. "A group that includes them" is expressed by
specificity ``group`` (subject) or a non-null ``group`` description (other): role ``author`` +
group = the author's in-group.

Stakeholder attitudes (:class:`Attitudes`) are on the ordinal scale Very low < Low < Medium <
High < Very high, or Not applicable (too little information to tell): author belief,
author desire/preference (``authorPrefer``), author intent (``authorIntent``: the author
means to bring it about), general-public belief (``typicalBelief``), expert belief.

The JSON Schema for structured outputs is :func:`toxic_reasoning_json_schema`.
"""

from __future__ import annotations

import copy
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator

_CONFIG = ConfigDict(
    extra="forbid", frozen=True, validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
)


class Role(StrEnum):
    """Who a subject or other is in the conversation."""

    AUTHOR = "author"
    PARTICIPANT = "conversation participant"
    SOMEONE_ELSE = "someone else"


class Specificity(StrEnum):
    """Whether the implication is about one individual or about a group."""

    PERSONAL = "personal"
    GROUP = "group"


class ContentCategory(StrEnum):
    """What is predicated of the subject."""

    SITUATION = "Situation"  # circumstances, condition, wellbeing, harm coming to them
    QUALITY = "Quality"  # inherent quality, nature, abilities
    BEHAVIOR = "Behavior"  # choices, actions, lifestyle, beliefs


class Polarity(StrEnum):
    """Negative: something for the subject to be sad about or ashamed of; Positive: happy or proud."""

    NEGATIVE = "Negative"
    POSITIVE = "Positive"


class Temporality(StrEnum):
    """When the implication is meant to hold (multi-label)."""

    PAST = "past"
    PRESENT = "present"
    FUTURE = "future"


TEMPORALITY_ORDER: tuple[Temporality, ...] = (Temporality.PAST, Temporality.PRESENT, Temporality.FUTURE)


class GroupType(StrEnum):
    """The characteristic that defines a subject group."""

    SEXUAL_ORIENTATION = "Sexual orientation"
    GENDER = "Gender"
    DISABILITY = "Disability"
    RACE_ETHNICITY = "Race/Ethnicity"
    AGE = "Age"
    RELIGION = "Religion"
    POLITICAL_AFFILIATION = "Political affiliation"
    SOCIAL_BELIEF = "Social belief"
    BODY_IMAGE = "Body image"
    ADDICTION = "Addiction"
    SOCIOECONOMIC_STATUS = "Socioeconomic status"
    PROFESSION = "Profession"
    NATIONALITY = "Nationality"
    OTHER = "Other"


class Attitude(StrEnum):
    """An ordinal attitude from Very low to Very high, or Not applicable when it cannot be told."""

    VERY_LOW = "Very low"
    LOW = "Low"
    MEDIUM = "Medium"
    HIGH = "High"
    VERY_HIGH = "Very high"
    NOT_APPLICABLE = "Not applicable"


ATTITUDE_SCALE: tuple[Attitude, ...] = (
    Attitude.VERY_LOW,
    Attitude.LOW,
    Attitude.MEDIUM,
    Attitude.HIGH,
    Attitude.VERY_HIGH,
)


def attitude_rank(value: Attitude) -> int | None:
    """Position on the scale, Very low = 0 … Very high = 4; None for Not applicable."""
    return None if value is Attitude.NOT_APPLICABLE else ATTITUDE_SCALE.index(value)


def _tokens_clean(tokens: list[str]) -> list[str]:
    if any(not t.strip() for t in tokens):
        raise ValueError("tokens must not be empty strings")
    return tokens


class Subject(BaseModel):
    """The subject the proposition is predicated of."""

    model_config = _CONFIG

    role: Role = Field(
        description="Who the subject is in the conversation: the author, another conversation "
        "participant, or someone else (with specificity 'group': a group that includes them)."
    )
    group: str | None = Field(
        None,
        description="Short description of the subject group; required when specificity is 'group', "
        "null when it is 'personal'.",
    )
    group_type: GroupType | None = Field(
        None,
        alias="groupType",
        description="The characteristic that defines the subject group; "
        "required when specificity is 'group', null when it is 'personal'.",
    )
    tokens: list[str] = Field(
        alias="subjectTokens",
        description="Tokens of the comment (or its context) that refer to the subject, "
        "copied verbatim in order; may be empty.",
    )

    _clean = field_validator("tokens")(_tokens_clean)


class Other(BaseModel):
    """The optional other the subject is (explicitly or implicitly) compared to."""

    model_config = _CONFIG

    role: Role = Field(description="Who the other is in the conversation.")
    group: str | None = Field(
        None, description="Short description of the other group, or null when the other is one individual."
    )
    tokens: list[str] = Field(
        alias="otherTokens", description="Tokens that refer to the other, copied verbatim in order; may be empty."
    )

    _clean = field_validator("tokens")(_tokens_clean)


class PropositionComposition(BaseModel):
    """The proposition at the heart of the implication."""

    model_config = _CONFIG

    category: ContentCategory = Field(
        alias="implCategory",
        description="Situation: the subject's circumstances, condition, wellbeing or harm "
        "coming to them; Quality: their nature, inherent qualities or abilities; Behavior: their choices, actions, "
        "lifestyle or beliefs.",
    )
    polarity: Polarity = Field(
        alias="implPolarity",
        description="Negative if the implication being true is something for the subject to "
        "be sad about or ashamed of; Positive if it is something to be happy about or proud of.",
    )
    temporality: list[Temporality] = Field(
        alias="implTemporality",
        min_length=1,
        description="When the implication is meant to hold: one or more of past, present, future.",
    )
    specificity: Specificity = Field(description="'personal' if about one individual, 'group' if about a group.")
    subject: Subject
    has_other: StrictBool = Field(
        alias="hasOther", description="True if the subject is (explicitly or implicitly) compared to an other."
    )
    other: Other | None = Field(None, description="The other; required when hasOther is true, else null.")
    topic: str = Field(
        alias="implTopic",
        min_length=1,
        description="A short phrase naming what is predicated of the subject (e.g. 'violence', 'laziness').",
    )
    impl_tokens: list[str] = Field(
        alias="implTokens", description="Tokens that express the implication topic, copied verbatim in order."
    )

    _clean = field_validator("impl_tokens")(_tokens_clean)

    @field_validator("temporality")
    @classmethod
    def _temporality_set(cls, value: list[Temporality]) -> list[Temporality]:
        if len(set(value)) != len(value):
            raise ValueError("implTemporality must not repeat a value")
        return sorted(value, key=TEMPORALITY_ORDER.index)

    @field_validator("topic")
    @classmethod
    def _topic_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("implTopic must not be blank")
        return value


class Attitudes(BaseModel):
    """Stakeholder attitudes towards the proposition (ordinal, or Not applicable)."""

    model_config = _CONFIG

    author_belief: Attitude = Field(
        alias="authorBelief", description="How strongly the author seems to believe the proposition."
    )
    author_desire: Attitude = Field(
        alias="authorPrefer",
        description="How strongly the author seems to wish or prefer that the proposition is (or becomes) true.",
    )
    author_intent: Attitude = Field(
        alias="authorIntent", description="How strongly the author seems to intend to bring the proposition about."
    )
    public_belief: Attitude = Field(
        alias="typicalBelief", description="How strongly the general public would believe the proposition."
    )
    expert_belief: Attitude = Field(
        alias="expertBelief", description="How strongly experts would believe the proposition."
    )


class ToxicReasoning(BaseModel):
    """One comment's annotation; later fields are null where the annotation stopped."""

    model_config = _CONFIG

    toxicity: StrictBool = Field(
        description="True if the comment might be perceived as potentially toxic, polarizing "
        "or otherwise negative toward a group or individual."
    )
    counternarrative: StrictBool = Field(
        description="True if the comment is an argument-based reply to the previous "
        "comment, providing an alternative perspective."
    )
    just_inappropriate: StrictBool | None = Field(
        None,
        alias="justInappropriate",
        description="Only when toxicity or counternarrative is true: true if the "
        "comment is only toxic because of inappropriate words (slurs, name-calling) with no toxic implication.",
    )
    has_implication: StrictBool | None = Field(
        None,
        alias="hasImplication",
        description="Only when justInappropriate is false: true if a toxic "
        "implication (explicit or implicit) can be identified.",
    )
    implication: str | None = Field(
        None,
        description="Only when hasImplication is true: the main implication as one sentence that starts "
        "with the subject and states what is implied about them.",
    )
    composition: PropositionComposition | None = Field(
        None, alias="propositionComposition", description="Only when hasImplication is true."
    )
    impl_sarcasm: StrictBool | None = Field(
        None, alias="implSarcasm", description="Only when hasImplication is true: conveyed through sarcasm."
    )
    impl_stereotype: StrictBool | None = Field(
        None,
        alias="implStereotype",
        description="Only when hasImplication is true: plays into a widely known stereotype.",
    )
    attitudes: Attitudes | None = Field(None, description="Only when hasImplication is true.")

    @field_validator("implication")
    @classmethod
    def _implication_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("implication must not be blank")
        return value


class MessageReasoning(ToxicReasoning):
    """The annotation of one message of the thread, numbered as shown (1-based)."""

    message_nr: StrictInt = Field(alias="messageNr", ge=1, description="The number of the message annotated.")


class ThreadReasoning(BaseModel):
    """What a model returns for one sub-thread: one entry per message it annotates."""

    model_config = _CONFIG

    comments: list[MessageReasoning] = Field(
        description="One entry per message of the thread, each with its messageNr."
    )


#: Parse-failure classes (see :mod:`verimod.tasks.toxirex.parse`) plus ``missing`` (no output).
ERROR_CLASSES: tuple[str, ...] = ("invalid_json", "schema_violation", "stopping_violation", "missing", "request_failed")


def _id(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class AnnotationRecord(BaseModel):
    """One line of an annotation file: one annotator's reasoning for one comment."""

    model_config = _CONFIG

    thread_id: str = Field(alias="threadId", min_length=1)
    comment_id: str = Field(alias="commentId", min_length=1)
    annotator: str = Field(min_length=1)
    lang: str | None = None
    reasoning: ToxicReasoning

    _coerce = field_validator("thread_id", "comment_id", "annotator", mode="before")(_id)


class PredictionRecord(BaseModel):
    """One line of a prediction file: a model's reasoning for one comment, or why there is none.

    ``reasoning`` is None exactly when ``errorClass`` is set (a parse failure of the model's
    output, see :mod:`verimod.tasks.toxirex.parse`); such a comment is scored as invalid on every
    variable, never dropped.
    """

    model_config = _CONFIG

    thread_id: str | None = Field(None, alias="threadId")
    comment_id: str = Field(alias="commentId", min_length=1)
    reasoning: ToxicReasoning | None = None
    error_class: str | None = Field(None, alias="errorClass")
    error: str | None = None
    model: str | None = None
    parser_version: str | None = Field(None, alias="parserVersion")

    _coerce = field_validator("thread_id", "comment_id", mode="before")(_id)

    @field_validator("error_class")
    @classmethod
    def _error_class_known(cls, value: str | None) -> str | None:
        if value is not None and value not in ERROR_CLASSES:
            raise ValueError(f"errorClass must be one of {', '.join(ERROR_CLASSES)}")
        return value

    @model_validator(mode="after")
    def _one_of(self) -> PredictionRecord:
        if (self.reasoning is None) == (self.error_class is None):
            raise ValueError("give either reasoning or errorClass (exactly one)")
        return self


# ---------------------------------------------------------------------------------------------
# JSON Schema export
# ---------------------------------------------------------------------------------------------

#: Keywords that OpenAI strict structured outputs (and several guided-decoding backends) do
#: not accept; the parser enforces what they expressed.
_UNSUPPORTED = frozenset(
    {"default", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "minimum", "maximum", "format"}
)


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            name = node["$ref"].split("/")[-1]
            merged = {**_inline(copy.deepcopy(defs[name]), defs), **{k: v for k, v in node.items() if k != "$ref"}}
            return _inline(merged, defs)
        return {k: _inline(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _strict(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items() if k not in _UNSUPPORTED and k != "title"}
        if out.get("type") == "object" and "properties" in out:
            props = out["properties"]
            if "messageNr" in props:  # generated first: the model names the message, then annotates it
                out["properties"] = props = {"messageNr": props["messageNr"], **props}
            out["required"] = list(props)
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def toxic_reasoning_json_schema(scope: Literal["thread", "comment"] = "thread") -> dict[str, Any]:
    """A self-contained JSON Schema (Draft 2020-12) for structured outputs.

    ``scope="thread"``: a :class:`ThreadReasoning` (one entry per message); ``"comment"``: one
    :class:`ToxicReasoning`. The schema uses the JSON (camelCase) names and has no ``$ref``
    (definitions are inlined), every object lists all its properties as ``required`` (nullable
    fields are ``anyOf [..., null]``) with ``additionalProperties: false``, and keywords strict
    structured-output modes refuse (``default``, ``minItems``, ``minLength``, ``minimum`` …) are
    removed. It is therefore a *relaxation* of the pydantic models: every valid instance is
    accepted; what the removed keywords and the stopping logic express is enforced by
    :mod:`verimod.tasks.toxirex.parse`. Usable as OpenAI ``response_format`` (see
    :func:`response_format`).
    """
    model: type[BaseModel] = ThreadReasoning if scope == "thread" else ToxicReasoning
    raw = model.model_json_schema(by_alias=True, mode="validation")
    schema = _strict(_inline(raw, raw.get("$defs", {})))
    schema["title"] = model.__name__
    return schema


def response_format(scope: Literal["thread", "comment"] = "thread", name: str = "toxic_reasoning") -> dict[str, Any]:
    """OpenAI-compatible ``response_format`` for :func:`toxic_reasoning_json_schema`."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "strict": True, "schema": toxic_reasoning_json_schema(scope)},
    }
