"""SGHateCheck (Ng et al., WOAH 2024; functional tests in Singapore's languages) → VARM references.

The data set's repository has, per language (``zh`` Mandarin, ``ms`` Malay, ``ta`` Tamil,
``ss`` Singlish), ``testcases/{lang}_testcases_all.csv`` and the human-validated
``annotations/{lang}_annotations.csv``, with the columns ``c_id`` (case id), ``c_testcase``
(the text), ``t_function`` (functionality), ``t_gold`` (hateful / non-hateful), ``t_direction``,
``t_id`` (template id), ``t_case_local`` (template), ``p_label`` / ``p_value`` / ``p_target``
(the identity placeholder, the words put in it, the identity in English) and, in the
annotation files, ``annotator_1..3``, ``annotation_common`` and ``annotation_selected``
(the majority: hateful, non-hateful or no_match).

Mapping (the functionality tables of :mod:`verimod.data.adapters.functional`):

- label: ``t_gold`` → harmful / non_harmful — the source gold, kept.
- stance, category, tags: as for Multilingual HateCheck (``*_h`` → attack_or_endorse …;
  category from ``p_target``: Chinese, Malay, Indians, Immigrants → region_ethnicity; Women →
  gender; Homosexual, Transexual → sogi; physically disabled, mentally ill → body_health;
  religions and seniors → unset, reported as convention conflicts), including the
  ``spell_*`` spelling-variation functionalities.
- target: ``p_value`` (the identity words the template inserted) when it occurs in the text, with
  target_explicitness explicit — both annotated: the suite wrote them in.
- id: ``sghc-<lang>-<c_id>``; ``<lang>`` is ``language=``, else the file name's prefix
  (``zh_annotations.csv`` → ``zh``). No split (a test suite).

Convention conflicts reported: as for MHC, plus annotation files where ``annotation_selected``
differs from ``t_gold`` (``no_match`` included: the annotators did not agree).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from verimod.core.errors import InputError
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

SOURCE = "sghatecheck"
LANGUAGES = ("zh", "ms", "ta", "ss")
CASE_COLUMNS = CaseColumns("c_testcase", "t_gold", "t_function", "p_target", "annotation_selected")
COLUMNS = ("c_id", "c_testcase", "t_function", "t_gold")
NOTES = (
    "label: annotated (t_gold hateful → harmful, non-hateful → non_harmful)",
    "stance: annotated from the functionality (*_h → attack_or_endorse, counter_* → oppose_attack, ident_* → "
    "neutral_mention; others unset)",
    "category: annotated from p_target for hateful cases (religions, seniors: unset); non_attack for non-hateful "
    "cases (derived)",
    "target, target_explicitness: annotated — p_value when it occurs in the text (explicit)",
    "tags: the functionality, its phenomenon tags, spelling_variation for spell_* functionalities",
)


def _language(path: Path, language: str | None) -> str:
    chosen = language or path.name.split("_")[0].lower()
    if chosen not in LANGUAGES:
        raise InputError.at(
            str(path), None, "language", f"cannot tell the language (got {chosen!r}); pass language= one of {LANGUAGES}"
        )
    return chosen


@adapters.register(SOURCE)
def convert_sghatecheck(
    path: str | Path,
    *,
    encoding: str | None = "auto",
    on_error: OnError = "fail",
    derive_non_attack: bool = True,
    language: str | None = None,
) -> ConversionResult:
    """Convert an SGHateCheck test-case or annotation file; see the module docstring."""
    builder = Builder(SOURCE, on_error, NOTES)
    name = str(path)
    lang = _language(Path(name), language)
    counts: Counter[str] = Counter()
    for line, record in builder.rows(path, encoding, check=columns_check(name, COLUMNS, "SGHateCheck")):
        item = _convert_row(builder, name, line, record, lang, derive_non_attack, counts)
        if item is not None:
            builder.add(name, line, item)
    report_conflicts(builder, counts)
    return builder.finish()


def _convert_row(
    builder: Builder,
    path: str,
    line: int,
    record: dict[str, Any],
    lang: str,
    derive_non_attack: bool,
    counts: Counter[str],
) -> dict[str, Any] | None:
    case = functional_case(builder, CASE_COLUMNS, path, line, record, derive_non_attack, counts)
    if case is None:
        return None
    text, fields, derived, tags = case
    words = clean_text(record.get("p_value"))
    if words and words in text:
        fields.update(target=words, target_explicitness="explicit")
    original = {
        "c_id": record["c_id"],
        "t_function": str(record["t_function"]).strip(),
        "t_gold": str(record["t_gold"]).strip(),
        "t_direction": clean_text(record.get("t_direction")),
        "p_value": words,
        "p_target": clean_text(record.get("p_target")),
        "annotation_selected": clean_text(record.get("annotation_selected")),
    }
    return {
        "id": f"sghc-{lang}-{str(record['c_id']).strip()}",
        "text": text,
        **fields,
        "tags": tags,
        "meta": make_meta(SOURCE, derived, original),
    }
