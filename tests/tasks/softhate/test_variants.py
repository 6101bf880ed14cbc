"""GroupVague / HostilityVague: Best-of-N selection through real ``scripted:`` backend files,
explicit-[TG] rejection (case- and width-insensitive), and every rejection reason kept."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import write_lines
from tests.helpers.recording import Recording
from verimod.models.registry import create_backend
from verimod.tasks.softhate.schema import (
    AmtInstance,
    GeneratedItem,
    Level1Domain,
    Locus,
    SearchConfig,
    SearchTrace,
    Standpoint,
    TargetGroup,
    Tier,
    VariantConfig,
    VariantTrace,
)
from verimod.tasks.softhate.scorers import BackendNliScorer
from verimod.tasks.softhate.variants import explicit_mention, generate_variant, variant_item

GROUP = TargetGroup(
    name="Velorians", level1=Level1Domain.NATIONALITY_REGION, level2="Velorian", aliases=("Veloria folk",)
)
STANDPOINT = Standpoint(id="sp1", text="Velorians should not hold public office.", target=GROUP)
AMT = AmtInstance(
    endoxon="Public office demands loyalty.",
    datum="Velorians keep close ties abroad.",
    premise="Velorians are not loyal.",
    locus=Locus.MORAL_VALUE,
    maxim="Who is not loyal should not hold office.",
    standpoint=STANDPOINT.text,
    target=GROUP,
)
BASE = GeneratedItem(
    id="sp1/moral_value",
    tier=Tier.SOFTBASE,
    text=AMT.visible_text,
    amt=AMT,
    search=SearchTrace(
        standpoint=STANDPOINT,
        locus=Locus.MORAL_VALUE,
        config=SearchConfig(),
        prompt_version="v",
        generator="g",
        nli_scorer="n",
        lm_scorers=[],
        steps=[],
        outcome="winner",
        amt=AMT,
    ),
)
HV = "sp1/moral_value/softhv"
POSTS = {
    f"{HV}/cand1": "Not against anyone, but VELORIANS keep close ties abroad. Public office demands loyalty.",
    f"{HV}/cand2": "Just asking: should people with close ties abroad hold office? Public office demands loyalty.",
    f"{HV}/cand3": "Not against anyone, but those folks from over there keep ties abroad; office demands loyalty.",
    f"{HV}/cand4": "Just asking: should people with close ties abroad hold office? Public office demands loyalty.",
    f"{HV}/cand5": "   ",
    f"{HV}/cand6": "I have nothing against ｖｅｌｏｒｉａｎｓ, but loyalty comes first in public office.",
}
NLI = {
    f"{HV}/cand1": (0.9, 0.1, 0.0),
    f"{HV}/cand2": (0.7, 0.2, 0.1),
    f"{HV}/cand3": (0.5, 0.4, 0.1),
    f"{HV}/cand6": (0.8, 0.2, 0.0),
}


class TableSimilarity:
    """Similarities looked up by candidate text (for exact selection scores)."""

    name = "table"

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table

    def similarity(self, reference: str, candidates: Sequence[str]) -> list[float]:
        assert reference == BASE.text
        return [self.table[c] for c in candidates]


SIMS = TableSimilarity(
    {POSTS[f"{HV}/cand1"]: 0.9, POSTS[f"{HV}/cand2"]: 0.4, POSTS[f"{HV}/cand3"]: 0.8, POSTS[f"{HV}/cand6"]: 0.95}
)


def backends(
    tmp_path: Path,
    posts: dict[str, str],
    nli: dict[str, tuple[float, float, float]],
    errors: dict[str, str] | None = None,
) -> tuple[Recording, BackendNliScorer]:
    rows: list[dict[str, str]] = [{"id": k, "output": v} for k, v in posts.items()]
    rows += [{"id": k, "error": v} for k, v in (errors or {}).items()]
    generator = Recording(write_lines(tmp_path / "gen.jsonl", rows))  # type: ignore[arg-type]
    nli_rows = [
        {"id": f"{k}/nli", "output": json.dumps({"entailment": e, "neutral": n, "contradiction": c})}
        for k, (e, n, c) in nli.items()
    ]
    nli_backend = create_backend(f"scripted:{write_lines(tmp_path / 'nli.jsonl', nli_rows)}")  # type: ignore[arg-type]
    return generator, BackendNliScorer(nli_backend)


def run(tmp_path: Path, kind: str = "softhv", **kwargs: object) -> tuple[VariantTrace, Recording]:
    posts = kwargs.pop("posts", POSTS)
    nli = kwargs.pop("nli", NLI)
    generator, scorer = backends(tmp_path, posts, nli, {f"{HV}/cand7": "server exploded"})  # type: ignore[arg-type]
    kwargs.setdefault("config", VariantConfig(n_candidates=7))
    trace = asyncio.run(generate_variant(BASE, kind, generator=generator, nli=scorer, **kwargs))  # type: ignore[arg-type]
    return trace, generator


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Velorians again", "Velorians"),
        ("VELORIANS again", "Velorians"),
        ("ｖｅｌｏｒｉａｎｓ again", "Velorians"),  # full width
        ("a Velorian teacher", None),  # the singular is not the name (list it as an alias)
        ("the veloria   folk are here", "Veloria folk"),  # alias, spacing collapsed
        ("Velorianses", "Velorians"),  # an English plural suffix still names the group
        ("Neovelorians", None),  # inside another word: not a mention
        ("those folks from over there", None),
    ],
)
def test_explicit_mention(text: str, found: str | None) -> None:
    assert explicit_mention(text, GROUP) == found


def test_explicit_mention_word_boundaries_and_chinese() -> None:
    men = TargetGroup(name="men", level1=Level1Domain.GENDER, level2="Men")
    assert explicit_mention("women only", men) is None
    assert explicit_mention("MEN only", men) == "men"
    hui = TargetGroup(name="某地人", level1=Level1Domain.NATIONALITY_REGION, level2="某地")
    assert explicit_mention("我对某地人没有意见", hui) == "某地人"
    assert explicit_mention("我对那边来的人没有意见", hui) is None


def test_best_of_n_selection_by_hand(tmp_path: Path) -> None:
    trace, generator = run(tmp_path, similarity=SIMS)
    cands = {c.id: c for c in trace.candidates}
    # score = 0.5 · similarity + 0.5 · P(entail):
    #   cand1 0.5·0.9 + 0.5·0.9 = 0.90 (names VELORIANS: rejected)
    #   cand2 0.5·0.4 + 0.5·0.7 = 0.55
    #   cand3 0.5·0.8 + 0.5·0.5 = 0.65 ← winner
    #   cand6 0.5·0.95 + 0.5·0.8 = 0.875 (names ｖｅｌｏｒｉａｎｓ: rejected)
    assert cands[f"{HV}/cand1"].selection_score == pytest.approx(0.90)
    assert cands[f"{HV}/cand2"].selection_score == pytest.approx(0.55)
    assert cands[f"{HV}/cand3"].selection_score == pytest.approx(0.65)
    assert cands[f"{HV}/cand6"].selection_score == pytest.approx(0.875)
    assert trace.ranking == [f"{HV}/cand3", f"{HV}/cand2"]
    assert trace.outcome == "winner" and trace.winner_id == f"{HV}/cand3"
    assert trace.text == POSTS[f"{HV}/cand3"]
    codes = {c.id.rsplit("/", 1)[1]: [r.code for r in c.rejections] for c in trace.candidates}
    assert codes == {
        "cand1": ["explicit_target"],
        "cand2": [],
        "cand3": [],
        "cand4": ["duplicate"],
        "cand5": ["unparseable"],
        "cand6": ["explicit_target"],
        "cand7": ["generation_error"],
    }
    assert "'Velorians'" in cands[f"{HV}/cand1"].rejections[0].detail
    assert cands[f"{HV}/cand4"].rejections[0].detail == f"same text as {HV}/cand2"
    assert cands[f"{HV}/cand4"].selection_score is None and cands[f"{HV}/cand4"].nli is None
    assert "server exploded" in cands[f"{HV}/cand7"].rejections[0].detail
    assert cands[f"{HV}/cand2"].nli.as_tuple() == (0.7, 0.2, 0.1)
    assert (trace.kind, trace.base_id, trace.base_text, trace.similarity) == ("softhv", BASE.id, BASE.text, "table")
    # the requests: ids, the prompt, deterministic decoding
    assert [r.sample_id for r in generator.requests] == [f"{HV}/cand{k}" for k in range(1, 8)]
    first = generator.requests[0]
    assert BASE.text in first.messages[-1].content and "Velorians" in first.messages[-1].content
    assert "social-media post" in first.messages[-1].content
    assert (first.params.temperature, first.params.max_tokens) == (0.0, 200)
    assert VariantTrace.model_validate_json(trace.model_dump_json()) == trace
    item = variant_item(BASE, trace)
    assert item is not None and item.tier is Tier.SOFTHV and item.id == "sp1/moral_value/softhv"
    assert item.text == trace.text and item.amt == AMT and item.variant == trace


def test_default_tfidf_similarity_decides_between_equal_entailments(tmp_path: Path) -> None:
    gv = "sp1/moral_value/softgv"
    posts = {
        f"{gv}/cand1": "Public office demands loyalty. Those newcomers keep close ties abroad.",  # near copy
        f"{gv}/cand2": "Loyalty matters; certain groups look elsewhere.",
    }
    nli = {f"{gv}/cand1": (0.7, 0.2, 0.1), f"{gv}/cand2": (0.7, 0.2, 0.1)}
    trace, generator = run(tmp_path, "softgv", posts=posts, nli=nli, config=VariantConfig(n_candidates=2))
    assert trace.similarity == "char-tfidf-1-3"
    sims = [c.similarity for c in trace.candidates]
    assert sims[0] > sims[1] and all(0.0 < s < 1.0 for s in sims)
    assert trace.winner_id == f"{gv}/cand1"
    assert "coded or indirect reference" in generator.requests[0].messages[-1].content


def test_group_vague_rejects_the_name_unless_told_not_to(tmp_path: Path) -> None:
    gv = "sp1/moral_value/softgv"
    posts = {f"{gv}/cand1": "Public office demands loyalty. Velorians keep close ties abroad."}
    nli = {f"{gv}/cand1": (0.9, 0.1, 0.0)}
    trace, _ = run(tmp_path, "softgv", posts=posts, nli=nli, config=VariantConfig(n_candidates=1))
    assert trace.outcome == "no_admissible_candidate" and trace.text is None
    assert trace.reason == "no admissible candidate among 1; rejection reasons: 1 explicit_target"
    assert variant_item(BASE, trace) is None
    config = VariantConfig(n_candidates=1, reject_explicit_target=False)
    trace, _ = run(tmp_path, "softgv", posts=posts, nli=nli, config=config)
    assert trace.outcome == "winner"


def test_safety_filter_and_failed_scoring(tmp_path: Path) -> None:
    nli = {k: v for k, v in NLI.items() if not k.endswith("cand2")}

    async def no_folks(text: str) -> bool:
        return "folks" not in text

    trace, _ = run(tmp_path, nli=nli, similarity=SIMS, safety=no_folks)
    codes = {c.id.rsplit("/", 1)[1]: [r.code for r in c.rejections] for c in trace.candidates}
    assert codes["cand2"] == ["scoring_error"]  # no NLI line for it
    assert codes["cand3"] == ["unsafe"]
    assert trace.outcome == "no_admissible_candidate"
    assert "1 scoring_error" in trace.reason and "1 unsafe" in trace.reason and "2 explicit_target" in trace.reason
    assert [c.safe for c in trace.candidates][:3] == [True, True, False]


def test_a_base_without_amt_is_refused(tmp_path: Path) -> None:
    generator, scorer = backends(tmp_path, {}, {})
    hard = GeneratedItem(id="h1", tier=Tier.HARD, text="a source comment")
    with pytest.raises(ValueError, match="no AMT"):
        asyncio.run(generate_variant(hard, "softgv", generator=generator, nli=scorer))
