"""Reverse-AMT beam search: a hand-computed beam through real ``scripted:`` backend files,
pruning, winner selection, trace completeness, failure outcomes, determinism, and one slow
end-to-end run with the real local GGUF model."""

from __future__ import annotations

import asyncio
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_lines
from tests.helpers.recording import Recording
from verimod.models.base import BackendOptions
from verimod.models.registry import create_backend
from verimod.tasks.softhate.generate import base_item, choose_locus, generate_amt
from verimod.tasks.softhate.prompts import OutputParseError, parse_fields, softhate_prompts
from verimod.tasks.softhate.schema import Level1Domain, Locus, SearchConfig, SearchTrace, Standpoint, TargetGroup, Tier
from verimod.tasks.softhate.scorers import BackendNliScorer, ScoringError, StaticLanguageScorer

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see tests/models/conftest.py

ln = math.log
GROUP = TargetGroup(name="Velorians", level1=Level1Domain.NATIONALITY_REGION, level2="Velorian")
# Placeholder texts: the scores come from the scripted NLI file and the static LM table, so
# only the characters matter (they fix the redundancy and the duplicates).
STANDPOINT = Standpoint(id="sp1", text="甲乙丙丁", target=GROUP)
S1 = "sp1/analogy/step1"
C1, C2, C3, C4, C5, C6, C7, C8 = (f"{S1}/cand{k}" for k in range(1, 9))
D11, D12 = f"{C1}/step2/cand1", f"{C1}/step2/cand2"
D21, D22 = f"{C2}/step2/cand1", f"{C2}/step2/cand2"
CONFIG = SearchConfig(beam_size=2, premise_candidates=8, decomposition_candidates=2)


def pm(premise: str, maxim: str) -> str:
    return json.dumps({"premise": premise, "maxim": maxim}, ensure_ascii=False)


def ed(endoxon: str, datum: str) -> str:
    return json.dumps({"endoxon": endoxon, "datum": datum}, ensure_ascii=False)


def probs(e: float, n: float, k: float) -> str:
    return json.dumps({"entailment": e, "neutral": n, "contradiction": k})


GENERATOR = {
    C1: pm("子丑", "寅卯"),  # text 子丑寅卯: no n-gram shared with 甲乙丙丁 → redundancy 0
    C2: pm("甲乙", "寅卯"),  # 甲乙寅卯: redundancy 0.2 (1 shared gram of 5, see test_scoring)
    C3: pm("甲乙", "丙丁"),  # 甲乙丙丁 = S: redundancy 1
    C4: "I cannot help with that.",  # unparseable
    C5: pm("辰巳", "午未"),  # low entailment
    C6: pm("申酉", "戌亥"),  # the safety filter rejects 申
    C7: "```json\n" + pm("子丑", "寅卯") + "\n```",  # the same text as cand1
    D11: ed("寅", "卯"),  # 寅卯 after P = 子丑: redundancy 0
    D12: ed("辰", "巳"),
    D21: ed("甲", "乙"),  # 甲乙 after P = 甲乙: redundancy 1
    D22: ed("午", "未"),
    f"{C3}/step2/cand1": ed("x", "y"),  # pruned parent: must never be asked for
}
NLI = {
    C1: probs(0.9, 0.05, 0.05),
    C2: probs(0.8, 0.1, 0.1),
    C3: probs(0.7, 0.2, 0.1),
    C5: probs(0.5, 0.4, 0.1),
    C6: probs(0.9, 0.1, 0.0),
    D11: probs(0.8, 0.2, 0.0),
    D12: probs(0.9, 0.1, 0.0),
    D21: probs(1.0, 0.0, 0.0),
    D22: probs(0.6, 0.0, 0.4),  # exactly on both thresholds: admissible
}
LM = {
    C1: (2.0, 1.0),
    C2: (3.0, 2.0),
    C3: (4.0, 1.5),
    C5: (2.0, 3.0),
    C6: (2.0, 1.0),
    D11: (1.0, 2.0),
    D12: (3.0, 2.0),
    D21: (1.0, 2.0),
    D22: (2.0, 2.0),
}


