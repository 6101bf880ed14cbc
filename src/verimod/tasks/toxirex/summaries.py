"""Summary sentences of a proposition composition, and summary-sentence accuracy.

**Sentences.** A template (``resources/toxirex/summary_templates.json``; English ``en`` and
Chinese ``zh``) turns the composition into one sentence::

    {subject}{subjectTokens} {predicate}{other}.

- subject phrase by role and specificity (``someone else/personal`` → "An individual",
  ``someone else/group`` → 'Members of the group "…"'), with the subject tokens in brackets;
- predicate by content category and polarity (Situation/Negative is *harm*), temporality and
  grammatical number; several temporalities are joined in past, present, future order;
- when ``hasOther``: "(compared to <other phrase> [otherTokens])".

Harm + future + personal + someone else, tokens That/chick/her →
"An individual [That, chick, her] will have harm come to them." /
"某个人[That、chick、her]将会遭受伤害。". Values are inserted verbatim and never re-read as
template text, so braces in a group description are harmless.

**Accuracy** (:func:`summary_accuracy`). A prediction is compared with every annotator who
annotated an implication, on the *slots* the sentence shows — everything but the tokens, whose
overlap the Jaccard index measures:

    category, polarity, temporality (as a set), specificity, subject (role),
    subjectGroup (text after NFKC, case folding and whitespace collapsing),
    other (absent, or role + normalised group text)

- ``identical``: every slot equal;
- ``small_difference``: exactly one slot differs, and the difference is one of
  ``temporality`` (one set strictly contains the other, e.g. predicting only a subset of the
  annotator's times), ``subjectGroup`` (same role and specificity, another wording of the
  group), ``other`` (an other present on one side only, or another other), ``category``
  (Quality ↔ Behavior, i.e. nature vs behaviour); a different polarity, specificity, subject
  role, a Situation ↔ Quality/Behavior swap, or two differing slots is no match;
- ``no_match``: otherwise;
- ``no_implication``: the prediction reaches no implication (stopped before it);
- ``invalid``: the prediction could not be parsed.

Per comment the best outcome over its annotators counts (identical > small difference > no
match; ties go to the first annotator in the order given). Comments where no annotator has an
implication are left out and counted (``n_no_reference``).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from verimod.core.errors import InputError
from verimod.resources import resource_path
from verimod.tasks.toxirex.schema import (
    TEMPORALITY_ORDER,
    ContentCategory,
    Other,
    Polarity,
    PropositionComposition,
    Role,
    Specificity,
    ToxicReasoning,
)
from verimod.tasks.toxirex.stopping import reached_variables

Language = Literal["en", "zh"]
LANGUAGES: tuple[str, ...] = ("en", "zh")
Outcome = Literal["identical", "small_difference", "no_match", "no_implication", "invalid"]
OUTCOMES: tuple[str, ...] = ("identical", "small_difference", "no_match", "no_implication", "invalid")
SLOTS: tuple[str, ...] = ("category", "polarity", "temporality", "specificity", "subject", "subjectGroup", "other")
SMALL_DIFFERENCE_SLOTS: tuple[str, ...] = ("temporality", "subjectGroup", "other", "category")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_NUMBERS = ("singular", "plural")


def _fill(template: str, **values: str) -> str:
    """Replace ``{name}`` placeholders in one pass; inserted values are never re-scanned."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def _party_keys() -> list[str]:
    return [f"{role.value}/{spec.value}" for role in Role for spec in Specificity]


