"""Lexical-cue challenge subsets and the per-run cue diagnosis (VARM-Bench, Q2).

Cue words (identity terms, slurs, insults) do not decide harmfulness, but they sway models: the
paper builds four challenge subsets of the test set — demographic identity, social status or
role, body / health / disability, general abuse — with a controlled 60:40 harmful : non-harmful
ratio, and compares JREM on the harmful and the non-harmful items of each.

**Lexicons.** One JSON file per cue family, ``{"family", "version", "description", "terms"}``
and optionally ``"exclude"`` (:class:`Lexicon`, ``extra="forbid"``). :func:`default_lexicons`
loads the four bundled ones (``resources/lexicons/``); :func:`load_lexicon` reads a user's file
and reports bad input as one :class:`InputError` line naming the file and the field.

**Matching rule** (:class:`CueMatcher`). Terms and texts are both normalised with
:func:`normalize_cue_text` (Unicode NFKC, then lower-case). A term *occurs* in a text when its
normalised form is a substring of the normalised text, with one exception: an end of the term
that is an ASCII letter or digit must not touch another ASCII letter or digit. So ``sb`` occurs
in ``你个sb`` and ``SB主播`` but not in ``usb`` or ``sbc``, and ``lgbt`` does not occur in
``lgbtq`` (Python's ``\\b`` cannot be used: it treats Chinese characters as word characters).
Every occurring term is evidence, overlapping ones included (``精神病人`` shows ``精神病`` and
``精神病人`` when both are terms). Substring matching over-matches in Chinese (``女同`` is in
``女同事``, ``白人`` in ``明白人``), so a lexicon may list ``exclude`` phrases: an occurrence of a
term that lies inside an occurrence of one of its family's exclude phrases is not a match (the
``女同`` of ``女同事`` is dropped, the one of ``女同性恋`` is kept). A text belongs to a family when
at least one of the family's terms occurs in it. One Aho–Corasick automaton over every family's
terms and exclude phrases finds all occurrences in one pass over the text, in time linear in the
text plus the occurrences. Only the reference ``text`` is matched, not its ``context``.

**Subsets** (:func:`build_cue_subset`): for each family, the labelled items whose text bears a
cue, sampled to an exact harmful : non-harmful ratio, deterministically per seed
(:func:`write_cue_subset` writes them as VARM references with ``meta.cues``).

**Diagnosis** (:func:`cue_report`): per family, JREM and label accuracy on the harmful and the
non-harmful cue-bearing items of a scored run, the gap H − NH and the over-flag rate (non-harmful
items predicted harmful); :func:`cue_reports_table` shows several runs side by side.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict
from rich.markup import escape
from rich.table import Table

from verimod.report.tables import percent
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.cue_lexicons import (
    DEFAULT_FAMILIES,
    CueHit,
    CueMatcher,
    Lexicon,
    default_lexicons,
    load_lexicon,
    load_lexicons,
    matcher_of,
    normalize_cue_text,
)
from verimod.tasks.varm.cue_subsets import (
    DEFAULT_RATIO,
    CueSubset,
    CueSubsetItem,
    CueSubsetSummary,
    FamilySubsetStats,
    build_cue_subset,
    cue_subset_ids,
    write_cue_subset,
)
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import ItemScore

if TYPE_CHECKING:
    from verimod.tasks.varm.evaluate import ScoredRun

_LABEL: Final = FIELDS.index("label")


# ---------------------------------------------------------------------------------- diagnosis


class FamilyCueScores(BaseModel):
    """One family's cue diagnosis; fractions in [0, 1], None for an empty side.

    Over the scored items whose reference carries a label and whose text bears the family's
    cues (within the subset, when one is given): ``n_harmful`` / ``n_non_harmful`` items by
    reference label; ``jrem_*`` the mean J on each side (unparseable and missing outputs count
    as J = 0); ``gap`` = jrem_harmful − jrem_non_harmful (None when a side is empty);
    ``label_accuracy_*`` the share whose predicted label is the reference label (unparseable =
    wrong); ``over_flag_rate`` the share of non-harmful items predicted harmful. ``unlabelled``:
    cue-bearing items without a reference label, left out of everything else."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    family: str
    lexicon_version: str
    n_harmful: int
    n_non_harmful: int
    unlabelled: int
    jrem_harmful: float | None
    jrem_non_harmful: float | None
    gap: float | None
    label_accuracy_harmful: float | None
    label_accuracy_non_harmful: float | None
    over_flag_rate: float | None