def scripted(tmp_path: Path, name: str, outputs: dict[str, str], errors: dict[str, str] | None = None) -> Path:
    rows: list[dict[str, str]] = [{"id": k, "output": v} for k, v in outputs.items()]
    rows += [{"id": k, "error": v} for k, v in (errors or {}).items()]
    return write_lines(tmp_path / name, rows)  # type: ignore[arg-type]


def no_shen(text: str) -> bool:
    return "申" not in text


def run_search(
    tmp_path: Path,
    generator: dict[str, str] = GENERATOR,
    nli: dict[str, str] = NLI,
    lm: dict[str, tuple[float, float]] = LM,
    config: SearchConfig = CONFIG,
    safety: Any = no_shen,
    lms: list[Any] | None = None,
) -> tuple[SearchTrace, Recording]:
    backend = Recording(scripted(tmp_path, "generator.jsonl", generator, {C8: "overloaded"}))
    nli_backend = create_backend(f"scripted:{scripted(tmp_path, 'nli.jsonl', {f'{k}/nli': v for k, v in nli.items()})}")
    scorers = lms or [StaticLanguageScorer({f"{k}/lm": v for k, v in lm.items()}, name="lmA")]
    trace = asyncio.run(
        generate_amt(
            STANDPOINT,
            Locus.ANALOGY,
            generator=backend,
            nli=BackendNliScorer(nli_backend),
            lms=scorers,
            safety=safety,
            config=config,
        )
    )
    return trace, backend


def by_id(trace: SearchTrace) -> dict[str, Any]:
    return {c.id: c for c in trace.candidates()}


# -- the hand-computed beam ------------------------------------------------------------------

# Step 1 pool (scored: cand1, 2, 3, 5, 6; cand4 unparseable, cand7 duplicate, cand8 failed):
#   resistance (1 − e) + k:  .15  .3  .4  .6  .1   → min–max over [.1, .6]:  .1  .4  .6  1  0
#   surprisal:               2    3   4   2   2    → over [2, 4]:            0   .5  1   0  0
#   entropy:                 1    2   1.5 3   1    → over [1, 3]:            0   .5  .25 1  0
#   redundancy:              0    .2  1   0   0    → over [0, 1]:            0   .2  1   0  0
#   Cost = ¼ Σ:              .025 .4  .7125 .5 0
#   Effect e(1 − k):         .855 .72 .63 .45 .9
STEP1 = {
    C1: ln(0.855 / 0.075),  # 2.4336
    C2: ln(0.72 / 0.45),  # 0.4700
    C3: ln(0.63 / 0.7625),  # −0.1909
    C5: ln(0.45 / 0.55),  # low entailment (0.5 < 0.6)
    C6: ln(0.9 / 0.05),  # the best edge, but unsafe
}
# Beam (B = 2) of admissible step-1 edges by ½·edge: cand1, cand2 (cand3 admissible, pruned).
# Step 2 pool (children of cand1 and cand2):
#   resistance: .2 .1 0 .8 → over [0, .8]: .25 .125 0 1;  surprisal 1 3 1 2 → 0 1 0 .5
#   entropy: all 2 → all 0 (a component that does not discriminate adds nothing)
#   redundancy: 0 0 1 0;  Cost = ¼ Σ: .0625 .28125 .25 .375;  Effect: .8 .9 1 .36
STEP2 = {
    D11: ln(0.8 / 0.1125),  # 1.9617
    D12: ln(0.9 / 0.33125),  # 0.9995
    D21: ln(1.0 / 0.3),  # 1.2040
    D22: ln(0.36 / 0.425),  # −0.1660
}
# Ψ = ½ edge₁ + ½ edge₂: (cand1, d11) 2.1977 > (cand1, d12) 1.7166 > (cand2, d21) 0.8370 > (cand2, d22) 0.1520
PSI = {
    D11: 0.5 * STEP1[C1] + 0.5 * STEP2[D11],
    D12: 0.5 * STEP1[C1] + 0.5 * STEP2[D12],
    D21: 0.5 * STEP1[C2] + 0.5 * STEP2[D21],
    D22: 0.5 * STEP1[C2] + 0.5 * STEP2[D22],
}


