"""The VARM codebook: fields, admissible values and the constraints a record must satisfy.

Fields, in anchor order: target (free text or ``no_clear_target``), target_type,
target_explicitness, stance, label, category.

Constraints (a record that breaks one is *inconsistent*; it still parses, but fails Format):

- ``label_category``:   label = non_harmful  ⇔  category = non_attack
- ``no_clear_target``:  target = no_clear_target ⇔ target_type = no_clear_target
                        ⇔ target_explicitness = no_clear_target
- ``harmful_stance``:   label = harmful  ⇒  stance = attack_or_endorse
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, Protocol

NO_CLEAR_TARGET: Final = "no_clear_target"

TargetType = Literal["single", "group", "no_clear_target"]
Explicitness = Literal["explicit", "implicit", "no_clear_target"]
Stance = Literal["attack_or_endorse", "oppose_attack", "quote_or_report", "neutral_mention"]
Label = Literal["harmful", "non_harmful"]
Category = Literal[
    "general_abuse", "region_ethnicity", "gender", "sogi", "status_occupation", "body_health", "non_attack"
]

#: The six record fields in anchor order.
FIELDS: Final = ("target", "target_type", "target_explicitness", "stance", "label", "category")

#: Canonical anchor tag of each field (target and explicitness share ``T``).
CANONICAL_TAGS: Final = {
    "target": "T",
    "target_type": "TY",
    "target_explicitness": "T",
    "stance": "S",
    "label": "L",
    "category": "C",
}

#: Admissible values of the five discrete fields, in a fixed order (their integer codes).
VOCABULARY: Final[dict[str, tuple[str, ...]]] = {
    "target_type": ("single", "group", NO_CLEAR_TARGET),
    "target_explicitness": ("explicit", "implicit", NO_CLEAR_TARGET),
    "stance": ("attack_or_endorse", "oppose_attack", "quote_or_report", "neutral_mention"),
    "label": ("harmful", "non_harmful"),
    "category": (
        "general_abuse",
        "region_ethnicity",
        "gender",
        "sogi",
        "status_occupation",
        "body_health",
        "non_attack",
    ),
}

#: The discrete fields, in anchor order.
DISCRETE_FIELDS: Final = ("target_type", "target_explicitness", "stance", "label", "category")

#: Phenomenon tags of the bundled sets (references may carry others); defined in the codebook
#: resource ``resources/varm_codebook.md``: ``other_identity`` marks an attack on an identity outside
#: the six categories (convention d), ``context_needed`` a decision that needs the parent post.
PHENOMENON_TAGS: Final = (
    "direct_insult",
    "stereotype",
    "dehumanization",
    "threat",
    "implicit_target",
    "homophone",
    "sarcasm",
    "quotation",
    "opposition",
    "neutral_identity",
    "behaviour_criticism",
    "personal_account",
    "no_target",
    "other_identity",
    "context_needed",
)

#: Tags that mark a non-harmful item as *hard*: it carries abusive-looking cues.
HARD_NEGATIVE_TAGS: Final = frozenset(
    {
        "quotation",
        "opposition",
        "neutral_identity",
        "behaviour_criticism",
        "personal_account",
        "sarcasm",
        "homophone",
    }
)


class RecordLike(Protocol):
    """Anything with the six record fields as attributes (None: not annotated)."""

    @property
    def target(self) -> str | None: ...
    @property
    def target_type(self) -> str | None: ...
    @property
    def target_explicitness(self) -> str | None: ...
    @property
    def stance(self) -> str | None: ...
    @property
    def label(self) -> str | None: ...
    @property
    def category(self) -> str | None: ...


CONSTRAINTS: Final = {
    "label_category": "label = non_harmful ⇔ category = non_attack",
    "no_clear_target": (
        "target = no_clear_target ⇔ target_type = no_clear_target ⇔ target_explicitness = no_clear_target"
    ),
    "harmful_stance": "label = harmful ⇒ stance = attack_or_endorse",
}


def codebook_violations_of(values: Sequence[str | None]) -> tuple[str, ...]:
    """Names of the codebook constraints (keys of :data:`CONSTRAINTS`) broken by the six field
    values given in :data:`FIELDS` order. A constraint is checked only between fields that are
    present (not None), so partial records break nothing they do not state."""
    target, target_type, explicitness, stance, label, category = values
    broken: list[str] = []
    if label is not None and category is not None and (label == "non_harmful") != (category == "non_attack"):
        broken.append("label_category")
    stated = [v == NO_CLEAR_TARGET for v in (target, target_type, explicitness) if v is not None]
    if len(set(stated)) > 1:
        broken.append("no_clear_target")
    if label == "harmful" and stance is not None and stance != "attack_or_endorse":
        broken.append("harmful_stance")
    return tuple(broken)


def codebook_violations(record: RecordLike) -> tuple[str, ...]:
    """Names of the codebook constraints (keys of :data:`CONSTRAINTS`) that ``record`` breaks."""
    return codebook_violations_of(
        (
            record.target,
            record.target_type,
            record.target_explicitness,
            record.stance,
            record.label,
            record.category,
        )
    )
