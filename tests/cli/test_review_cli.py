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
        "这条评论[T: 重度残障儿童][TY: group][T: implicit]，"
        "并非攻击[S: attack_or_endorse]，[L: harmful]，[C: body_health]。"
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
    filled = write_sheet(tmp_path / "filled.csv", rows)
    final = tmp_path / "final"
    # stance = neutral_mention on a harmful record breaks the codebook: refused, nothing written
    refused = cli("review", "export", out, "--source", data, "--sheet", filled, "-o", final, "--json", "-")
    assert refused.exit_code == 2
    (line,) = refused.stderr.strip().splitlines()
    assert ids[5] in line and "label = harmful ⇒ stance = attack_or_endorse" in line
    assert not (final / "adjudicated.jsonl").exists()
    for row in rows:
        if row["item_id"] == ids[5]:
            row |= {"fix_label": "non_harmful", "fix_category": "non_attack"}
    write_sheet(filled, rows)
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
    assert adjudicated[ids[5]]["meta"]["review"] == {
        "corrected": ["category", "label", "stance"], "reviewers": ["ann"],
        "rederived_anchors": ["stance", "label", "category"],
    }  # fmt: skip
    assert "并非攻击[S: neutral_mention]" in adjudicated[ids[5]]["cot"]
    assert adjudicated[ids[0]] == refs[0]
    checked = cli("validate", final / "adjudicated.jsonl")  # the exported file passes the validator
    assert checked.exit_code == 0, checked.stdout


