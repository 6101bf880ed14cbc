"""``verimod review audit | export`` end to end: a reference file and a run directory, a scripted
judge, the routing and the sheet, a filled sheet exported to adjudicated records and the audit
table (hand-computed), and bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.conftest import write_lines
from verimod.tasks.varm.audit_review import SHEET_COLUMNS
from verimod.tasks.varm.starter import load_starter


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def verdict_json(g: str, a: str, c: str) -> str:
    dimensions = ("groundedness", "adequacy", "coherence")
    return json.dumps({d: {"verdict": v} for d, v in zip(dimensions, (g, a, c), strict=True)})


def test_audit_then_export(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    refs = [json.loads(r.model_dump_json(exclude_none=True)) for r in load_starter("dev")[:6]]
    refs[5]["cot"] = (
        "这条评论[T: 胖子][TY: group][T: explicit]，并非攻击[S: attack_or_endorse]，[L: harmful]，[C: body_health]。"
    )
    data = write_lines(tmp_path / "refs.jsonl", refs)
    ids = [r["id"] for r in refs]
    # judge: unanimous pass on 0–3, a split on 4 (non-unanimous adequacy), unanimous fail on 5
    answers = {f"{i}#p{p}": verdict_json("pass", "pass", "pass") for i in ids[:4] for p in range(3)}
    answers |= {f"{ids[4]}#p{p}": verdict_json("pass", "fail" if p == 2 else "pass", "pass") for p in range(3)}
    answers |= {f"{ids[5]}#p{p}": verdict_json("pass", "pass", "fail") for p in range(3)}
    judge = write_lines(tmp_path / "judge.jsonl", [{"id": k, "output": v} for k, v in answers.items()])
    out = tmp_path / "audit"
    result = cli("review", "audit", data, "-o", out, "--judge", f"scripted:{judge}", "--sample-rate", "0.25")
    assert result.exit_code == 0, result.stderr
    routing = {r["id"]: r["reasons"] for r in lines(out / "routing.jsonl")}
    assert routing[ids[4]] == ["non_unanimous:adequacy"]
    assert "judge_fail:coherence" in routing[ids[5]] and "proxy:coherence" in routing[ids[5]]
    assert sum(1 for r in routing.values() if r == ["sampled"]) == 1  # ⌈0.25 · 4⌉
    checks = {c["id"]: c for c in lines(out / "checks.jsonl")}
    assert checks[ids[5]]["verdicts"]["coherence"] == "fail"
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["agreement"]["coherence"]["unanimous_share"] == 1.0
    assert summary["agreement"]["adequacy"]["unanimous_share"] == 5 / 6
    assert "Fleiss' κ" in result.stdout and "routed to review" in result.stdout

    with (out / "review.csv").open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["item_id"] for r in rows} == set(routing)
    for row in rows:
        if row["item_id"] == ids[4]:
            row |= {"adequacy": "fail", "reviewer": "ann"}
        if row["item_id"] == ids[5]:
            row |= {"coherence": "fail", "fix_stance": "neutral_mention", "reviewer": "ann"}
    filled = tmp_path / "filled.csv"
    with filled.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(SHEET_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    final = tmp_path / "final"
    exported = cli("review", "export", out, "--source", data, "--sheet", filled, "-o", final, "--json", "-")
    assert exported.exit_code == 0, exported.stderr
    table = {(r["system"], r["dimension"]): r for r in json.loads(exported.stdout)["table"]}
    # adequacy: 4 judge passes + ann's fail on item 4 + judge pass on item 5 → 5 of 6
    assert (table[("reference", "adequacy")]["passed"], table[("reference", "adequacy")]["known"]) == (5, 6)
    assert table[("reference", "adequacy")]["sources"] == {"judge": 5, "human": 1}
    # coherence: items 0–4 judge pass, item 5 reviewer fail
    assert (table[("reference", "coherence")]["passed"], table[("reference", "coherence")]["known"]) == (5, 6)
    adjudicated = {r["id"]: r for r in lines(final / "adjudicated.jsonl")}
    assert adjudicated[ids[5]]["stance"] == "neutral_mention"
    assert adjudicated[ids[5]]["meta"]["review"] == {"corrected": ["stance"], "reviewers": ["ann"]}
    assert adjudicated[ids[0]] == refs[0]


def test_audit_a_run_directory(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    assert cli("eval", "--limit", "4", "--runs-dir", tmp_path / "runs", "--quiet").exit_code == 0
    (run,) = (tmp_path / "runs").iterdir()
    result = cli("review", "audit", run, "-o", tmp_path / "audit", "--sample-rate", "0", "--sheet", "r.jsonl")
    assert result.exit_code == 0, result.stderr
    items = lines(tmp_path / "audit" / "items.jsonl")
    assert len(items) == 4 and {i["system"] for i in items} == {"baseline"}
    assert all(i["rationale"] for i in items)
    routed = lines(tmp_path / "audit" / "routing.jsonl")
    assert len(lines(tmp_path / "audit" / "r.jsonl")) == len(routed)
    assert "proxies" in result.stdout


def test_bad_input(cli, tmp_path):
    data = write_lines(tmp_path / "refs.jsonl", [{"id": "a", "text": "t"}])
    result = cli("review", "audit", data, "-o", tmp_path / "o")
    assert result.exit_code == 2 and "cot" in result.stderr and "\n" not in result.stderr.strip()
    bad = cli("review", "audit", data, "-o", tmp_path / "o", "--sheet", "x.xlsx")
    assert bad.exit_code == 2 and "--sheet" in bad.stderr
    refs = write_lines(tmp_path / "ok.jsonl", [json.loads(load_starter("dev")[0].model_dump_json(exclude_none=True))])
    sheet = tmp_path / "s.csv"
    sheet.write_text("item_id,adequacy,reviewer\nnope,pass,ann\n", encoding="utf-8")
    unknown = cli("review", "export", tmp_path / "o", "--source", refs, "--sheet", sheet, "-o", tmp_path / "f")
    assert unknown.exit_code == 2 and "'nope'" in unknown.stderr