def test_hand_computed_beam(tmp_path: Path) -> None:
    trace, _ = run_search(tmp_path)
    cands = by_id(trace)
    for cid, edge in {**STEP1, **STEP2}.items():
        assert cands[cid].score.score == pytest.approx(edge, rel=1e-12), cid
    assert [cands[c].score.resistance_norm for c in (C1, C2, C3, C5, C6)] == pytest.approx([0.1, 0.4, 0.6, 1.0, 0.0])
    assert [cands[c].score.redundancy for c in (C1, C2, C3, C5, C6)] == pytest.approx([0.0, 0.2, 1.0, 0.0, 0.0])
    assert [cands[c].score.lm[0].entropy_norm for c in (D11, D12, D21, D22)] == [0.0, 0.0, 0.0, 0.0]
    assert [cands[c].score.lm[0].cost for c in (D11, D12, D21, D22)] == pytest.approx([0.0625, 0.28125, 0.25, 0.375])
    assert cands[C1].cumulative == pytest.approx(0.5 * STEP1[C1])
    # the beam and the chains
    assert trace.steps[0].beam == [C1, C2]
    assert [c.candidate_ids[1] for c in trace.chains] == [D11, D12, D21, D22]
    assert [c.psi for c in trace.chains] == pytest.approx([PSI[D11], PSI[D12], PSI[D21], PSI[D22]], rel=1e-12)
    assert trace.chains[0].psi == pytest.approx(2.1977, abs=1e-4)
    assert trace.steps[1].beam == [D11, D12]  # the final top-B chains
    assert trace.outcome == "winner" and trace.reason is None
    assert trace.winner == trace.chains[0]
    assert trace.winner.candidate_ids == (C1, D11)
    assert trace.winner.edge_scores == pytest.approx((STEP1[C1], STEP2[D11]))
    assert trace.amt is not None
    assert (trace.amt.premise, trace.amt.maxim, trace.amt.endoxon, trace.amt.datum) == ("子丑", "寅卯", "寅", "卯")
    assert trace.amt.locus is Locus.ANALOGY and trace.amt.standpoint == "甲乙丙丁" and trace.amt.target == GROUP
    item = base_item(trace)
    assert item is not None and item.tier is Tier.SOFTBASE
    assert (item.id, item.text) == ("sp1/analogy", "寅卯")


def test_trace_keeps_every_candidate_and_reason(tmp_path: Path) -> None:
    trace, _ = run_search(tmp_path)
    cands = by_id(trace)
    assert list(cands) == [C1, C2, C3, C4, C5, C6, C7, C8, D11, D12, D21, D22]
    codes = {cid: [r.code for r in c.rejections] for cid, c in cands.items()}
    assert codes == {
        C1: [], C2: [], C3: [], C4: ["unparseable"], C5: ["low_entailment"], C6: ["unsafe"],
        C7: ["duplicate"], C8: ["generation_error"], D11: [], D12: [], D21: [], D22: [],
    }  # fmt: skip
    assert "same text as " + C1 in cands[C7].rejections[0].detail
    assert "overloaded" in cands[C8].rejections[0].detail
    assert "no JSON object" in cands[C4].rejections[0].detail
    assert cands[C4].raw_output == "I cannot help with that." and cands[C4].score is None
    assert [c for c, v in cands.items() if v.admissible] == [C1, C2, C3, D11, D12, D21, D22]
    assert [c for c, v in cands.items() if v.kept] == [C1, C2, D11, D12]
    assert cands[C6].safe is False and cands[C1].safe is True
    assert cands[C6].score is not None  # unsafe candidates are scored (and normalised) too
    assert cands[C1].text == "子丑寅卯" and cands[C1].context == "甲乙丙丁"
    assert cands[D21].context == "甲乙" and cands[D21].parent_id == C2
    assert cands[C1].fields == {"premise": "子丑", "maxim": "寅卯"}
    assert cands[D11].score.nli.as_tuple() == (0.8, 0.2, 0.0)
    ranges = {(r.component, r.scorer): (r.minimum, r.maximum) for r in trace.steps[0].ranges}
    assert ranges[("resistance", None)] == pytest.approx((0.1, 0.6))
    assert ranges[("surprisal", "lmA")] == (2.0, 4.0)
    assert trace.prompt_version == softhate_prompts().version
    assert trace.generator.startswith("scripted:") and trace.lm_scorers == ["lmA"]
    # JSON round trip of the whole trace
    assert SearchTrace.model_validate_json(trace.model_dump_json()) == trace


