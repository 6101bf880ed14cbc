"""HateCheck (Röttger et al., ACL 2021; English functional tests) → VARM references.

``test_suite_cases.csv``: ``,functionality,case_id,test_case,label_gold,target_ident,direction,...``.

Mapping:

- ``label_gold`` hateful → harmful, non-hateful → non_harmful. HateCheck's "non-hateful" means
  *not hate against a protected group*: ``target_group_nh`` ("I hate waiters"),
  ``target_indiv_nh`` ("He is such a massive scumbag") are abuse VARM's codebook would call
  harmful (status_occupation / general_abuse). ``skip_functionalities`` drops such cases,
  counted; by default it drops exactly these two (pass an empty list to keep them).
- stance, from the functionality where its definition fixes it (:data:`STANCE`): every ``*_h``
  functionality → attack_or_endorse; counter_quote_nh, counter_ref_nh → oppose_attack;
  ident_neutral_nh, ident_pos_nh → neutral_mention; the others are left unset.
- category, hateful cases only, from ``target_ident`` (:data:`CATEGORY`): women → gender;
  trans people, gay people → sogi; disabled people → body_health; black people, immigrants →
  region_ethnicity. Muslims (a religion, outside the six categories) → general_abuse, *derived*,
  with the tag ``other_identity``: the codebook's convention (d) for identities outside the six
  (``resources/varm_codebook.md``). Non-hateful cases: non_attack (derived; ``derive_non_attack``).
- target_type is not set: ``direction`` (general / directed) says whether a case addresses the
  group in general or someone in the second person, not whether one person or a group is attacked.
- tags: the functionality, plus the VARM phenomenon tags it implies (:data:`PHENOMENA`).
- No split (HateCheck is a test suite). id: ``hatecheck-<case_id>``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from verimod.core.errors import InputError, did_you_mean
from verimod.data.adapters.base import (
    EMPTY_TEXT,
    Builder,
    ConversionResult,
    adapters,
    clean_text,
    columns_check,
    make_meta,
)
from verimod.data.records import OnError

SOURCE = "hatecheck"
LABELS = {"hateful": "harmful", "non-hateful": "non_harmful"}
HATEFUL = (
    "derog_neg_emote_h",
    "derog_neg_attrib_h",
    "derog_dehum_h",
    "derog_impl_h",
    "threat_dir_h",
    "threat_norm_h",
    "slur_h",
    "profanity_h",
    "ref_subs_clause_h",
    "ref_subs_sent_h",
    "negate_pos_h",
    "phrase_question_h",
    "phrase_opinion_h",
    "spell_char_swap_h",
    "spell_char_del_h",
    "spell_space_del_h",
    "spell_space_add_h",
    "spell_leet_h",
)
#: functionality → stance; functionalities absent here get no stance.
STANCE: dict[str, str] = {
    **dict.fromkeys(HATEFUL, "attack_or_endorse"),
    "counter_quote_nh": "oppose_attack",
    "counter_ref_nh": "oppose_attack",
    "ident_neutral_nh": "neutral_mention",
    "ident_pos_nh": "neutral_mention",
}
#: The non-hateful functionalities, none of which fixes a stance.
NON_HATEFUL_UNSET = (
    "negate_neg_nh",
    "profanity_nh",
    "slur_homonym_nh",
    "slur_reclaimed_nh",
    "target_group_nh",
    "target_indiv_nh",
    "target_obj_nh",
)
#: target_ident → category (hateful cases); Muslims is absent: religion is outside the six
#: categories, handled by :data:`OTHER_IDENTITIES` (codebook convention d).
CATEGORY = {
    "women": "gender",
    "trans people": "sogi",
    "gay people": "sogi",
    "disabled people": "body_health",
    "black people": "region_ethnicity",
    "immigrants": "region_ethnicity",
}
#: target_ident outside the six categories → general_abuse (derived) + tag other_identity.
OTHER_IDENTITIES = frozenset({"Muslims"})
#: functionality → VARM phenomenon tags it implies.
PHENOMENA = {
    "counter_quote_nh": ("quotation", "opposition"),
    "counter_ref_nh": ("opposition",),
    "ident_neutral_nh": ("neutral_identity",),
    "ident_pos_nh": ("neutral_identity",),
}
COLUMNS = ("functionality", "case_id", "test_case", "label_gold", "target_ident", "direction")
NOTES = (
    "label: annotated (hateful → harmful, non-hateful → non_harmful: HateCheck's non-hateful includes abuse of "
    "non-protected targets, e.g. target_group_nh, target_indiv_nh)",
    "stance: annotated from the functionality (*_h → attack_or_endorse; counter_* → oppose_attack; "
    "ident_* → neutral_mention; others unset)",
    "category: annotated from target_ident for hateful cases; Muslims (religion, outside the six categories) → "
    "general_abuse, derived, tag other_identity (codebook convention d); non_attack for non-hateful cases (derived)",
    "tags: the functionality and the VARM phenomenon tags it implies",
)
SKIPPED_BY_OPTION = "functionality skipped by option"


@adapters.register(SOURCE)
def convert_hatecheck(
    path: str | Path,
    *,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    derive_non_attack: bool = True,
    skip_functionalities: Iterable[str] | str = ("target_group_nh", "target_indiv_nh"),
) -> ConversionResult:
    """Convert HateCheck's test_suite_cases.csv (English); see the module docstring."""
    builder = Builder(SOURCE, on_error, NOTES)
    name = str(path)
    skipped = _functionalities(skip_functionalities)
    unknown: set[str] = set()
    for line, record in builder.rows(path, encoding, check=columns_check(name, COLUMNS, "HateCheck test-suite")):
        functionality = str(record["functionality"]).strip()
        if functionality in skipped:
            builder.skip(SKIPPED_BY_OPTION)
            continue
        if functionality not in STANCE and functionality not in NON_HATEFUL_UNSET:
            unknown.add(functionality)
        item = _convert_row(builder, name, line, record, functionality, derive_non_attack)
        if item is not None:
            builder.add(name, line, item)
    if unknown:
        builder.note(f"functionalities outside HateCheck's 29 (no stance set): {', '.join(sorted(unknown))}")
    return builder.finish()


