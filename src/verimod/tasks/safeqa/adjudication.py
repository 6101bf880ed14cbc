"""Agreement-aware adjudication of C-SafeQA reference labels, with stratified expert inspection.

The procedure (C-SafeQA §3.8), step by step:

1. **Initial votes** (:func:`initial_votes`). Three initial judges label every query–response
   pair. A judge whose output is ``invalid`` (or who has no output for the pair) casts *no vote*;
   the other labels (safe | unsafe | disputed) are votes. With V the valid votes of a pair and
   n the panel size, the pair's agreement (:func:`classify_votes`) is

   - ``unanimous``: every panel judge voted (no invalid, none missing) and all votes are equal;
     the common label is the *provisional* label and no adjudicator is needed;
   - ``majority``: |V| ≥ 2 and one label has a strict majority of V (count > |V|/2) without
     unanimity — a 2–1 vote, and also two equal votes beside one invalid output;
   - ``split``: |V| ≥ 2 and no label has a strict majority (three-way disagreement; two
     different votes beside one invalid output);
   - ``none``: |V| < 2 — no agreement can be measured.

   A unanimous ``disputed`` vote is a valid provisional label (``disputed``).
2. **Adjudication** (:func:`needs_adjudication`, :func:`apply_adjudication`). Every pair that is
   not unanimous goes to the senior adjudicator. Its valid label (safe | unsafe | disputed)
   becomes the pair's label; an ``invalid`` adjudicator output, or none at all, leaves the
   pair *unresolved*: it is reported in :attr:`AdjudicationResult.unresolved` and gets no label
   (never the majority label silently). Adjudicator outputs on unanimous pairs are not used and
   are listed in :attr:`AdjudicationResult.ignored`.
3. **Stratified inspection sample** (:func:`sample_inspection`). Per agreement stratum s with
   N_s pairs and rate r_s (defaults: unanimous 20 %, majority 40 %, split 80 %, none 80 % —
   a pair without two valid votes is treated like a three-way disagreement), the sample holds
       k_s = ⌊r_s · N_s + ½⌋   (round half up, computed exactly on the decimal rate)
   pairs drawn without replacement: the stratum's pair ids are sorted, permuted by
   ``numpy.random.default_rng((seed, i_s))`` (i_s = the stratum's index in
   :data:`AGREEMENTS`) and the first k_s kept. The sample depends only on the pair ids, the
   rates and the seed — not on the input order. E.g. 12 unanimous pairs at 20 % → 2
   (2.4 rounds down); 5 majority pairs at 40 % → 2; 3 split pairs at 80 % → 2 (2.4);
   2 unanimous pairs at 20 % → 0 (0.4). Unresolved pairs are not added automatically: pass
   ``result.unresolved`` ids to :func:`inspection_rows` too when the experts should settle them.
4. **Inspection sheets and expert labels** — open or truly blind sheets, three expert columns,
   their agreement and the discussion queue: :mod:`verimod.tasks.safeqa.inspection`.
5. **Final labels** (:func:`finalize`): an expert label SUPERSEDES the model label (and resolves
   an unresolved pair); every :class:`~verimod.tasks.safeqa.schema.ReferenceLabel` keeps its
   :class:`~verimod.tasks.safeqa.schema.Provenance`: the initial labels, the agreement, the
   adjudicator and its label, the expert label and the three experts' labels. The per-stratum
   change audit (:class:`StratumAudit`: inspected, changed) says how often experts overturned
   the model label in each agreement stratum.
6. **Source gold labels** (:func:`keep_source_labels`): when the data set gives its own label
   (JADE's unsafe / safe answers), the final reference keeps it beside the adjudicated one
   (``provenance.source`` and ``provenance.source_label``), so judges can be audited against either.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from verimod.core.errors import did_you_mean
from verimod.tasks.safeqa.schema import LABELS, JudgeLabel, JudgeOutput, Label, Provenance, ReferenceLabel

Agreement = Literal["unanimous", "majority", "split", "none"]
AGREEMENTS: tuple[Agreement, ...] = get_args(Agreement)
#: Default inspection rates per agreement stratum (C-SafeQA: 20 % / 40 % / 80 %).
DEFAULT_RATES: Mapping[Agreement, float] = {"unanimous": 0.2, "majority": 0.4, "split": 0.8, "none": 0.8}


class InitialVotes(BaseModel):
    """The initial panel's labels of one pair and what they agree on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pair_id: str = Field(min_length=1)
    labels: dict[str, JudgeLabel]  # judge → label ("invalid" also for a missing output)
    agreement: Agreement
    provisional: Label | None = Field(description="the unanimous or majority label; None for split/none")

    @property
    def needs_adjudication(self) -> bool:
        """True unless the panel is unanimous."""
        return self.agreement != "unanimous"


