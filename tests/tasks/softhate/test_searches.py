"""Searches at scale: the plan, the per-seed standpoints, resuming only with the same settings,
the parallel runner (N standpoints → N traces) and the shared bound on requests in flight."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import pytest

from tests.conftest import write_lines
from verimod.core.errors import InputError
from verimod.models.base import BackendOptions, ModelBackend, ModelRequest, ModelResponse
from verimod.tasks.softhate.groups import load_group_taxonomy
from verimod.tasks.softhate.schema import Level1Domain, Locus, SearchConfig, Standpoint, TargetGroup
from verimod.tasks.softhate.scorers import ScoringError
from verimod.tasks.softhate.scoring import NliProbs, ScoringConfig
from verimod.tasks.softhate.searches import BoundedBackend, finished_searches, plan_searches, run_searches
from verimod.tasks.softhate.seed_standpoints import select_seed_standpoints, standpoint_id
from verimod.tasks.softhate.standpoints import Extraction

GROUP = TargetGroup(name="河南人", level1=Level1Domain.NATIONALITY_REGION, level2="河南人")
STANDPOINTS = [Standpoint(id=f"sp-{k}", text=f"河南人第{k}个立场。", target=GROUP) for k in range(7)]


class Answers(ModelBackend):
    """Answers every search prompt from its sample id; records the requests in flight."""

    prefix = "answers"

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__("test", BackendOptions())
        self.delay = delay
        self.in_flight: dict[str, int] = {}
        self.most_requests = 0
        self.most_searches = 0

    async def generate(self, request: ModelRequest) -> ModelResponse:
        search = request.sample_id.split("/")[0]
        self.in_flight[search] = self.in_flight.get(search, 0) + 1
        self.most_requests = max(self.most_requests, sum(self.in_flight.values()))
        self.most_searches = max(self.most_searches, len(self.in_flight))
        await asyncio.sleep(self.delay)
        self.in_flight[search] -= 1
        if not self.in_flight[search]:
            del self.in_flight[search]
        k = request.sample_id.rsplit("cand", 1)[1]
        if "/step2/" in request.sample_id:
            text = {"endoxon": f"安宁很重要{k}。", "datum": f"{request.sample_id}的事据{k}。"}
        else:
            text = {"premise": f"{request.sample_id}的前提{k}。", "maxim": f"准则{k}。"}
        return ModelResponse(text=json.dumps(text, ensure_ascii=False))


class Entails:
    name = "entails"

    async def score(self, premise: str, hypothesis: str, *, key: str | None = None) -> NliProbs:
        return NliProbs(entail=0.9, neutral=0.1, contradict=0.0)


def test_plans_one_search_per_standpoint_or_every_locus():
    auto = plan_searches(STANDPOINTS, "auto", seed=3)
    assert [s.id for s, _ in auto] == [s.id for s in STANDPOINTS] and auto == plan_searches(STANDPOINTS, "auto", 3)
    assert len(plan_searches(STANDPOINTS[:2], "all")) == 16
    assert plan_searches(STANDPOINTS[:1], [Locus.ANALOGY]) == [(STANDPOINTS[0], Locus.ANALOGY)]
    with pytest.raises(ValueError, match="occurs twice"):
        plan_searches([STANDPOINTS[0], STANDPOINTS[0]])


def test_n_standpoints_give_n_traces_in_parallel_within_the_request_bound(tmp_path):
    generator = Answers(delay=0.01)
    bounded = BoundedBackend(generator, limit=4)
    assert (bounded.spec, bounded.identity()) == (generator.spec, generator.identity())
    config = SearchConfig(beam_size=2, premise_candidates=3, decomposition_candidates=2)
    traces = []
    plan = plan_searches(STANDPOINTS)
    count = asyncio.run(
        run_searches(
            plan,
            generator=bounded,
            nli=Entails(),
            lms=[],
            safety=lambda _: True,
            config=config,
            on_trace=traces.append,
            parallel=3,
        )
    )
    assert count == len(STANDPOINTS) and sorted(t.standpoint.id for t in traces) == sorted(s.id for s in STANDPOINTS)
    assert all(t.outcome == "winner" for t in traces)
    assert 1 < generator.most_searches <= 3 and generator.most_requests <= 4
    path = write_lines(tmp_path / "searches.jsonl", [t.model_dump(mode="json") for t in traces])
    assert len(finished_searches(path, config)) == len(STANDPOINTS)
    other = config.model_copy(update={"scoring": ScoringConfig(tau_ent=0.7)})
    with pytest.raises(InputError, match=r"searches.jsonl:1.*tau_ent: 0.6 there, 0.7 now"):
        finished_searches(path, other)
    assert finished_searches(tmp_path / "absent.jsonl", config) == {}


def extraction(item: str, target: str | None, standpoint: str = "立场") -> Extraction:
    if target is None:
        return Extraction(item, f"原文{item}", None, None, "", "no JSON object")
    return Extraction(item, f"原文{item}", standpoint, target, "{}", None)


def test_one_standpoint_per_verified_seed():
    taxonomy = load_group_taxonomy(language="zh")
    extractions = [
        extraction("cold/1", "河南人"),
        extraction("cold-2", "这些河南佬"),
        extraction("cold-3", "河南省的人", standpoint="坏立场"),  # fails the check
        extraction("cold-4", "火星人"),  # unresolved
        extraction("cold-5", "东北人"),  # a group of one, below min_group
        extraction("cold-6", None),  # failed extraction: ignored
        extraction("cold-7", "河南人", standpoint="报错"),  # the scorer fails: the check fails, with the error
    ]

    async def entail(premise: str, hypothesis: str) -> float:
        if "报错" in (premise, hypothesis):
            raise ScoringError("NLI call failed: server")
        return 0.3 if "坏立场" in (premise, hypothesis) else 0.8

    chosen = asyncio.run(
        select_seed_standpoints(extractions, taxonomy, entailment=entail, min_group=2, gold="non_hate", concurrency=2)
    )
    assert [(s.id, s.source_id, s.target.name, s.gold) for s in chosen.standpoints] == [
        ("sp-cold_1", "cold/1", "河南人", "non_hate"),
        ("sp-cold-2", "cold-2", "河南人", "non_hate"),
    ]
    assert chosen.members == {"河南人": ["cold/1", "cold-2", "cold-3", "cold-7"], "东北人": ["cold-5"]}
    assert chosen.dropped == {
        "东北人": "fewer than 2 items",
        "<unresolved>": "target phrase not in the taxonomy: 1 items",
    }
    checks = {c["item_id"]: (c["passed"], c["error"]) for c in chosen.checks}
    assert checks == {
        "cold/1": (True, None), "cold-2": (True, None), "cold-3": (False, None),
        "cold-7": (False, "NLI call failed: server"),
    }  # fmt: skip
    assert chosen.method_counts() == {"exact": 3, "demonym": 1, "rewrite": 1, "unresolved": 1}
    unchecked = asyncio.run(select_seed_standpoints(extractions, taxonomy, entailment=None, min_group=1))
    assert len(unchecked.standpoints) == 5 and {c["passed"] for c in unchecked.checks} == {None}
    with pytest.raises(ValueError, match="standpoint id 'sp-a_b'"):
        asyncio.run(select_seed_standpoints([extraction("a/b", "河南人"), extraction("a b", "河南人")], taxonomy,
                                            entailment=None))  # fmt: skip
    assert standpoint_id("weibo 12/3") == "sp-weibo_12_3"


class Slow(ModelBackend):
    prefix = "slow"

    def __init__(self) -> None:
        super().__init__("s", BackendOptions())
        self.now = self.most = 0

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.now += 1
        self.most = max(self.most, self.now)
        await asyncio.sleep(0.005)
        self.now -= 1
        return ModelResponse(text="ok")

    async def generate_batch(self, requests: Sequence[ModelRequest]) -> list:  # type: ignore[override]
        return [await self.generate(r) for r in requests]


def test_the_bound_holds_across_callers():
    inner = Slow()
    bounded = BoundedBackend(inner, limit=3)
    requests = [ModelRequest(sample_id=str(k), messages=()) for k in range(20)]

    async def go() -> None:
        await asyncio.gather(*(bounded.generate(r) for r in requests), bounded.generate_batch(requests[:2]))

    asyncio.run(go())
    assert inner.most == 3
    with pytest.raises(ValueError, match="at least 1"):
        BoundedBackend(inner, 0)
