"""Builders of ToxiREX reasoning dicts (JSON names) shared by the toxirex tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verimod.tasks.toxirex.schema import AnnotationRecord, PredictionRecord, ToxicReasoning

FIXTURES = Path(__file__).parent / "fixtures"
NA = "Not applicable"
ATTITUDE_KEYS = ("authorBelief", "authorPrefer", "authorIntent", "typicalBelief", "expertBelief")


def not_toxic() -> dict[str, Any]:
    return {"toxicity": False, "counternarrative": False}


def just_inappropriate(toxicity: bool = True, counternarrative: bool = False) -> dict[str, Any]:
    return {"toxicity": toxicity, "counternarrative": counternarrative, "justInappropriate": True}


def no_implication(toxicity: bool = True, counternarrative: bool = False) -> dict[str, Any]:
    return {
        "toxicity": toxicity,
        "counternarrative": counternarrative,
        "justInappropriate": False,
        "hasImplication": False,
    }


def full(
    category: str = "Situation",
    polarity: str = "Negative",
    temporality: tuple[str, ...] = ("future",),
    specificity: str = "personal",
    role: str = "someone else",
    subject_tokens: tuple[str, ...] = ("her",),
    impl_tokens: tuple[str, ...] = ("watch", "her", "back"),
    attitudes: tuple[str, ...] = ("High", "High", "Medium", "Low", NA),
    group: str | None = None,
    group_type: str | None = None,
    other: dict[str, Any] | None = None,
    sarcasm: bool = False,
    stereotype: bool = False,
    topic: str = "harm",
    implication: str = "Someone will be harmed.",
) -> dict[str, Any]:
    """A complete annotation (hasImplication true) with the given traits."""
    subject: dict[str, Any] = {"role": role, "subjectTokens": list(subject_tokens)}
    if specificity == "group":
        subject.update(group=group or "some group", groupType=group_type or "Other")
    composition: dict[str, Any] = {
        "implCategory": category,
        "implPolarity": polarity,
        "implTemporality": list(temporality),
        "specificity": specificity,
        "subject": subject,
        "hasOther": other is not None,
        "implTopic": topic,
        "implTokens": list(impl_tokens),
    }
    if other is not None:
        composition["other"] = other
    return {
        "toxicity": True,
        "counternarrative": False,
        "justInappropriate": False,
        "hasImplication": True,
        "implication": implication,
        "propositionComposition": composition,
        "implSarcasm": sarcasm,
        "implStereotype": stereotype,
        "attitudes": dict(zip(ATTITUDE_KEYS, attitudes, strict=True)),
    }


def reasoning(data: dict[str, Any]) -> ToxicReasoning:
    return ToxicReasoning.model_validate(data)


def annotation(comment_id: str, annotator: str, data: dict[str, Any]) -> AnnotationRecord:
    return AnnotationRecord.model_validate(
        {"threadId": "t", "commentId": comment_id, "annotator": annotator, "reasoning": data}
    )


def prediction(comment_id: str, data: dict[str, Any] | None) -> PredictionRecord:
    if data is None:
        return PredictionRecord.model_validate({"commentId": comment_id, "errorClass": "invalid_json"})
    return PredictionRecord.model_validate({"commentId": comment_id, "reasoning": data})


def fixture_lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines() if line.strip()]