def test_requests_ids_and_parameters(tmp_path: Path) -> None:
    _, backend = run_search(tmp_path, config=CONFIG.model_copy(update={"structured_output": True}))
    ids = [r.sample_id for r in backend.requests]
    assert ids == [C1, C2, C3, C4, C5, C6, C7, C8, D11, D12, D21, D22]  # nothing for the pruned cand3
    first = backend.requests[0]
    assert (first.params.temperature, first.params.max_tokens, first.params.seed) == (0.0, 200, 0)
    assert first.params.structured is not None
    assert first.params.structured.json_schema["required"] == ["premise", "maxim"]
    assert backend.requests[-1].params.structured.json_schema["required"] == ["endoxon", "datum"]
    assert "candidate 1 of 8" in first.messages[-1].content
    assert "candidate 8 of 8" in backend.requests[7].messages[-1].content
    assert "Premise (P): 甲乙" in backend.requests[-1].messages[-1].content


def test_deterministic(tmp_path: Path) -> None:
    first, _ = run_search(tmp_path)
    second, _ = run_search(tmp_path)
    assert first.model_dump_json() == second.model_dump_json()


def test_two_scorer_lms_variance_penalty_in_the_search(tmp_path: Path) -> None:
    lm_b = {k: (v[0] * 2 if k in (C1, D11) else v[0], v[1]) for k, v in LM.items()}  # lmB disagrees on two
    lms = [
        StaticLanguageScorer({f"{k}/lm": v for k, v in LM.items()}, name="lmA"),
        StaticLanguageScorer({f"{k}/lm": v for k, v in lm_b.items()}, name="lmB"),
    ]
    trace, _ = run_search(tmp_path, lms=lms)
    c1 = by_id(trace)[C1].score
    assert [s.scorer for s in c1.lm] == ["lmA", "lmB"]
    assert c1.lm[0].edge == pytest.approx(STEP1[C1])  # lmA alone reproduces the one-LM beam
    assert c1.variance == pytest.approx(((c1.lm[0].edge - c1.lm[1].edge) / 2) ** 2)
    assert c1.variance > 0
    assert c1.score == pytest.approx(c1.mean - 0.2 * c1.variance)
    assert trace.lm_scorers == ["lmA", "lmB"]


def test_pruning_keeps_at_most_b(tmp_path: Path) -> None:
    trace, backend = run_search(tmp_path, config=CONFIG.model_copy(update={"beam_size": 1}))
    assert trace.steps[0].beam == [C1]
    assert {r.sample_id for r in backend.requests} >= {D11, D12}
    assert not any(r.sample_id.startswith(C2 + "/") for r in backend.requests)
    # Step 2's pool is now only {d11, d12}, re-normalised: resistance .2 .1 → 1 0, surprisal
    # 1 3 → 0 1, entropy and redundancy equal → 0; Cost .25 each, so the larger Effect wins:
    # d12 ln(.9 / .3) > d11 ln(.8 / .3). Normalisation is within the beam.
    assert by_id(trace)[D12].score.score == pytest.approx(ln(0.9 / 0.3))
    assert by_id(trace)[D11].score.score == pytest.approx(ln(0.8 / 0.3))
    assert trace.steps[1].beam == [D12] and trace.winner.candidate_ids == (C1, D12)
    trace, _ = run_search(tmp_path, config=CONFIG.model_copy(update={"beam_size": 3}))
    assert trace.steps[0].beam == [C1, C2, C3]
    # cand3's children: the first has a scripted answer but neither an NLI line nor an LM
    # score (one scoring_error each), the second has no answer
    children = [c for c in trace.steps[1].candidates if c.parent_id == C3]
    codes = [[r.code for r in c.rejections] for c in children]
    assert codes == [["scoring_error", "scoring_error"], ["generation_error"]]
    assert trace.winner.candidate_ids == (C1, D11)