def _check_templates(data: Any, path: str) -> dict[str, Any]:
    def need(obj: Any, key: str, where: str) -> Any:
        if not isinstance(obj, dict) or key not in obj:
            raise InputError.at(path, None, f"{where}.{key}".lstrip("."), "missing")
        return obj[key]

    for lang in LANGUAGES:
        t = need(data, lang, "")
        for key in ("sentence", "tokens", "tokenJoiner", "temporalityJoiner", "other"):
            if not isinstance(need(t, key, lang), str):
                raise InputError.at(path, None, f"{lang}.{key}", "must be a string")
        for party in _party_keys():
            subject = need(need(t, "subjects", lang), party, f"{lang}.subjects")
            if need(subject, "number", f"{lang}.subjects.{party}") not in _NUMBERS:
                raise InputError.at(path, None, f"{lang}.subjects.{party}.number", "must be singular or plural")
            need(subject, "text", f"{lang}.subjects.{party}")
            need(need(t, "others", lang), party, f"{lang}.others")
        for category in ContentCategory:
            for polarity in Polarity:
                key = f"{category.value}/{polarity.value}"
                by_time = need(need(t, "predicates", lang), key, f"{lang}.predicates")
                for time in TEMPORALITY_ORDER:
                    forms = need(by_time, time.value, f"{lang}.predicates.{key}")
                    for number in _NUMBERS:
                        need(forms, number, f"{lang}.predicates.{key}.{time.value}")
    return {lang: data[lang] for lang in LANGUAGES}


