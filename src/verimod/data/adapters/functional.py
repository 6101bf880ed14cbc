"""What the functional-test suites share (HateCheck's family: Multilingual HateCheck, SGHateCheck).

A case belongs to a *functionality* whose name ends in ``_h`` (hateful) or ``_nh``
(non-hateful). :func:`functionality_stance` and :func:`functionality_tags` extend the English
HateCheck tables of :mod:`verimod.data.adapters.hatecheck` to the functionalities those suites
add:

- stance: HateCheck's table first; otherwise any ``*_h`` → attack_or_endorse, ``counter_*`` →
  oppose_attack, ``ident_*`` → neutral_mention, anything else unset;
- tags: the functionality, HateCheck's phenomenon tags, and ``spelling_variation`` for every
  ``spell_*`` functionality (character swaps, deletions, added or removed spaces, leetspeak,
  and the suites' language-specific variants such as homophones or pinyin, which also get
  ``homophone``).

:func:`identity_category` maps a suite's target identity (English, any case) to a VARM category,
or to None with the reason: identities outside the six categories (religion, age) are a
convention conflict the adapters report, never forced into a category.

:data:`NONPROTECTED_ABUSE` are the non-hateful functionalities whose cases are abuse of
non-protected targets ("I hate waiters", "He is a scumbag"): the suites call them non-hateful,
the codebook would call them harmful. The adapters keep the source label and report the count.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

from verimod.data.adapters.base import EMPTY_TEXT, Builder, clean_text
from verimod.data.adapters.hatecheck import PHENOMENA, STANCE

NONPROTECTED_ABUSE: Final = frozenset({"target_group_nh", "target_indiv_nh", "target_obj_nh", "profanity_nh"})
SPELLING_PREFIX: Final = "spell_"
_SOUND_ALIKE: Final = ("homophone", "pinyin", "sound")

#: identity (lower case) → VARM category.
IDENTITY_CATEGORY: Final = {
    "women": "gender",
    "woman": "gender",
    "trans people": "sogi",
    "transexual": "sogi",
    "transgender": "sogi",
    "gay people": "sogi",
    "homosexual": "sogi",
    "lgbt": "sogi",
    "disabled people": "body_health",
    "physically disabled": "body_health",
    "mentally ill": "body_health",
    "black people": "region_ethnicity",
    "immigrants": "region_ethnicity",
    "refugees": "region_ethnicity",
    "foreigners": "region_ethnicity",
    "chinese": "region_ethnicity",
    "malay": "region_ethnicity",
    "indians": "region_ethnicity",
    "indigenous people": "region_ethnicity",
    "jews": "region_ethnicity",
}
#: identity (lower case) → the kind of identity the six VARM categories leave out.
OUTSIDE_CATEGORIES: Final = {
    "muslims": "religion",
    "muslim": "religion",
    "christian": "religion",
    "christians": "religion",
    "hindu": "religion",
    "buddhist": "religion",
    "seniors": "age",
    "elderly": "age",
}


def functionality_stance(functionality: str) -> str | None:
    """The stance a functionality's definition fixes (module docstring), or None."""
    if functionality in STANCE:
        return STANCE[functionality]
    if functionality.endswith("_h"):
        return "attack_or_endorse"
    if functionality.startswith("counter_"):
        return "oppose_attack"
    if functionality.startswith("ident_"):
        return "neutral_mention"
    return None


def functionality_tags(functionality: str) -> list[str]:
    """The functionality and the VARM phenomenon tags it implies."""
    tags = [functionality, *PHENOMENA.get(functionality, ())]
    if functionality.startswith(SPELLING_PREFIX):
        tags.append("spelling_variation")
        if any(word in functionality for word in _SOUND_ALIKE):
            tags.append("homophone")
    return tags


