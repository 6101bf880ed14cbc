"""Stage 3 (top min(300, N_c) per group by Ψ, the annotator check), the verification-sheet
samplers, the perception agreement and the paired tiers, on hand-made items with hand-computed
outcomes."""

from __future__ import annotations

import pytest

from verimod.core.errors import InputError
from verimod.tasks.softhate.evaluation import EvalItem, Judgement, evaluate
from verimod.tasks.softhate.items import BenchItem
from verimod.tasks.softhate.schema import (
    AmtInstance,
    ChainRecord,
    GeneratedItem,
    Level1Domain,
    Locus,
    SearchConfig,
    SearchTrace,
    Standpoint,
    TargetGroup,
    Tier,
)
from verimod.tasks.softhate.selection import apply_check, check_rows, select_top
from verimod.tasks.softhate.sheets import sample_perception, sample_structure, sheet_rows
from verimod.tasks.softhate.verification import SheetRow, agreement_summary

HENAN = TargetGroup(name="河南人", level1=Level1Domain.NATIONALITY_REGION, level2="河南人")
WOMEN = TargetGroup(name="女性", level1=Level1Domain.GENDER, level2="女性")


def softbase(sp: str, group: TargetGroup, psi: float, gold: str = "hate") -> GeneratedItem:
    standpoint = Standpoint(id=sp, text=f"{group.name}不好。", target=group, gold=gold)  # type: ignore[arg-type]
    amt = AmtInstance(endoxon="E", datum="D", premise="P", locus=Locus.ANALOGY, maxim="M",
                      standpoint=standpoint.text, target=group)  # fmt: skip
    chain = ChainRecord(candidate_ids=("a", "b"), edge_scores=(psi, psi), psi=psi)
    trace = SearchTrace(standpoint=standpoint, locus=Locus.ANALOGY, config=SearchConfig(), prompt_version="p",
                        generator="g", nli_scorer="n", lm_scorers=[], steps=[], chains=[chain], outcome="winner",
                        winner=chain, amt=amt)  # fmt: skip
    return GeneratedItem(id=f"{sp}/analogy", tier=Tier.SOFTBASE, text="E D", amt=amt, search=trace,
                         standpoint_id=sp, gold=gold)  # type: ignore[arg-type]  # fmt: skip


ITEMS = [
    softbase("sp-a", HENAN, 1.0),
    softbase("sp-b", HENAN, 2.5),
    softbase("sp-c", WOMEN, 0.3),
    softbase("sp-d", HENAN, 2.5),  # ties sp-b: the smaller id first
    softbase("sp-e", HENAN, -0.4),
    softbase("sp-f", WOMEN, 0.9, gold="non_hate"),  # a control: its own (gold, group)
]


def test_top_per_group_by_psi():
    chosen = select_top(ITEMS, top=2)
    assert [i.id for i in chosen.items] == ["sp-b/analogy", "sp-d/analogy", "sp-c/analogy", "sp-f/analogy"]
    counts = {(g.gold, g.group): (g.available, g.kept, g.lowest_psi) for g in chosen.groups}
    assert counts == {("hate", "河南人"): (4, 2, 2.5), ("hate", "女性"): (1, 1, 0.3), ("non_hate", "女性"): (1, 1, 0.9)}
    assert len(select_top(ITEMS).items) == len(ITEMS)  # min(300, N_c) = N_c
    with pytest.raises(ValueError, match="top must be at least 1"):
        select_top(ITEMS, top=0)


def _row(item: str, annotator: str, criterion: str, verdict: bool, line: int = 1) -> SheetRow:
    return SheetRow(item, annotator, verdict, criterion, "softbase", line)


def test_the_annotator_check_admits_by_majority_on_every_criterion():
    kept = select_top(ITEMS, top=1).items  # sp-b, sp-c, sp-f
    blank = check_rows(kept, ["a1", "a2", "a3"])
    assert len(blank) == 3 * 3 * 3 and {r["verdict"] for r in blank} == {""}
    rows = [_row(r["item_id"], r["annotator"], r["criterion"], True) for r in blank]
    # sp-c: two of three say its validity fails; sp-f: one of three (still admitted)
    flip = {("sp-c/analogy", "a1", "validity"), ("sp-c/analogy", "a2", "validity"), ("sp-f/analogy", "a3", "coherence")}
    rows = [SheetRow(r.item_id, r.annotator, (r.item_id, r.annotator, r.criterion) not in flip, r.criterion)
            for r in rows]  # fmt: skip
    outcome = apply_check(kept, rows)
    assert [i.id for i in outcome.admitted] == ["sp-b/analogy", "sp-f/analogy"]
    assert outcome.rejected == {"sp-c/analogy": ["validity"]}
    assert outcome.passed == {"coherence": 3, "policy_compliance": 3, "validity": 2}
    with pytest.raises(InputError, match="has no verdict on validity"):
        apply_check(kept, [r for r in rows if not (r.item_id == "sp-b/analogy" and r.criterion == "validity")])
    with pytest.raises(InputError, match="not among the selected items"):
        apply_check(kept, [*rows, _row("sp-a/analogy", "a1", "validity", True, line=9)])