class CueReport(BaseModel):
    """A run's lexical-cue diagnosis: one :class:`FamilyCueScores` per lexicon family.

    ``n_items``: scored items in the run; ``n_considered``: those inside the subset (all when
    there is none); ``subset_not_in_run``: subset ids the run does not have (a subset drawn from
    other data gives a large number here)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str | None
    model: str | None
    n_items: int
    n_considered: int
    subset_not_in_run: int
    lexicons: dict[str, str]
    families: list[FamilyCueScores]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _family_scores(family: str, version: str, sides: dict[str, list[ItemScore]], unlabelled: int) -> FamilyCueScores:
    harmful, non_harmful = sides["harmful"], sides["non_harmful"]
    jrem_h = _mean([item.j for item in harmful])
    jrem_nh = _mean([item.j for item in non_harmful])
    return FamilyCueScores(
        family=family,
        lexicon_version=version,
        n_harmful=len(harmful),
        n_non_harmful=len(non_harmful),
        unlabelled=unlabelled,
        jrem_harmful=jrem_h,
        jrem_non_harmful=jrem_nh,
        gap=None if jrem_h is None or jrem_nh is None else jrem_h - jrem_nh,
        label_accuracy_harmful=_mean([float(bool(item.correct[_LABEL])) for item in harmful]),
        label_accuracy_non_harmful=_mean([float(bool(item.correct[_LABEL])) for item in non_harmful]),
        over_flag_rate=_mean(
            [float(item.values is not None and item.values[_LABEL] == "harmful") for item in non_harmful]
        ),
    )


def cue_report_from_items(
    references: Sequence[VarmReference],
    items: Sequence[ItemScore],
    lexicons: Iterable[Lexicon] | CueMatcher,
    subset_ids: Set[str] | Mapping[str, Set[str]] | None = None,
    *,
    run_id: str | None = None,
    model: str | None = None,
) -> CueReport:
    """The cue diagnosis of scored items (``items[i]`` scores ``references[i]``; ``ValueError``
    otherwise). See :func:`cue_report`."""
    if len(references) != len(items) or any(r.id != i.id for r, i in zip(references, items, strict=False)):
        raise ValueError("items must score the references, in the same order")
    matcher = matcher_of(lexicons)
    run_ids = {r.id for r in references}
    if subset_ids is None:
        missing, considered = 0, len(references)
    else:
        wanted: set[str] = set().union(*subset_ids.values()) if isinstance(subset_ids, Mapping) else set(subset_ids)
        missing, considered = len(wanted - run_ids), len(wanted & run_ids)
    families: dict[str, dict[str, list[ItemScore]]] = {f: {"harmful": [], "non_harmful": []} for f in matcher.families}
    unlabelled = dict.fromkeys(matcher.families, 0)
    for reference, item in zip(references, items, strict=True):
        if subset_ids is not None and not isinstance(subset_ids, Mapping) and reference.id not in subset_ids:
            continue
        for family in matcher.match(reference.text):
            if isinstance(subset_ids, Mapping) and reference.id not in subset_ids.get(family, ()):
                continue
            if reference.label is None:
                unlabelled[family] += 1
            else:
                families[family][reference.label].append(item)
    return CueReport(
        run_id=run_id,
        model=model,
        n_items=len(references),
        n_considered=considered,
        subset_not_in_run=missing,
        lexicons=dict(matcher.versions),
        families=[_family_scores(f, matcher.versions[f], families[f], unlabelled[f]) for f in matcher.families],
    )


def cue_report(
    run: ScoredRun,
    lexicons: Iterable[Lexicon] | CueMatcher,
    subset_ids: Set[str] | Mapping[str, Set[str]] | None = None,
) -> CueReport:
    """A scored run's lexical-cue diagnosis (the paper's Q2), one entry per lexicon family.

    Membership is decided by ``lexicons`` on each reference text. ``subset_ids`` restricts the
    items: a set keeps the listed ids for every family; a mapping (family → ids, e.g. from
    :meth:`CueSubset.ids_by_family` or :func:`cue_subset_ids`) keeps, for each family, only its
    own subset — which preserves each subset's ratio when an item bears several families' cues.
    Ids not in the run are counted in ``subset_not_in_run``. See :class:`FamilyCueScores` for the
    numbers."""
    manifest = run.store.manifest
    return cue_report_from_items(
        run.references, run.items, lexicons, subset_ids, run_id=manifest.run_id, model=manifest.model
    )


def _points(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:+.2f}"


#: (row label, how to render a family's scores) in table order.
_ROWS: Final = (
    ("n harmful / non-harmful", lambda s: f"{s.n_harmful} / {s.n_non_harmful}"),
    ("JREM harmful", lambda s: percent(s.jrem_harmful)),
    ("JREM non-harmful", lambda s: percent(s.jrem_non_harmful)),
    ("gap H − NH (points)", lambda s: _points(s.gap)),
    ("label acc. harmful", lambda s: percent(s.label_accuracy_harmful)),
    ("label acc. non-harmful", lambda s: percent(s.label_accuracy_non_harmful)),
    ("over-flag NH → harmful", lambda s: percent(s.over_flag_rate)),
)


def cue_reports_table(reports: Sequence[CueReport], title: str = "Lexical-cue diagnosis") -> Table:
    """Several runs' reports side by side: one column per run, one section per family (%)."""
    table = Table(title=f"{title} (%)", show_header=True, header_style="bold")
    table.add_column("family")
    table.add_column("metric")
    for number, report in enumerate(reports, 1):
        header = escape(report.run_id or f"run {number}")  # names from files are text, not markup
        table.add_column(header if report.model is None else f"{header}\n{escape(report.model)}", justify="right")
    by_run: list[dict[str, Any]] = [{s.family: s for s in report.families} for report in reports]
    families = list(dict.fromkeys(s.family for report in reports for s in report.families))
    for position, family in enumerate(families):
        if position:
            table.add_section()
        for row, (label, render) in enumerate(_ROWS):
            cells = [render(scores[family]) if family in scores else "—" for scores in by_run]
            table.add_row(escape(family) if row == 0 else "", label, *cells)
    return table


__all__ = [
    "DEFAULT_FAMILIES",
    "DEFAULT_RATIO",
    "CueHit",
    "CueMatcher",
    "CueReport",
    "CueSubset",
    "CueSubsetItem",
    "CueSubsetSummary",
    "FamilyCueScores",
    "FamilySubsetStats",
    "Lexicon",
    "build_cue_subset",
    "cue_report",
    "cue_report_from_items",
    "cue_reports_table",
    "cue_subset_ids",
    "default_lexicons",
    "load_lexicon",
    "load_lexicons",
    "normalize_cue_text",
    "write_cue_subset",
]