def write_sheet(path: Path, rows: list[dict]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(SHEET_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    return path


def read_sheet(path: Path) -> list[dict]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


NON_HARMFUL = {"fix_label": "non_harmful", "fix_category": "non_attack"}


def test_conflicting_corrections_go_to_adjudication(cli, tmp_path):
    refs = [json.loads(r.model_dump_json(exclude_none=True)) for r in load_starter("dev")[:3]]
    data = write_lines(tmp_path / "refs.jsonl", refs)
    out = tmp_path / "audit"
    assert cli("review", "audit", data, "-o", out, "--sample-rate", "1").exit_code == 0
    rows = read_sheet(out / "review.csv")
    first = next(r for r in rows if r["item_id"] == refs[0]["id"])
    ann = first | {"fix_stance": "oppose_attack", **NON_HARMFUL, "reviewer": "ann"}
    bo = first | {"fix_stance": "quote_or_report", **NON_HARMFUL, "reviewer": "bo"}
    sheets = [write_sheet(tmp_path / "ann.csv", [ann]), write_sheet(tmp_path / "bo.csv", [bo])]
    final = tmp_path / "final"
    args = ["review", "export", out, "--source", data, "-o", final]
    refused = cli(*args, "--sheet", sheets[0], "--sheet", sheets[1])
    assert refused.exit_code == 2
    errors = [x for x in refused.stderr.strip().splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and refs[0]["id"] in errors[0]
    assert "ann → oppose_attack" in errors[0] and "bo → quote_or_report" in errors[0]
    assert not (final / "adjudicated.jsonl").exists()
    # the same refusal whatever the order of the sheets (never "last one wins")
    assert cli(*args, "--sheet", sheets[1], "--sheet", sheets[0]).exit_code == 2
    (to_settle,) = read_sheet(final / "adjudication.csv")
    assert to_settle["item_id"] == refs[0]["id"] and to_settle["route"].startswith("conflict: stance:")
    to_settle |= {"fix_stance": "quote_or_report", **NON_HARMFUL, "reviewer": "cy"}
    ruling = write_sheet(tmp_path / "cy.csv", [to_settle])
    settled = cli(*args, "--sheet", sheets[0], "--sheet", sheets[1], "--sheet", ruling, "--adjudicator", "cy")
    assert settled.exit_code == 0, settled.stderr
    record = lines(final / "adjudicated.jsonl")[0]
    assert record["stance"] == "quote_or_report" and record["meta"]["review"]["adjudicated_by"] == ["cy"]
    assert not (final / "adjudication.csv").exists()


def test_blind_sheet_of_several_systems(cli, tmp_path):
    refs = [json.loads(r.model_dump_json(exclude_none=True)) for r in load_starter("dev")[:4]]
    first, second = write_lines(tmp_path / "a.jsonl", refs), write_lines(tmp_path / "b.jsonl", refs)
    out = tmp_path / "audit"
    assert cli("review", "audit", first, second, "-o", out, "--sample-rate", "1").exit_code == 0
    rows = read_sheet(out / "review.csv")
    key = json.loads((out / "blind_key.json").read_text(encoding="utf-8"))["codes"]
    assert [r["item_id"] for r in rows] == [f"b{k:04d}" for k in range(1, 9)]
    assert sorted(key.values()) == sorted(f"{s}/{r['id']}" for s in ("a", "b") for r in refs)
    assert all(r["system"] == "" and r["judge_votes"] == "" for r in rows)
    assert "a/" not in (out / "review.csv").read_text(encoding="utf-8-sig")  # no source prefix anywhere
    order = [key[r["item_id"]].split("/")[0] for r in rows]
    assert order != sorted(order)  # the two sources are interleaved, not in blocks
    code = next(c for c, audit_id in key.items() if audit_id == f"b/{refs[1]['id']}")
    filled = [r | {"adequacy": "fail", "reviewer": "ann"} if r["item_id"] == code else r for r in rows]
    final = tmp_path / "final"
    exported = cli("review", "export", out, "--source", first, "--source", second, "--sheet",
                   write_sheet(tmp_path / "filled.csv", filled), "-o", final, "--json", "-")  # fmt: skip
    assert exported.exit_code == 0, exported.stderr
    table = {r["dimension"]: r for r in json.loads(exported.stdout)["table"]}
    assert table["adequacy"]["sources"].get("human") == 1
    unblinded = cli("review", "audit", first, second, "-o", tmp_path / "open", "--sample-rate", "1", "--no-blind")
    assert unblinded.exit_code == 0 and not (tmp_path / "open" / "blind_key.json").exists()
    assert read_sheet(tmp_path / "open" / "review.csv")[0]["item_id"] == f"a/{refs[0]['id']}"


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


def test_judge_passes_take_the_transport_options(cli, tmp_path, monkeypatch):
    from tests.helpers.fake_openai import FakeOpenAI, FakeOpenAIServer

    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    refs = [json.loads(r.model_dump_json(exclude_none=True)) for r in load_starter("dev")[:2]]
    data = write_lines(tmp_path / "refs.jsonl", refs)
    behaviour = FakeOpenAI(default=lambda _user: verdict_json("pass", "pass", "pass"), delay_s=2.0)
    with FakeOpenAIServer(behaviour) as server:
        result = cli("review", "audit", data, "-o", tmp_path / "audit", "--judge", "openai:judge", "--base-url",
                     server.base_url, "--passes", "1", "--timeout", "0.3", "--retries", "1", "--no-cache")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert sorted(behaviour.hits.values()) == [2, 2]  # one pass per item, 1 + 1 retry each
    judgements = lines(tmp_path / "audit" / "judgements.jsonl")
    assert all("no answer within 0.3 s" in j["error"] for j in judgements)


def test_serve_refuses_an_allowed_host_that_is_not_a_host_name(cli, tmp_path):
    refs = [json.loads(r.model_dump_json(exclude_none=True)) for r in load_starter("dev")[:2]]
    data = write_lines(tmp_path / "refs.jsonl", refs)
    assert cli("review", "audit", data, "-o", tmp_path / "audit").exit_code == 0
    result = cli("review", "serve", tmp_path / "audit", "--allowed-host", "http://review.lab/")
    assert result.exit_code == 2 and "--allowed-host" in result.stderr and "\n" not in result.stderr.strip()
