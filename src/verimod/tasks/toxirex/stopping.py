"""Stopping logic of the ToxiREX annotation, and the flat variable view of an annotation.

The first questions decide whether a comment is annotated in full:

1. ``toxicity`` and ``counternarrative`` are always answered. If both are false, stop.
2. ``justInappropriate`` is answered; if true (only toxic because of inappropriate words), stop.
3. ``hasImplication`` is answered; if false (no toxic implication can be identified), stop.
4. Everything else is answered: ``implication``, the proposition composition, ``implSarcasm``,
   ``implStereotype`` and the five attitudes. Inside the composition two more branches:
   ``subjectGroup`` and ``subjectGroupType`` only when ``specificity`` is ``group``; ``other``,
   ``otherGroup`` and ``otherTokens`` only when ``hasOther`` is true (``otherGroup`` may be
   null there: the other is then one individual).

A variable is *reached* by an instance when the instance's own earlier answers lead to it
(:func:`reached_variables`). A well-formed instance fills exactly the reached variables
(:func:`stopping_violations`); ``allow_unreached=True`` relaxes this for models that predict
every variable at once (the *optimistic* evaluation mode uses those values).

:data:`VARIABLES` lists every variable in annotation order with its kind and its JSON path;
:func:`variable_values` flattens a :class:`~verimod.tasks.toxirex.schema.ToxicReasoning` into
``{variable: value}`` (None where absent), the view every metric works on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from verimod.tasks.toxirex.schema import (
    Attitude,
    ContentCategory,
    GroupType,
    Polarity,
    Role,
    Specificity,
    Temporality,
    ToxicReasoning,
)

VariableKind = Literal["binary", "categorical", "multilabel", "tokens", "text", "ordinal"]
Stage = Literal["gate", "implication", "composition", "attitude"]


@dataclass(frozen=True, slots=True)
class Variable:
    """One annotation variable: its paper name, kind, JSON path and vocabulary."""

    name: str
    kind: VariableKind
    path: str
    stage: Stage
    values: tuple[str, ...] = ()


def _vocab(enum: type[Any]) -> tuple[str, ...]:
    return tuple(member.value for member in enum)


_C = "propositionComposition"
VARIABLES: tuple[Variable, ...] = (
    Variable("toxicity", "binary", "toxicity", "gate"),
    Variable("counternarrative", "binary", "counternarrative", "gate"),
    Variable("justInappropriate", "binary", "justInappropriate", "gate"),
    Variable("hasImplication", "binary", "hasImplication", "gate"),
    Variable("implication", "text", "implication", "implication"),
    Variable("implCategory", "categorical", f"{_C}.implCategory", "composition", _vocab(ContentCategory)),
    Variable("implPolarity", "categorical", f"{_C}.implPolarity", "composition", _vocab(Polarity)),
    Variable("implTemporality", "multilabel", f"{_C}.implTemporality", "composition", _vocab(Temporality)),
    Variable("specificity", "categorical", f"{_C}.specificity", "composition", _vocab(Specificity)),
    Variable("subject", "categorical", f"{_C}.subject.role", "composition", _vocab(Role)),
    Variable("subjectGroup", "text", f"{_C}.subject.group", "composition"),
    Variable("subjectGroupType", "categorical", f"{_C}.subject.groupType", "composition", _vocab(GroupType)),
    Variable("subjectTokens", "tokens", f"{_C}.subject.subjectTokens", "composition"),
    Variable("hasOther", "binary", f"{_C}.hasOther", "composition"),
    Variable("other", "categorical", f"{_C}.other.role", "composition", _vocab(Role)),
    Variable("otherGroup", "text", f"{_C}.other.group", "composition"),
    Variable("otherTokens", "tokens", f"{_C}.other.otherTokens", "composition"),
    Variable("implTopic", "text", f"{_C}.implTopic", "composition"),
    Variable("implTokens", "tokens", f"{_C}.implTokens", "composition"),
    Variable("implSarcasm", "binary", "implSarcasm", "implication"),
    Variable("implStereotype", "binary", "implStereotype", "implication"),
    Variable("authorBelief", "ordinal", "attitudes.authorBelief", "attitude", _vocab(Attitude)),
    Variable("authorPrefer", "ordinal", "attitudes.authorPrefer", "attitude", _vocab(Attitude)),
    Variable("authorIntent", "ordinal", "attitudes.authorIntent", "attitude", _vocab(Attitude)),
    Variable("typicalBelief", "ordinal", "attitudes.typicalBelief", "attitude", _vocab(Attitude)),
    Variable("expertBelief", "ordinal", "attitudes.expertBelief", "attitude", _vocab(Attitude)),
)
VARIABLE_BY_NAME: dict[str, Variable] = {v.name: v for v in VARIABLES}
VARIABLE_NAMES: tuple[str, ...] = tuple(v.name for v in VARIABLES)
GATE_VARIABLES: tuple[str, ...] = ("toxicity", "counternarrative", "justInappropriate", "hasImplication")
ATTITUDE_VARIABLES: tuple[str, ...] = tuple(v.name for v in VARIABLES if v.stage == "attitude")
#: Proposition-composition variables used by summary sentences and the disagreement analysis.
COMPOSITION_VARIABLES: tuple[str, ...] = tuple(v.name for v in VARIABLES if v.stage == "composition")
SUBJECT_GROUP_VARIABLES: tuple[str, ...] = ("subjectGroup", "subjectGroupType")
OTHER_VARIABLES: tuple[str, ...] = ("other", "otherGroup", "otherTokens")
#: Reached variables that may still be null (the other is then one individual).
NULLABLE_WHEN_REACHED: frozenset[str] = frozenset({"otherGroup"})
#: Variables reached whenever ``hasImplication`` is true.
_IMPLICATION_ALWAYS: tuple[str, ...] = tuple(
    v.name
    for v in VARIABLES
    if v.stage != "gate" and v.name not in SUBJECT_GROUP_VARIABLES and v.name not in OTHER_VARIABLES
)

STOP_NEITHER = "toxicity and counternarrative are both false"
STOP_INAPPROPRIATE = "justInappropriate is true"
STOP_NO_IMPLICATION = "hasImplication is false"


def variable_values(reasoning: ToxicReasoning) -> dict[str, Any]:
    """``{variable name: value}`` for every variable of :data:`VARIABLES` (None where absent).

    Values keep their types: bools, the schema's enums, a tuple of temporalities (in
    past, present, future order), tuples of tokens, strings. Values are taken as given, also
    for unreached variables that an unconstrained model filled.
    """
    c = reasoning.composition
    s = c.subject if c is not None else None
    o = c.other if c is not None else None
    a = reasoning.attitudes
    return {
        "toxicity": reasoning.toxicity,
        "counternarrative": reasoning.counternarrative,
        "justInappropriate": reasoning.just_inappropriate,
        "hasImplication": reasoning.has_implication,
        "implication": reasoning.implication,
        "implCategory": c.category if c else None,
        "implPolarity": c.polarity if c else None,
        "implTemporality": tuple(c.temporality) if c else None,
        "specificity": c.specificity if c else None,
        "subject": s.role if s else None,
        "subjectGroup": s.group if s else None,
        "subjectGroupType": s.group_type if s else None,
        "subjectTokens": tuple(s.tokens) if s else None,
        "hasOther": c.has_other if c else None,
        "other": o.role if o else None,
        "otherGroup": o.group if o else None,
        "otherTokens": tuple(o.tokens) if o else None,
        "implTopic": c.topic if c else None,
        "implTokens": tuple(c.impl_tokens) if c else None,
        "implSarcasm": reasoning.impl_sarcasm,
        "implStereotype": reasoning.impl_stereotype,
        "authorBelief": a.author_belief if a else None,
        "authorPrefer": a.author_desire if a else None,
        "authorIntent": a.author_intent if a else None,
        "typicalBelief": a.public_belief if a else None,
        "expertBelief": a.expert_belief if a else None,
    }


def stop_reason(values: dict[str, Any]) -> str | None:
    """Why the annotation stopped before the implication (None when it goes on, or a gate is missing)."""
    if not (values["toxicity"] or values["counternarrative"]):
        return STOP_NEITHER
    if values["justInappropriate"] is True:
        return STOP_INAPPROPRIATE
    if values["justInappropriate"] is False and values["hasImplication"] is False:
        return STOP_NO_IMPLICATION
    return None


def reached_from_values(values: dict[str, Any]) -> frozenset[str]:
    """The variables reached by the answers in ``values`` (see the module docstring).

    A missing gate answer (None) stops the annotation there: nothing after it is reached.
    """
    reached = {"toxicity", "counternarrative"}
    if not (values["toxicity"] or values["counternarrative"]):
        return frozenset(reached)
    reached.add("justInappropriate")
    if values["justInappropriate"] is not False:
        return frozenset(reached)
    reached.add("hasImplication")
    if values["hasImplication"] is not True:
        return frozenset(reached)
    reached.update(_IMPLICATION_ALWAYS)
    if values["specificity"] == Specificity.GROUP:
        reached.update(SUBJECT_GROUP_VARIABLES)
    if values["hasOther"] is True:
        reached.update(OTHER_VARIABLES)
    return frozenset(reached)


def reached_variables(reasoning: ToxicReasoning) -> frozenset[str]:
    """The variables ``reasoning`` reaches by its own answers."""
    return reached_from_values(variable_values(reasoning))


@dataclass(frozen=True, slots=True)
class StoppingViolation:
    """A field filled although the annotation stopped before it, or missing although reached."""

    path: str  # JSON path inside the ToxicReasoning object
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def _filled(path: str, reason: str) -> StoppingViolation:
    return StoppingViolation(path, f"must be null because {reason}")


def _missing(path: str, reason: str) -> StoppingViolation:
    return StoppingViolation(path, f"missing; required because {reason}")


def stopping_violations(reasoning: ToxicReasoning, allow_unreached: bool = False) -> list[StoppingViolation]:
    """Every place where ``reasoning`` does not fill exactly its reached variables.

    Reported at the coarsest level: a whole ``propositionComposition`` or ``attitudes`` object
    that should be null is one violation, not one per field. With ``allow_unreached``, fields
    beyond a stop are accepted (but reached fields must still be present). After a missing
    gate answer nothing later is checked (its requirement is unknown).
    """
    r = reasoning
    out: list[StoppingViolation] = []
    later: list[tuple[str, Any]] = [
        ("justInappropriate", r.just_inappropriate),
        ("hasImplication", r.has_implication),
        ("implication", r.implication),
        (_C, r.composition),
        ("implSarcasm", r.impl_sarcasm),
        ("implStereotype", r.impl_stereotype),
        ("attitudes", r.attitudes),
    ]
    if not (r.toxicity or r.counternarrative):
        start, reason = 0, STOP_NEITHER
    elif r.just_inappropriate is None:
        return [_missing("justInappropriate", "toxicity or counternarrative is true")]
    elif r.just_inappropriate:
        start, reason = 1, STOP_INAPPROPRIATE
    elif r.has_implication is None:
        return [_missing("hasImplication", "justInappropriate is false")]
    elif not r.has_implication:
        start, reason = 2, STOP_NO_IMPLICATION
    else:
        for path, value in later[2:]:
            if value is None:
                out.append(_missing(path, "hasImplication is true"))
        if r.composition is not None:
            out.extend(_composition_violations(r, allow_unreached))
        return out
    if not allow_unreached:
        out.extend(_filled(path, reason) for path, value in later[start:] if value is not None)
    return out


def _composition_violations(r: ToxicReasoning, allow_unreached: bool) -> list[StoppingViolation]:
    c = r.composition
    assert c is not None
    out: list[StoppingViolation] = []
    group_fields = ((f"{_C}.subject.group", c.subject.group), (f"{_C}.subject.groupType", c.subject.group_type))
    if c.specificity == Specificity.GROUP:
        out.extend(_missing(path, "specificity is 'group'") for path, value in group_fields if value is None)
    elif not allow_unreached:
        out.extend(_filled(path, "specificity is 'personal'") for path, value in group_fields if value is not None)
    if c.has_other and c.other is None:
        out.append(_missing(f"{_C}.other", "hasOther is true"))
    elif not c.has_other and c.other is not None and not allow_unreached:
        out.append(_filled(f"{_C}.other", "hasOther is false"))
    return out