def test_no_admissible_first_step(tmp_path: Path) -> None:
    low = {k: probs(0.55, 0.4, 0.05) for k in NLI}
    trace, backend = run_search(tmp_path, nli=low)
    assert trace.outcome == "no_admissible_chain" and trace.amt is None and trace.winner is None
    assert trace.reason.startswith("step 1: no admissible (P, M) candidate (8 generated; rejection reasons:")
    assert "5 low_entailment" in trace.reason and "1 unsafe" in trace.reason
    assert trace.steps[1].candidates == [] and trace.chains == []
    assert len(backend.requests) == 8
    assert base_item(trace) is None


def test_no_admissible_second_step(tmp_path: Path) -> None:
    # every (E, D) text has 2 characters; the (P, M) texts have 4
    trace, _ = run_search(tmp_path, safety=lambda text: len(text) > 2 and no_shen(text))
    assert trace.outcome == "no_admissible_chain"
    assert trace.reason.startswith("step 2: no admissible (E, D) candidate (4 generated")
    assert "4 unsafe" in trace.reason


def test_scorer_and_filter_failures_become_rejections(tmp_path: Path) -> None:
    lm = {k: v for k, v in LM.items() if k != C2}
    nli = {k: v for k, v in NLI.items() if k != C3}

    async def flaky(text: str) -> bool:
        if text.startswith("辰巳"):
            raise RuntimeError("filter down")
        return "申" not in text

    trace, _ = run_search(tmp_path, lm=lm, nli=nli, safety=flaky)
    cands = by_id(trace)
    assert [r.code for r in cands[C2].rejections] == ["scoring_error"] and cands[C2].score is None
    assert "lmA" in cands[C2].rejections[0].detail
    assert [r.code for r in cands[C3].rejections] == ["scoring_error"] and "no scripted output" in cands[C3].rejections[
        0
    ].detail
    assert [r.code for r in cands[C5].rejections] == ["safety_error", "low_entailment"]
    assert cands[C5].safe is False
    # the pool is now cand1, 5, 6: resistance .15 .6 .1 → surprisal 2 2 2 (all equal → 0)
    assert cands[C1].score.lm[0].surprisal_norm == 0.0
    assert trace.steps[0].beam == [C1]


def test_backend_nli_scorer_ids_and_errors(tmp_path: Path) -> None:
    backend = create_backend(f"scripted:{scripted(tmp_path, 'n.jsonl', {'k/nli': 'contradiction'})}")
    scorer = BackendNliScorer(backend)
    assert asyncio.run(scorer.score("p", "h", key="k/nli")).as_tuple() == (0.0, 0.0, 1.0)
    with pytest.raises(ScoringError, match="no scripted output for id 'nli/"):
        asyncio.run(scorer.score("p", "h"))  # no key: a content-hash id


def test_parse_fields() -> None:
    fields = ("premise", "maxim")
    assert parse_fields('Sure! {"premise": "p", "maxim": "m"} Hope this helps.', fields) == {
        "premise": "p",
        "maxim": "m",
    }
    assert parse_fields('```json\n{"premise": "p", "maxim": "m", "x": 1}\n```', fields)["maxim"] == "m"
    assert parse_fields("Premise: p one\nMaxim：m two", fields) == {"premise": "p one", "maxim": "m two"}
    with pytest.raises(OutputParseError, match="lacks non-empty string field"):
        parse_fields('{"premise": "p", "maxim": ""}', fields)
    with pytest.raises(OutputParseError, match="invalid JSON"):
        parse_fields('{"premise": "p", maxim}', fields)
    with pytest.raises(OutputParseError, match="empty output"):
        parse_fields("  ", fields)
    with pytest.raises(OutputParseError, match="no JSON object"):
        parse_fields("Premise: only", fields)