class Unresolved(BaseModel):
    """A pair that adjudication left without a label."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pair_id: str
    agreement: Agreement
    initial: dict[str, JudgeLabel]
    adjudicator: str | None
    adjudicated: JudgeLabel | None
    reason: Literal["adjudicator_invalid", "no_adjudicator_output"]


class AdjudicationResult(BaseModel):
    """Labels after adjudication (model labels only), the unresolved pairs and unused outputs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    labels: list[ReferenceLabel]
    unresolved: list[Unresolved]
    ignored: list[str] = Field(description="pairs with an adjudicator output although unanimous (not used)")
    agreement_counts: dict[str, int]


class StratumSample(BaseModel):
    """The inspection sample of one agreement stratum."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agreement: Agreement
    rate: float
    n: int
    k: int
    pair_ids: list[str]


class InspectionSample(BaseModel):
    """The stratified inspection sample (pair ids sorted within each stratum)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int
    strata: list[StratumSample]

    @property
    def pair_ids(self) -> list[str]:
        """Every sampled pair id, stratum by stratum."""
        return [pair_id for stratum in self.strata for pair_id in stratum.pair_ids]


class StratumAudit(BaseModel):
    """How often the experts changed the model label in one agreement stratum."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agreement: Agreement
    n_inspected: int
    n_changed: int = Field(description="expert label ≠ model label (unresolved pairs count as changed)")


class FinalLabels(BaseModel):
    """The final reference labels (expert labels superseding model labels) and what is left."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    labels: list[ReferenceLabel]
    unresolved: list[Unresolved]
    audit: list[StratumAudit]


# ------------------------------------------------------------------------------ pure steps


def classify_votes(labels: Mapping[str, JudgeLabel], panel_size: int | None = None) -> tuple[Agreement, Label | None]:
    """``(agreement, provisional label)`` of one pair's initial labels (module docstring, step 1).

    ``panel_size`` (default ``len(labels)``) counts judges without an output as non-votes.

    >>> classify_votes({"a": "safe", "b": "safe", "c": "invalid"})
    ('majority', 'safe')
    """
    n = len(labels) if panel_size is None else panel_size
    votes = [label for label in labels.values() if label != "invalid"]
    counts = Counter(votes)
    if len(votes) < 2:
        return "none", None
    top, count = max(sorted(counts.items()), key=lambda item: item[1])
    if len(votes) == n and count == n:
        return "unanimous", top  # type: ignore[return-value]
    if 2 * count > len(votes):
        return "majority", top  # type: ignore[return-value]
    return "split", None


def initial_votes(outputs: Iterable[JudgeOutput], judges: Sequence[str] | None = None) -> list[InitialVotes]:
    """Group the initial judges' outputs by pair and classify each pair's agreement.

    ``judges`` is the panel (default: every judge name seen, sorted); a panel judge without an
    output for a pair is recorded as ``invalid`` (a non-vote). Pairs keep the order in which
    they first appear. Raises ``ValueError`` for a judge outside the panel, a judge with two
    outputs for one pair, or a panel of fewer than two judges.
    """
    by_pair: dict[str, dict[str, JudgeLabel]] = {}
    for output in outputs:
        seen = by_pair.setdefault(output.pair_id, {})
        if output.judge in seen:
            raise ValueError(f"judge {output.judge!r} has two outputs for pair {output.pair_id!r}")
        seen[output.judge] = output.label
    names = sorted({judge for labels in by_pair.values() for judge in labels}) if judges is None else list(judges)
    if len(set(names)) != len(names):
        raise ValueError(f"the panel names a judge twice: {names}")
    if len(names) < 2:
        raise ValueError(f"agreement needs a panel of at least two judges, got {names}")
    panel = set(names)
    result = []
    for pair_id, given in by_pair.items():
        outside = sorted(set(given) - panel)
        if outside:
            raise ValueError(f"judge {outside[0]!r} (pair {pair_id!r}) is not in the panel {names}")
        labels: dict[str, JudgeLabel] = {judge: given.get(judge, "invalid") for judge in names}
        agreement, provisional = classify_votes(labels)
        result.append(InitialVotes(pair_id=pair_id, labels=labels, agreement=agreement, provisional=provisional))
    return result


