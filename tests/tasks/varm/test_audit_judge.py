"""Blinded judge passes: the answer contract, blinding over a real loopback HTTP server, pass
orders, resumption, majority and agreement (Fleiss' κ against statsmodels)."""

from __future__ import annotations

import asyncio
import json
import math

import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from tests.conftest import write_lines
from tests.helpers.fake_openai import FakeOpenAI, FakeOpenAIServer
from tests.helpers.recording import Recording
from verimod.core.engine import EngineConfig
from verimod.models import BackendOptions, create_backend
from verimod.tasks.varm.audit_checks import AuditItem
from verimod.tasks.varm.audit_judge import (
    JudgeLine,
    judge_messages,
    load_judge_passes,
    majority,
    parse_judgement,
    pass_agreement,
    run_judge_passes,
)

RATIONALE = (
    "评论指向[T: 胖子][TY: group][T: explicit]，骂“肥猪”[S: attack_or_endorse]，[L: harmful]，[C: body_health]。"
)
ITEMS = [AuditItem(f"i{k}", f"胖子都是肥猪{k}", RATIONALE, system="secret-system-name") for k in range(5)]


def answer(g: str, a: str, c: str) -> str:
    return json.dumps({"groundedness": {"verdict": g, "reason": "r"}, "adequacy": {"verdict": a}, "coherence": c})


def test_parse_judgement_contract():
    votes, reasons = parse_judgement("```json\n" + answer("pass", "FAIL", "pass") + "\n```")
    assert votes == {"groundedness": "pass", "adequacy": "fail", "coherence": "pass"}
    assert reasons == {"groundedness": "r"}
    assert parse_judgement(answer("是", "不合格", "maybe"))[0] == {
        "groundedness": "pass",
        "adequacy": "fail",
        "coherence": "invalid",
    }
    assert set(parse_judgement("I think it is fine.")[0].values()) == {"invalid"}
    assert set(parse_judgement("{not json}")[0].values()) == {"invalid"}
    assert set(parse_judgement(None)[0].values()) == {"invalid"}


def test_prompt_carries_the_data_but_not_the_system():
    system, user = judge_messages(AuditItem("x", "评论原文", RATIONALE, context="上一条", system="gpt-secret"))
    text = system.content + user.content
    assert "gpt-secret" not in text
    assert "评论原文" in user.content and "上一条" in user.content and f"<<<\n{RATIONALE}\n>>>" in user.content
    assert '"target": "胖子"' in user.content
    assert "无法解析" in judge_messages(AuditItem("y", "t", "没有锚点"))[1].content


def test_passes_are_seeded_shuffled_resumable_and_recorded(tmp_path):
    outputs = {f"i{k}#p{p}": answer("pass", "pass" if p < 2 else "fail", "pass") for k in range(5) for p in range(3)}
    outputs["i3#p1"] = "no json here"
    rows = [{"id": key, "output": text} for key, text in outputs.items() if key != "i4#p2"]
    rows.append({"id": "i4#p2", "error": "overloaded"})
    judge = Recording(write_lines(tmp_path / "judge.jsonl", rows))
    out = tmp_path / "judgements.jsonl"
    engine = EngineConfig(max_concurrency=1, max_retries=0)
    asyncio.run(run_judge_passes(ITEMS, [judge], out, passes=3, seed=5, engine=engine))
    orders = [[r.sample_id.split("#")[0] for r in judge.requests if r.sample_id.endswith(f"#p{p}")] for p in range(3)]
    expected = [[f"i{k}" for k in np.random.default_rng([5, p]).permutation(5)] for p in range(3)]
    assert orders == expected and len({tuple(o) for o in orders}) > 1
    assert [r.params.seed for r in judge.requests[::5]] == [5, 6, 7]
    lines = load_judge_passes(out)
    assert len(lines) == 15
    by_key = {(line.item_id, line.index): line for line in lines}
    assert set(by_key[("i3", 1)].votes.values()) == {"invalid"}
    assert by_key[("i4", 2)].error and set(by_key[("i4", 2)].votes.values()) == {"invalid"}
    # a second run asks only what failed (the error line), not the answered or unreadable ones
    judge.requests.clear()
    asyncio.run(run_judge_passes(ITEMS, [judge], out, passes=3, seed=5, engine=engine))
    assert [r.sample_id for r in judge.requests] == ["i4#p2"]


def test_blinded_over_http(tmp_path):
    behaviour = FakeOpenAI(default=lambda _user: answer("pass", "pass", "pass"))
    with FakeOpenAIServer(behaviour) as server:
        judge = create_backend("openai:judge", BackendOptions(base_urls=(server.base_url,)))

        async def go():
            try:
                await run_judge_passes(ITEMS[:2], [judge], tmp_path / "j.jsonl", passes=2)
            finally:
                await judge.aclose()

        asyncio.run(go())
    assert len(behaviour.bodies) == 4
    for body in behaviour.bodies:
        assert "secret-system-name" not in json.dumps(body, ensure_ascii=False)
        assert "i0" not in json.dumps(body["messages"], ensure_ascii=False)
    assert {line.votes["coherence"] for line in load_judge_passes(tmp_path / "j.jsonl")} == {"pass"}


def line(item: str, index: int, g: str) -> JudgeLine:
    return JudgeLine(item, index, "j", {"groundedness": g, "adequacy": "pass", "coherence": "pass"}, {})  # type: ignore[dict-item]


def test_majority_by_hand():
    lines = [
        line("a", 0, "pass"), line("a", 1, "pass"), line("a", 2, "fail"),
        line("b", 0, "pass"), line("b", 1, "fail"), line("b", 2, "invalid"),
        line("c", 0, "pass"), line("c", 1, "pass"),  # pass 2 missing: invalid
        line("d", 0, "fail"), line("d", 1, "fail"), line("d", 2, "fail"),
    ]  # fmt: skip
    verdicts = majority(lines, 3)
    g = {item: verdicts[item]["groundedness"] for item in "abcd"}
    assert (g["a"].verdict, g["a"].unanimous) == ("pass", False)
    assert (g["b"].verdict, g["b"].unanimous) == ("undecided", False)
    assert (g["c"].verdict, g["c"].votes) == ("pass", ("pass", "pass", "invalid"))
    assert (g["d"].verdict, g["d"].unanimous) == ("fail", True)
    assert verdicts["d"]["adequacy"].unanimous


def test_agreement_matches_statsmodels():
    rng = np.random.default_rng(0)
    lines = [line(f"x{k}", p, "pass" if rng.random() < 0.6 else "fail") for k in range(40) for p in range(3)]
    lines.append(line("y", 0, "invalid"))  # an item with an invalid vote is left out of κ
    stats = pass_agreement(majority(lines, 3))["groundedness"]
    table = [
        [sum(1 for x in lines if x.item_id == f"x{k}" and x.votes["groundedness"] == v) for v in ("pass", "fail")]
        for k in range(40)
    ]
    assert stats["fleiss_kappa"] == pytest.approx(sm_fleiss_kappa(np.array(table)), abs=1e-12)
    assert stats["items"] == 40
    assert stats["unanimous_share"] == sum(1 for row in table if 3 in row) / 40
    assert math.isnan(pass_agreement(majority([line("z", 0, "pass")], 1))["groundedness"]["fleiss_kappa"])


def test_bad_judgement_file(tmp_path):
    path = write_lines(tmp_path / "bad.jsonl", [{"item_id": "a", "pass": 0, "votes": {"groundedness": "ok"}}])
    from verimod.core.errors import InputError

    with pytest.raises(InputError, match=r"bad.jsonl:1: field 'votes'"):
        load_judge_passes(path)
