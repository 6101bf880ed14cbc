"""Choosing what a judge audit is measured on: a subset of pairs, and which reference.

:func:`audit_set` prepares the pairs and judge outputs that
:func:`~verimod.tasks.safeqa.metrics_judges.judge_metrics` scores, and says what it did:

- **Subset** — ``only`` (pair ids) keeps those pairs; ids that name no pair are counted
  (``unknown_only_ids``). Judge outputs on pairs outside the audited set are *left out and
  counted* per judge (``outputs_outside``), so a judge run on every pair can be audited on, e.g.,
  the JADE gold pairs alone (previously an error).
- **Reference** — ``against="reference"`` (default) scores against each pair's reference label
  (adjudicated, expert-inspected); ``against="source"`` against the data set's own gold label
  kept beside it (``provenance.source_label``; for files written before that field, a
  reference with a ``source`` and no adjudication is its own source label). Pairs without the
  chosen label are unlabelled: counted, not scored.
- **Circularity** — ``circular``: per audited judge, the number of audited pairs whose reference
  that judge helped build (it is in the reference's initial panel, or it is the adjudicator).
  Such a judge is scored against its own votes: its agreement is inflated. Audit it against the
  source labels, on expert-inspected pairs, or with a panel that excludes it.
- **Coverage** — ``missing``: per judge, audited pairs it has no output for (scored as
  ``invalid``, i.e. an error against the judge; restrict the audit with ``only`` if the judge was
  deliberately run on a subset).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from verimod.tasks.safeqa.schema import JudgeOutput, Provenance, ReferenceLabel, SafePair

AuditAgainst = Literal["reference", "source"]


class AuditSet(BaseModel):
    """The pairs and outputs of an audit and what was left out (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    against: AuditAgainst
    n_pairs_given: int
    n_pairs: int
    n_labelled: int = Field(description="audited pairs with the chosen reference label")
    unknown_only_ids: int
    outputs_outside: dict[str, int]
    circular: dict[str, int]
    missing: dict[str, int]

    def warnings(self) -> list[str]:
        """One line per thing a reader of the scores must know."""
        lines = []
        for judge, n in sorted(self.circular.items()):
            lines.append(
                f"judge {judge!r} helped build {n} of the {self.n_labelled} references it is audited against "
                "(circular: its scores are inflated) — audit it with --against source, on expert-inspected pairs, "
                "or with a panel that excludes it"
            )
        for judge, n in sorted(self.outputs_outside.items()):
            lines.append(f"judge {judge!r}: {n} output(s) on pairs outside the audited set were left out")
        for judge, n in sorted(self.missing.items()):
            lines.append(f"judge {judge!r} has no output for {n} audited pair(s): they count as invalid (errors)")
        if self.unknown_only_ids:
            lines.append(f"{self.unknown_only_ids} id(s) of --only name no pair and were ignored")
        return lines


def source_reference(reference: ReferenceLabel | None) -> ReferenceLabel | None:
    """The data set's own label of a pair as a reference, or None (module docstring)."""
    if reference is None:
        return None
    provenance = reference.provenance
    label = provenance.source_label
    if label is None and provenance.source is not None and not provenance.initial and provenance.adjudicator is None:
        label = reference.label
    if label is None:
        return None
    return ReferenceLabel(
        pair_id=reference.pair_id,
        label=label,
        provenance=Provenance(source=provenance.source, source_label=label),
    )


def audit_set(
    pairs: Sequence[SafePair],
    outputs: Iterable[JudgeOutput],
    *,
    only: Collection[str] | None = None,
    against: AuditAgainst = "reference",
) -> tuple[list[SafePair], list[JudgeOutput], AuditSet]:
    """The audited pairs (references swapped when ``against="source"``), the outputs on them, and
    the :class:`AuditSet` record (module docstring). ``ValueError`` when ``only`` keeps no pair."""
    if against not in ("reference", "source"):
        raise ValueError(f"against must be 'reference' or 'source', got {against!r}")
    wanted = set(only) if only is not None else None
    kept = [p for p in pairs if wanted is None or p.pair_id in wanted]
    if wanted is not None and not kept:
        raise ValueError("none of the --only ids names a pair")
    unknown = len(wanted - {p.pair_id for p in pairs}) if wanted is not None else 0
    if against == "source":
        kept = [p.model_copy(update={"reference": source_reference(p.reference)}) for p in kept]
    ids = {p.pair_id for p in kept}
    inside: list[JudgeOutput] = []
    outside: Counter[str] = Counter()
    for output in outputs:
        if output.pair_id in ids:
            inside.append(output)
        else:
            outside[output.judge] += 1
    judges = sorted({o.judge for o in inside} | set(outside))
    judged: dict[str, set[str]] = {judge: set() for judge in judges}
    for output in inside:
        judged[output.judge].add(output.pair_id)
    circular: Counter[str] = Counter()
    for pair in kept:
        reference = pair.reference
        if reference is None:
            continue
        builders = set(reference.provenance.initial) | {reference.provenance.adjudicator} - {None}
        for judge in judges:
            if judge in builders:
                circular[judge] += 1
    missing = {
        judge: len(ids) - len(judged[judge]) for judge in judges if judged[judge] and len(judged[judge]) < len(ids)
    }
    record = AuditSet(
        against=against,
        n_pairs_given=len(pairs),
        n_pairs=len(kept),
        n_labelled=sum(p.reference is not None for p in kept),
        unknown_only_ids=unknown,
        outputs_outside=dict(outside),
        circular=dict(circular),
        missing=missing,
    )
    return kept, inside, record