def identity_category(identity: str | None) -> tuple[str | None, str | None]:
    """``(category, None)`` for an identity of the six categories, ``(None, kind)`` for one
    outside them (religion, age), ``(None, None)`` when unknown or absent."""
    key = (identity or "").strip().lower()
    if key in IDENTITY_CATEGORY:
        return IDENTITY_CATEGORY[key], None
    return None, OUTSIDE_CATEGORIES.get(key)


def report_conflicts(builder: Builder, counts: Counter[str]) -> None:
    """The convention conflicts of a functional-test suite, with their counts."""
    if counts["nonprotected"]:
        builder.conflict(
            f"{counts['nonprotected']} non-hateful case(s) abuse non-protected targets or use untargeted profanity "
            f"({', '.join(sorted(NONPROTECTED_ABUSE))}); the codebook would call most of them harmful. Kept as "
            "non_harmful (source gold), tagged source_nonprotected_abuse"
        )
    for kind in ("religion", "age"):
        if counts[kind]:
            builder.conflict(
                f"{counts[kind]} hateful case(s) target a {kind} identity, outside the six VARM categories: "
                "category unset"
            )
    if counts["annotators"]:
        builder.conflict(
            f"{counts['annotators']} case(s) whose annotators' majority differs from the gold label: gold kept, "
            "tagged annotators_disagree_with_gold"
        )


#: The gold labels of the suites.
GOLD_LABELS: Final = {"hateful": "harmful", "non-hateful": "non_harmful"}


@dataclass(frozen=True)
class CaseColumns:
    """Which columns of a suite hold the text, gold label, functionality, identity and the
    annotators' majority."""

    text: str
    gold: str
    functionality: str
    identity: str
    majority: str


def functional_case(
    builder: Builder,
    columns: CaseColumns,
    path: str,
    line: int,
    record: dict[str, Any],
    derive_non_attack: bool,
    counts: Counter[str],
) -> tuple[str, dict[str, Any], list[str], list[str]] | None:
    """``(text, fields, derived, tags)`` of one test case, or None when it is skipped (empty
    text; a gold label that is not hateful / non-hateful or contradicts the functionality's
    stance: an invalid value). Counts the conventions conflicts in ``counts``."""
    text = clean_text(record[columns.text])
    if text is None:
        builder.skip(EMPTY_TEXT)
        return None
    gold = str(record[columns.gold]).strip()
    if gold not in GOLD_LABELS:
        builder.invalid(path, line, columns.gold, f"must be hateful or non-hateful, got {gold!r}")
        return None
    functionality = str(record[columns.functionality]).strip()
    stance = functionality_stance(functionality)
    if stance is not None and (stance == "attack_or_endorse") != (gold == "hateful"):
        builder.invalid(path, line, columns.gold, f"{gold!r} contradicts functionality {functionality!r}")
        return None
    identity = clean_text(record.get(columns.identity))
    fields, derived, tags = functional_fields(functionality, GOLD_LABELS[gold], identity, derive_non_attack, counts)
    majority = clean_text(record.get(columns.majority))
    if majority is not None and majority != gold and (majority in GOLD_LABELS or majority == "no_match"):
        counts["annotators"] += 1
        tags.append("annotators_disagree_with_gold")
    return text, fields, derived, tags


def functional_fields(
    functionality: str, label: str, identity: str | None, derive_non_attack: bool, counts: Counter[str]
) -> tuple[dict[str, Any], list[str], list[str]]:
    """``(fields, derived, tags)`` of a functional-test case (module docstring; counts conflicts)."""
    fields: dict[str, Any] = {"label": label, "stance": functionality_stance(functionality)}
    tags = functionality_tags(functionality)
    derived: list[str] = []
    if label == "harmful":
        category, outside = identity_category(identity)
        fields["category"] = category
        if outside:
            counts[outside] += 1
    elif derive_non_attack:
        fields["category"] = "non_attack"
        derived.append("category")
    if functionality in NONPROTECTED_ABUSE:
        counts["nonprotected"] += 1
        tags.append("source_nonprotected_abuse")
    return fields, derived, tags