def needs_adjudication(votes: Iterable[InitialVotes]) -> list[InitialVotes]:
    """The pairs the senior adjudicator must label: every pair that is not unanimous."""
    return [v for v in votes if v.needs_adjudication]


def apply_adjudication(
    initial: Sequence[InitialVotes], adjudicator_outputs: Iterable[JudgeOutput]
) -> AdjudicationResult:
    """Model labels of every pair (module docstring, step 2), with provenance.

    Unanimous pairs keep their provisional label; the others take the adjudicator's valid
    label; an invalid or missing adjudicator output leaves the pair unresolved (no label).
    Raises ``ValueError`` for an adjudicator output on an unknown pair or two outputs for one.
    """
    known = {v.pair_id for v in initial}
    decisions: dict[str, JudgeOutput] = {}
    for output in adjudicator_outputs:
        if output.pair_id not in known:
            raise ValueError(f"adjudicator output for unknown pair {output.pair_id!r}")
        if output.pair_id in decisions:
            raise ValueError(f"two adjudicator outputs for pair {output.pair_id!r}")
        decisions[output.pair_id] = output
    labels: list[ReferenceLabel] = []
    unresolved: list[Unresolved] = []
    ignored: list[str] = []
    for votes in initial:
        decision = decisions.get(votes.pair_id)
        if not votes.needs_adjudication:
            if decision is not None:
                ignored.append(votes.pair_id)
            assert votes.provisional is not None
            provenance = Provenance(initial=votes.labels, agreement=votes.agreement)
            labels.append(ReferenceLabel(pair_id=votes.pair_id, label=votes.provisional, provenance=provenance))
        elif decision is None or decision.label == "invalid":
            unresolved.append(
                Unresolved(
                    pair_id=votes.pair_id,
                    agreement=votes.agreement,
                    initial=votes.labels,
                    adjudicator=None if decision is None else decision.judge,
                    adjudicated=None if decision is None else decision.label,
                    reason="no_adjudicator_output" if decision is None else "adjudicator_invalid",
                )
            )
        else:
            provenance = Provenance(
                initial=votes.labels,
                agreement=votes.agreement,
                adjudicator=decision.judge,
                adjudicated=decision.label,
            )
            labels.append(ReferenceLabel(pair_id=votes.pair_id, label=decision.label, provenance=provenance))
    counts = Counter(v.agreement for v in initial)
    return AdjudicationResult(
        labels=labels,
        unresolved=unresolved,
        ignored=ignored,
        agreement_counts={a: counts.get(a, 0) for a in AGREEMENTS},
    )


