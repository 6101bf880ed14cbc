"""Multilingual HateCheck (Röttger et al., WOAH 2022; 10 languages, Mandarin included) → VARM references.

``hatecheck_cases_final_{language}.csv`` (the layout the MHC data card documents):
``mhc_case_id,functionality,test_case,label_gold,target_ident,ref_case_id,ref_templ_id,templ_id,
case_templ,gender_male,gender_female,label_annotated,label_annotated_maj,disagreement_in_case,
disagreement_in_template``. MHC is CC BY 4.0.

Mapping (the functionality tables of :mod:`verimod.data.adapters.functional`):

- label: ``label_gold`` hateful → harmful, non-hateful → non_harmful — the source gold, kept.
- stance: from the functionality (``*_h`` → attack_or_endorse, ``counter_*`` → oppose_attack,
  ``ident_*`` → neutral_mention; others unset).
- category, hateful cases only: from ``target_ident`` (women → gender, gay / trans people →
  sogi, disabled people → body_health, black people / immigrants … → region_ethnicity);
  identities outside the six categories (Muslims: religion) → unset, reported as a convention
  conflict. Non-hateful: non_attack (derived; ``derive_non_attack``).
- tags: the functionality, its phenomenon tags, ``spelling_variation`` for the ``spell_*``
  functionalities (character swaps and deletions, spaces, leetspeak; for Mandarin also the
  homophone / pinyin variants, tagged ``homophone`` too).
- id: ``mhc-<mhc_case_id>`` (e.g. ``mhc-mandarin-1305``); no split (a test suite).

Convention conflicts reported (source values kept): non-hateful abuse of non-protected targets
(``target_group_nh``, ``target_indiv_nh``, ``target_obj_nh``, ``profanity_nh``: the codebook
would call most of them harmful), identities outside the six categories, and cases whose
annotators' majority (``label_annotated_maj``) differs from ``label_gold``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from verimod.data.adapters.base import (
    Builder,
    ConversionResult,
    adapters,
    clean_text,
    columns_check,
    make_meta,
)
from verimod.data.adapters.functional import CaseColumns, functional_case, report_conflicts
from verimod.data.records import OnError

SOURCE = "mhc"
CASE_COLUMNS = CaseColumns("test_case", "label_gold", "functionality", "target_ident", "label_annotated_maj")
COLUMNS = ("mhc_case_id", "functionality", "test_case", "label_gold", "target_ident")
NOTES = (
    "label: annotated (label_gold hateful → harmful, non-hateful → non_harmful)",
    "stance: annotated from the functionality (*_h → attack_or_endorse, counter_* → oppose_attack, ident_* → "
    "neutral_mention; others unset)",
    "category: annotated from target_ident for hateful cases (identities outside the six categories: unset); "
    "non_attack for non-hateful cases (derived)",
    "tags: the functionality, its phenomenon tags, spelling_variation for spell_* functionalities",
)


@adapters.register(SOURCE)
def convert_mhc(
    path: str | Path,
    *,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    derive_non_attack: bool = True,
) -> ConversionResult:
    """Convert a Multilingual HateCheck test-case file; see the module docstring."""
    builder = Builder(SOURCE, on_error, NOTES)
    name = str(path)
    counts: Counter[str] = Counter()
    for line, record in builder.rows(path, encoding, check=columns_check(name, COLUMNS, "Multilingual HateCheck")):
        item = _convert_row(builder, name, line, record, derive_non_attack, counts)
        if item is not None:
            builder.add(name, line, item)
    report_conflicts(builder, counts)
    return builder.finish()


def _convert_row(
    builder: Builder, path: str, line: int, record: dict[str, Any], derive_non_attack: bool, counts: Counter[str]
) -> dict[str, Any] | None:
    case = functional_case(builder, CASE_COLUMNS, path, line, record, derive_non_attack, counts)
    if case is None:
        return None
    text, fields, derived, tags = case
    original = {
        "mhc_case_id": record["mhc_case_id"],
        "functionality": str(record["functionality"]).strip(),
        "label_gold": str(record["label_gold"]).strip(),
        "target_ident": clean_text(record["target_ident"]),
        "label_annotated_maj": clean_text(record.get("label_annotated_maj")),
    }
    return {
        "id": f"{SOURCE}-{str(record['mhc_case_id']).strip()}",
        "text": text,
        **fields,
        "tags": tags,
        "meta": make_meta(SOURCE, derived, original),
    }