def _functionalities(names: Iterable[str] | str) -> set[str]:
    """Known functionality names from a list or a comma-separated string (command-line form)."""
    given = names.split(",") if isinstance(names, str) else list(names)
    known = (*STANCE, *NON_HATEFUL_UNSET)
    chosen = {n.strip() for n in given if n.strip()}
    for functionality in sorted(chosen):
        if functionality not in known:
            hint = did_you_mean(functionality, known)
            raise InputError.at("skip_functionalities", None, None, f"unknown functionality {functionality!r}{hint}")
    return chosen


def _convert_row(
    builder: Builder, path: str, line: int, record: dict[str, Any], functionality: str, derive_non_attack: bool
) -> dict[str, Any] | None:
    """The reference of one test case (None when it is skipped; counted by ``builder``)."""
    text = clean_text(record["test_case"])
    if text is None:
        builder.skip(EMPTY_TEXT)
        return None
    gold = str(record["label_gold"]).strip()
    if gold not in LABELS:
        builder.invalid(path, line, "label_gold", f"must be hateful or non-hateful, got {gold!r}")
        return None
    label = LABELS[gold]
    stance = STANCE.get(functionality)
    if stance is not None and (stance == "attack_or_endorse") != (label == "harmful"):
        builder.invalid(path, line, "label_gold", f"{gold!r} contradicts functionality {functionality!r}")
        return None
    target = clean_text(record["target_ident"])
    fields: dict[str, Any] = {"label": label, "stance": stance}
    derived = []
    tags = [functionality, *PHENOMENA.get(functionality, ())]
    if label == "harmful" and target in OTHER_IDENTITIES:
        fields["category"] = "general_abuse"
        derived.append("category")
        tags.append("other_identity")
    elif label == "harmful":
        fields["category"] = CATEGORY.get(target or "")
    elif derive_non_attack:
        fields["category"] = "non_attack"
        derived.append("category")
    original = {
        "case_id": record["case_id"],
        "functionality": functionality,
        "label_gold": gold,
        "target_ident": target,
        "direction": clean_text(record["direction"]),
    }
    return {
        "id": f"{SOURCE}-{str(record['case_id']).strip()}",
        "text": text,
        **fields,
        "tags": tags,
        "meta": make_meta(SOURCE, derived, original),
    }
