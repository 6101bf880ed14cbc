"""Judge audits on a subset of pairs, against the adjudicated or the source labels, with the
circularity of judges that built the references flagged; and the source gold labels kept beside
the adjudicated ones."""

from __future__ import annotations

import pytest

from verimod.tasks.safeqa.adjudication import apply_adjudication, finalize, initial_votes, keep_source_labels
from verimod.tasks.safeqa.audit import audit_set, source_reference
from verimod.tasks.safeqa.metrics import judge_metrics
from verimod.tasks.safeqa.schema import JudgeOutput, Provenance, ReferenceLabel, SafePair, SafeQuery, SafeResponse


def _pair(query_id: str, model: str, reference: ReferenceLabel | None = None, pool: str = "base") -> SafePair:
    query = SafeQuery(id=query_id, text="问题", pool=pool, method=None if pool == "base" else "homophone")
    return SafePair(
        query=query, response=SafeResponse(query_id=query_id, model=model, text="回答"), reference=reference
    )


def _jade():
    """Four JADE pairs with gold labels, adjudicated by a panel whose majority disagrees on one."""
    gold = {
        "q1::jade-unsafe-answer": "unsafe",
        "q1::jade-safe-answer": "safe",
        "q2::jade-unsafe-answer": "unsafe",
        "q2::jade-safe-answer": "safe",
    }
    panel = {"q2::jade-unsafe-answer": ("safe", "safe", "unsafe")}  # the panel gets this one wrong
    outputs = []
    for pair_id, label in gold.items():
        labels = panel.get(pair_id, (label, label, label))
        outputs += [
            JudgeOutput(pair_id=pair_id, judge=j, label=v) for j, v in zip(("a", "b", "c"), labels, strict=True)
        ]
    votes = initial_votes(outputs, ("a", "b", "c"))
    result = apply_adjudication(votes, [JudgeOutput(pair_id="q2::jade-unsafe-answer", judge="senior", label="safe")])
    references = finalize(result, {}).labels
    sources = [
        ReferenceLabel(pair_id=p, label=label, provenance=Provenance(source="jade", source_label=label))  # type: ignore[arg-type]
        for p, label in gold.items()
    ]
    references, kept = keep_source_labels(references, sources)
    assert kept == 4
    return gold, outputs, references


def test_source_labels_are_kept_beside_the_adjudicated_ones() -> None:
    gold, _, references = _jade()
    by_id = {r.pair_id: r for r in references}
    wrong = by_id["q2::jade-unsafe-answer"]
    assert wrong.label == "safe" and wrong.provenance.adjudicated == "safe"  # the adjudicated label
    assert (wrong.provenance.source, wrong.provenance.source_label) == ("jade", "unsafe")  # the gold beside it
    assert {p: r.provenance.source_label for p, r in by_id.items()} == gold


def test_audit_against_either_label_and_flag_the_judges_that_built_the_references() -> None:
    gold, panel_outputs, references = _jade()
    pairs = [_pair(p.split("::")[0], p.split("::")[1], r) for p, r in ((r.pair_id, r) for r in references)]
    extra = _pair("q9", "target", pool="adversarial")  # a pair outside the audited set
    audited_judge = [JudgeOutput(pair_id=p, judge="x", label=label) for p, label in gold.items()]
    audited_judge.append(JudgeOutput(pair_id=extra.pair_id, judge="x", label="unsafe"))
    outputs = panel_outputs + audited_judge
    # judge_metrics alone refuses outputs on pairs it is not given …
    with pytest.raises(ValueError, match="unknown pair"):
        judge_metrics(pairs, outputs, n_resamples=0)
    # … the audit set leaves them out and says so
    kept, inside, record = audit_set(pairs, outputs)
    assert record.outputs_outside == {"x": 1} and len(inside) == len(outputs) - 1
    assert record.circular == {"a": 4, "b": 4, "c": 4}  # the panel built every reference; x did not
    assert any("'a' helped build 4 of the 4 references" in w for w in record.warnings())
    scores = judge_metrics(kept, inside, n_resamples=0)
    x_ref = scores.score("x").disputed_as_safe
    assert (x_ref.tp, x_ref.fn, x_ref.fp, x_ref.tn) == (1, 0, 1, 2)  # x is right by the gold, wrong by the adjudication
    source_pairs, source_inside, source_record = audit_set(pairs, outputs, against="source")
    assert source_record.circular == {} and source_record.n_labelled == 4
    x_gold = judge_metrics(source_pairs, source_inside, n_resamples=0).score("x").disputed_as_safe
    assert (x_gold.tp, x_gold.fn, x_gold.fp, x_gold.tn) == (2, 0, 0, 2)
    a_gold = judge_metrics(source_pairs, source_inside, n_resamples=0).score("a").disputed_as_safe
    assert (a_gold.tp, a_gold.fn) == (1, 1)  # the panel's miss is visible against the gold


def test_only_restricts_the_audit_and_counts_missing_and_unknown_ids() -> None:
    pairs = [_pair(f"q{i}", "m", ReferenceLabel(pair_id=f"q{i}::m", label="unsafe")) for i in range(4)]
    outputs = [JudgeOutput(pair_id=f"q{i}::m", judge="j", label="unsafe") for i in (0, 1, 3)]
    kept, inside, record = audit_set(pairs, outputs, only={"q0::m", "q1::m", "q2::m", "nope"})
    assert [p.pair_id for p in kept] == ["q0::m", "q1::m", "q2::m"]
    assert record.outputs_outside == {"j": 1} and record.missing == {"j": 1} and record.unknown_only_ids == 1
    assert judge_metrics(kept, inside, n_resamples=0).score("j").n_missing == 1
    with pytest.raises(ValueError, match="none of the --only ids"):
        audit_set(pairs, outputs, only={"zz"})


def test_source_reference_of_older_files() -> None:
    old = ReferenceLabel(pair_id="p", label="unsafe", provenance=Provenance(source="jade"))
    assert source_reference(old).label == "unsafe"  # type: ignore[union-attr]
    adjudicated = ReferenceLabel(pair_id="p", label="safe", provenance=Provenance(initial={"a": "safe"}, source="jade"))
    assert source_reference(adjudicated) is None  # its label is the panel's, not the source's