def load_templates(path: str | Path | None = None) -> dict[str, Any]:
    """Summary templates (default: the bundled file), checked for every slot combination."""
    if path is None:
        return _bundled_templates()
    name = str(path)
    try:
        data = json.loads(Path(name).read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise InputError.at(name, None, None, "file not found") from None
    except json.JSONDecodeError as exc:
        raise InputError.at(name, exc.lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    return _check_templates(data, name)


@cache
def _bundled_templates() -> dict[str, Any]:
    path = resource_path("toxirex/summary_templates.json")
    return _check_templates(json.loads(path.read_text(encoding="utf-8")), str(path))


def _tokens(t: Mapping[str, Any], tokens: Sequence[str]) -> str:
    return _fill(t["tokens"], tokens=t["tokenJoiner"].join(tokens)) if tokens else ""


def _other_phrase(t: Mapping[str, Any], other: Other) -> str:
    spec = Specificity.GROUP if other.group is not None else Specificity.PERSONAL
    party = _fill(t["others"][f"{other.role.value}/{spec.value}"], group=other.group or "")
    return _fill(t["other"], other=party, otherTokens=_tokens(t, other.tokens))


def summary_sentence(
    composition: PropositionComposition, lang: Language = "en", templates: Mapping[str, Any] | None = None
) -> str:
    """The summary sentence of ``composition`` in ``lang`` (see the module docstring).

    >>> from verimod.tasks.toxirex.schema import PropositionComposition
    >>> c = PropositionComposition.model_validate({"implCategory": "Situation", "implPolarity": "Negative",
    ...     "implTemporality": ["future"], "specificity": "personal",
    ...     "subject": {"role": "someone else", "subjectTokens": ["That", "chick", "her"]},
    ...     "hasOther": False, "implTopic": "harm", "implTokens": ["beat"]})
    >>> summary_sentence(c)
    'An individual [That, chick, her] will have harm come to them.'
    """
    t = (templates or _bundled_templates())[lang]
    subject = t["subjects"][f"{composition.subject.role.value}/{composition.specificity.value}"]
    forms = t["predicates"][f"{composition.category.value}/{composition.polarity.value}"]
    predicate = t["temporalityJoiner"].join(forms[time.value][subject["number"]] for time in composition.temporality)
    other = _other_phrase(t, composition.other) if composition.has_other and composition.other is not None else ""
    return _fill(
        t["sentence"],
        subject=_fill(subject["text"], group=composition.subject.group or ""),
        subjectTokens=_tokens(t, composition.subject.tokens),
        predicate=predicate,
        other=other,
    )


def reasoning_summary(reasoning: ToxicReasoning, lang: Language = "en") -> str | None:
    """The summary sentence of an annotation that reaches an implication, else None."""
    if reasoning.composition is None or "implCategory" not in reached_variables(reasoning):
        return None
    return summary_sentence(reasoning.composition, lang)


def normalize_text(text: str | None) -> str | None:
    """NFKC, case folding, whitespace collapsed; None stays None."""
    return None if text is None else " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def composition_slots(c: PropositionComposition) -> dict[str, Any]:
    """The comparable slots of a composition (see the module docstring)."""
    other: tuple[str, str | None] | None = None
    if c.has_other and c.other is not None:
        other = (c.other.role.value, normalize_text(c.other.group))
    elif c.has_other:
        other = ("?", None)
    return {
        "category": c.category,
        "polarity": c.polarity,
        "temporality": frozenset(c.temporality),
        "specificity": c.specificity,
        "subject": c.subject.role,
        "subjectGroup": normalize_text(c.subject.group) if c.specificity == Specificity.GROUP else None,
        "other": other,
    }


def _small(slot: str, a: Any, b: Any) -> bool:
    if slot == "temporality":
        return bool(a < b or b < a)
    if slot == "category":
        return {a, b} == {ContentCategory.QUALITY, ContentCategory.BEHAVIOR}
    return slot in ("subjectGroup", "other")


def compare_compositions(pred: PropositionComposition, gold: PropositionComposition) -> tuple[Outcome, str | None]:
    """``(outcome, differing slot)`` of a predicted vs an annotated composition."""
    p, g = composition_slots(pred), composition_slots(gold)
    differing = [s for s in SLOTS if p[s] != g[s]]
    if not differing:
        return "identical", None
    if len(differing) == 1 and _small(differing[0], p[differing[0]], g[differing[0]]):
        return "small_difference", differing[0]
    return "no_match", None


def _composition(r: ToxicReasoning | None) -> PropositionComposition | None:
    if r is None or r.composition is None or "implCategory" not in reached_variables(r):
        return None
    return r.composition


@dataclass(frozen=True, slots=True)
class SummaryResult:
    """One comment's outcome: the best-matching annotator and the differing slot."""

    comment_id: str
    outcome: Outcome
    annotator: str | None = None
    slot: str | None = None


@dataclass(frozen=True)
class SummaryAccuracy:
    """Counts of outcomes over the comments with at least one annotated implication."""

    results: tuple[SummaryResult, ...]
    n_no_reference: int
    counts: dict[str, int] = field(default_factory=dict)
    small_difference_slots: dict[str, int] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Comments compared."""
        return len(self.results)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "n": self.n,
            "n_no_reference": self.n_no_reference,
            "counts": self.counts,
            "small_difference_slots": self.small_difference_slots,
        }


_RANK = {"identical": 0, "small_difference": 1, "no_match": 2}


def summary_accuracy(
    items: Iterable[tuple[str, ToxicReasoning | None, Sequence[tuple[str, ToxicReasoning]]]],
) -> SummaryAccuracy:
    """Summary-sentence accuracy of predictions against several annotators.

    ``items``: ``(comment id, prediction or None if unparseable, [(annotator, annotation), ...])``.
    """
    results = []
    no_reference = 0
    for comment_id, pred, golds in items:
        references = [(a, c) for a, g in golds if (c := _composition(g)) is not None]
        if not references:
            no_reference += 1
            continue
        if pred is None:
            results.append(SummaryResult(comment_id, "invalid"))
            continue
        predicted = _composition(pred)
        if predicted is None:
            results.append(SummaryResult(comment_id, "no_implication"))
            continue
        best: SummaryResult | None = None
        for annotator, gold in references:
            outcome, slot = compare_compositions(predicted, gold)
            if best is None or _RANK[outcome] < _RANK[best.outcome]:
                best = SummaryResult(comment_id, outcome, annotator, slot)
        assert best is not None
        results.append(best)
    counts: Counter[str] = Counter(r.outcome for r in results)
    slots = Counter(r.slot for r in results if r.slot is not None)
    return SummaryAccuracy(
        tuple(results),
        no_reference,
        {o: counts.get(o, 0) for o in OUTCOMES},
        {s: slots.get(s, 0) for s in SMALL_DIFFERENCE_SLOTS},
    )