def bench(item_id: str, tier: str, pair: str, gold: str = "hate") -> BenchItem:
    return BenchItem(f"text of {item_id}", EvalItem(item_id, gold, tier, pair=pair))  # type: ignore[arg-type]


TIERS = ("softbase", "softgv", "softhv")
BENCH = [bench(f"{p}/{t}", t, p) for p in ("p1", "p2", "p3") for t in TIERS] + [
    bench("p4/softbase", "softbase", "p4"),  # no variants: never drawn as a triple
    *(bench(f"c{k}", "softbase", f"c{k}", "non_hate") for k in range(3)),
]


def test_structure_sheets_draw_whole_triples_reproducibly():
    first = sample_structure(BENCH, 2, seed=5)
    assert first == sample_structure(BENCH, 2, seed=5)
    assert [i.item.tier for i in first] == list(TIERS) * 2
    assert len({i.item.pair for i in first[:3]}) == 1 and first[0].item.pair != first[3].item.pair
    assert {i.item.pair for i in sample_structure(BENCH, 3)} == {"p1", "p2", "p3"}
    with pytest.raises(ValueError, match="only 3 standpoints"):
        sample_structure(BENCH, 4)
    rows = sheet_rows(first, ["a", "b"], ("validity", "coherence", "target_identifiable"))
    assert len(rows) == 6 * 2 * 3 and rows[0]["text"] == first[0].text


def test_perception_sheets_are_balanced():
    chosen = sample_perception(BENCH, 3, seed=1, tiers=("softbase",))
    golds = [i.item.gold for i in chosen]
    assert golds.count("hate") == 3 and golds.count("non_hate") == 3
    with pytest.raises(ValueError, match="hold 3"):
        sample_perception(BENCH, 4, tiers=("softbase",))


def test_agreement_with_gold_by_hand():
    gold = {"h1": "hate", "h2": "hate", "n1": "non_hate", "n2": "non_hate"}
    verdicts = {"h1": (1, 1, 0), "h2": (0, 0, 1), "n1": (0, 0, 0), "n2": (1, 0, 1)}  # agree: h1, n1
    rows = [SheetRow(i, f"a{k}", bool(v), "hateful") for i, vs in verdicts.items() for k, v in enumerate(vs)]
    overall, hate, non_hate = agreement_summary(rows, gold)
    assert (overall.n_items, overall.agree, overall.rate) == (4, 2, 0.5)
    assert (hate.gold, hate.agree, non_hate.gold, non_hate.agree) == ("hate", 1, "non_hate", 1)
    with pytest.raises(ValueError, match="no gold label"):
        agreement_summary([*rows, SheetRow("x", "a0", True, "hateful")], gold)


def test_paired_tiers_keep_only_seeds_present_in_every_tier():
    items = [
        EvalItem("h1", tier="hard", pair="p1"), EvalItem("s1", tier="softbase", pair="p1"),
        EvalItem("h2", tier="hard", pair="p2"), EvalItem("s2", tier="softbase", pair="p2"),
        EvalItem("h3", tier="hard", pair="p3"),  # no soft item: left out of the paired table
        EvalItem("s4", tier="softbase"),  # unpaired
    ]  # fmt: skip
    labels = {"h1": "hate", "s1": "non_hate", "h2": "hate", "s2": "hate", "h3": "non_hate", "s4": "non_hate"}
    report = evaluate(items, [Judgement(i, label) for i, label in labels.items()])  # type: ignore[arg-type]
    assert report.by_tier["hard"].mean == pytest.approx(2 / 3) and report.by_tier["softbase"].mean == pytest.approx(
        1 / 3
    )
    assert report.n_pairs == 2
    assert (report.paired_by_tier["hard"].mean, report.paired_by_tier["softbase"].mean) == (1.0, 0.5)
    assert report.paired_delta["softbase"].mean == pytest.approx(-50.0)