def test_choose_locus() -> None:
    assert choose_locus("sp1") == choose_locus("sp1")
    assert isinstance(choose_locus("sp1", seed=3), Locus)
    assert len({choose_locus(f"s{i}") for i in range(64)}) == 8


# -- slow: the real local model --------------------------------------------------------------


@pytest.mark.slow
def test_end_to_end_with_the_local_gguf_model() -> None:
    from tests.models.local_model import gguf_or_skip
    from verimod.tasks.softhate.scorers import LlamaCppNliScorer, LlamaCppScorer
    from verimod.tasks.softhate.variants import generate_variant, variant_item

    path = gguf_or_skip()
    # Fictional groups: the test checks the mechanics, not the content.
    standpoints = [
        Standpoint(
            id="e2e1",
            text="Velorians should not be allowed to teach in our schools.",
            target=TargetGroup(name="Velorians", level1=Level1Domain.NATIONALITY_REGION, level2="Velorian"),
        ),
        Standpoint(
            id="e2e2",
            text="Quorvish people should not be given public housing.",
            target=TargetGroup(name="Quorvish people", level1=Level1Domain.SOCIO_ECONOMIC_CLASS, level2="Quorvish"),
        ),
    ]
    config = SearchConfig(
        beam_size=2, premise_candidates=2, decomposition_candidates=2, max_tokens=64, structured_output=True
    )

    async def main() -> list[SearchTrace]:
        generator = create_backend(f"gguf:{path}", BackendOptions(threads=2, context_size=2048))
        scorer = LlamaCppScorer.from_backend(generator)
        nli = LlamaCppNliScorer(scorer)
        try:
            traces = [
                await generate_amt(
                    sp,
                    Locus.CAUSE_EFFECT,
                    generator=generator,
                    nli=nli,
                    lms=[scorer],
                    safety=lambda t: True,
                    config=config,
                )
                for sp in standpoints
            ]
            won = [t for t in traces if t.amt is not None]
            if won:
                base = base_item(won[0])
                assert base is not None
                variant = await generate_variant(base, "softhv", generator=generator, nli=nli, config=_variant_config())
                assert len(variant.candidates) == 2
                assert variant.outcome in {"winner", "no_admissible_candidate"}
                if variant.outcome == "winner":
                    assert variant_item(base, variant) is not None
            return traces
        finally:
            await scorer.aclose()
            await generator.aclose()

    traces = asyncio.run(main())
    for trace in traces:
        assert len(trace.steps[0].candidates) == 2
        scored = [c for c in trace.candidates() if c.score is not None]
        for cand in trace.candidates():
            assert cand.raw_output is not None or cand.rejections  # every candidate is accounted for
            assert cand.admissible == (cand.score is not None and not cand.rejections)
        for cand in scored:
            assert cand.score is not None
            assert all(math.isfinite(x) for x in (cand.score.score, cand.score.effect, cand.score.mean))
            assert cand.score.lm[0].scorer == trace.lm_scorers[0]
            assert 0.0 <= cand.score.nli.entail <= 1.0
        if trace.outcome == "winner":
            assert trace.amt is not None and trace.amt.visible_text
            assert trace.winner is not None
            assert trace.winner.psi == pytest.approx(sum(0.5 * e for e in trace.winner.edge_scores))
        else:
            assert trace.reason is not None and trace.reason.startswith(("step 1:", "step 2:"))
        assert SearchTrace.model_validate_json(trace.model_dump_json()) == trace
    assert any(c.score is not None for t in traces for c in t.candidates()), "no candidate was scored at all"


def _variant_config() -> Any:
    from verimod.tasks.softhate.schema import VariantConfig

    return VariantConfig(n_candidates=2, max_tokens=64)