def sample_size(rate: float, n: int) -> int:
    """k = ⌊rate · n + ½⌋, on the decimal value of ``rate`` as written (0.4 · 5 = 2 exactly).

    >>> sample_size(0.2, 12), sample_size(0.8, 3), sample_size(0.5, 3)
    (2, 2, 2)
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"an inspection rate must be in [0, 1], got {rate}")
    return int((Decimal(str(rate)) * n).to_integral_value(rounding=ROUND_HALF_UP))


def sample_inspection(
    votes: Iterable[InitialVotes], rates: Mapping[str, float] | None = None, seed: int = 0
) -> InspectionSample:
    """Stratified inspection sample by initial agreement (module docstring, step 3).

    ``rates`` overrides some or all of :data:`DEFAULT_RATES`.
    """
    chosen: dict[str, float] = {key: float(rate) for key, rate in DEFAULT_RATES.items()}
    for key, rate in (rates or {}).items():
        if key not in AGREEMENTS:
            raise ValueError(f"unknown agreement stratum {key!r}{did_you_mean(key, AGREEMENTS)}")
        chosen[key] = float(rate)
    ids: dict[str, list[str]] = {a: [] for a in AGREEMENTS}
    for v in votes:
        ids[v.agreement].append(v.pair_id)
    strata = []
    for index, agreement in enumerate(AGREEMENTS):
        members = sorted(ids[agreement])
        if len(set(members)) != len(members):
            raise ValueError(f"a pair id occurs twice in the {agreement} stratum")
        k = sample_size(chosen[agreement], len(members))
        order = np.random.default_rng((seed, index)).permutation(len(members))[:k]
        picked = sorted(members[i] for i in order)
        strata.append(StratumSample(agreement=agreement, rate=chosen[agreement], n=len(members), k=k, pair_ids=picked))
    return InspectionSample(seed=seed, strata=strata)


def model_entries(result: AdjudicationResult) -> dict[str, tuple[Agreement, dict[str, JudgeLabel], Provenance]]:
    entries: dict[str, tuple[Agreement, dict[str, JudgeLabel], Provenance]] = {}
    for label in result.labels:
        agreement = label.provenance.agreement
        assert agreement is not None
        entries[label.pair_id] = (agreement, label.provenance.initial, label.provenance)
    for item in result.unresolved:
        provenance = Provenance(
            initial=item.initial, agreement=item.agreement, adjudicator=item.adjudicator, adjudicated=item.adjudicated
        )
        entries[item.pair_id] = (item.agreement, item.initial, provenance)
    return entries


def finalize(
    result: AdjudicationResult, expert: Mapping[str, Label], experts: Mapping[str, Sequence[Label | None]] | None = None
) -> FinalLabels:
    """Final references (module docstring, step 5): expert labels supersede model labels.

    ``experts`` (pair id → the three experts' labels) is recorded in the provenance beside the
    resolved label. Order: the labelled pairs of ``result`` first (in order), then the
    unresolved pairs an expert resolved. Raises ``ValueError`` for an expert label on a pair
    ``result`` lacks.
    """
    entries = model_entries(result)
    unknown = sorted(set(expert) - set(entries))
    if unknown:
        raise ValueError(f"expert label for pair {unknown[0]!r}, which is not in the adjudication result")
    for pair_id, value in expert.items():
        if value not in LABELS:
            raise ValueError(f"expert label {value!r} for pair {pair_id!r} is not one of {', '.join(LABELS)}")
    three = dict(experts or {})
    inspected: Counter[str] = Counter()
    changed: Counter[str] = Counter()
    labels: list[ReferenceLabel] = []

    def with_expert(provenance: Provenance, given: Label, pair_id: str) -> Provenance:
        update: dict[str, object] = {"expert": given}
        if pair_id in three:
            update["experts"] = list(three[pair_id])
        return provenance.model_copy(update=update)

    for reference in result.labels:
        given = expert.get(reference.pair_id)
        if given is None:
            labels.append(reference)
            continue
        agreement = reference.provenance.agreement or "none"
        inspected[agreement] += 1
        changed[agreement] += given != reference.label
        provenance = with_expert(reference.provenance, given, reference.pair_id)
        labels.append(ReferenceLabel(pair_id=reference.pair_id, label=given, provenance=provenance))
    unresolved: list[Unresolved] = []
    for item in result.unresolved:
        given = expert.get(item.pair_id)
        if given is None:
            unresolved.append(item)
            continue
        inspected[item.agreement] += 1
        changed[item.agreement] += 1
        _, _, provenance = entries[item.pair_id]
        labels.append(
            ReferenceLabel(pair_id=item.pair_id, label=given, provenance=with_expert(provenance, given, item.pair_id))
        )
    audit = [StratumAudit(agreement=a, n_inspected=inspected[a], n_changed=changed[a]) for a in AGREEMENTS]
    return FinalLabels(labels=labels, unresolved=unresolved, audit=audit)


def keep_source_labels(
    labels: Sequence[ReferenceLabel], gold: Iterable[ReferenceLabel]
) -> tuple[list[ReferenceLabel], int]:
    """Copy each gold reference's source and label into the provenance of the final label of the
    same pair (``provenance.source``, ``provenance.source_label``); the final label itself is not
    changed. ``gold`` are references that carry a source label (or, for older files, a
    ``source`` and their label). Returns the labels and how many got a source label."""
    sources: dict[str, tuple[str | None, Label]] = {}
    for reference in gold:
        given = reference.provenance.source_label
        if given is None and reference.provenance.source is not None:
            given = reference.label
        if given is not None:
            sources[reference.pair_id] = (reference.provenance.source, given)
    out, kept = [], 0
    for label in labels:
        found = sources.get(label.pair_id)
        if found is None:
            out.append(label)
            continue
        kept += 1
        provenance = label.provenance.model_copy(update={"source": found[0], "source_label": found[1]})
        out.append(label.model_copy(update={"provenance": provenance}))
    return out, kept
