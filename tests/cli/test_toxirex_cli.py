"""``verimod toxirex`` end to end: comment dump → sub-threads → predictions (scripted files, a real
OpenAI-compatible server on loopback, a real local model) → evaluation and agreement."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from jsonschema import Draft202012Validator
from sklearn.metrics import precision_recall_fscore_support
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from tests.conftest import write_lines
from tests.helpers.fake_openai import FakeOpenAI, FakeOpenAIServer
from tests.tasks.toxirex.helpers import full
from verimod.core.engine import EngineConfig
from verimod.core.errors import InputError
from verimod.models import BackendOptions, create_backend
from verimod.tasks.toxirex.predict import predict_subthreads, raw_log_path
from verimod.tasks.toxirex.render import render_subthread
from verimod.tasks.toxirex.schema import toxic_reasoning_json_schema
from verimod.tasks.toxirex.subthread_files import load_subthreads
from verimod.tasks.toxirex.subthreads import extract_subthreads
from verimod.tasks.toxirex.threads import read_threads

FIXTURES = Path(__file__).parents[1] / "tasks" / "toxirex" / "fixtures"
PARSE_CLASSES = {"invalid_json", "schema_violation", "stopping_violation", "missing"}


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.fixture
def subthreads_file(cli, tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "subthreads.jsonl"
    result = cli("toxirex", "subthreads", FIXTURES / "threads_en.jsonl", out, "--quiet")
    assert result.exit_code == 0, result.stderr
    return out


def test_subthreads_are_the_extraction_with_texts(cli, tmp_path):
    out, uncovered = tmp_path / "st.jsonl", tmp_path / "uncovered.txt"
    result = cli("toxirex", "subthreads", FIXTURES / "threads_en.jsonl", out, "--uncovered", uncovered)
    assert result.exit_code == 0, result.stderr
    forest = read_threads(FIXTURES / "threads_en.jsonl")
    direct = extract_subthreads(forest)
    loaded = load_subthreads(out)
    assert [t.thread_id for t in loaded] == [t.thread_id for t in direct.subthreads]
    assert [[(c.id, c.parent_id, c.author, c.text) for c in t.comments] for t in loaded] == [
        [(c.id, c.parent_id, c.author, c.text) for c in t.comments] for t in direct.subthreads
    ]
    assert [(t.post.title, t.post.text) for t in loaded] == [(t.post.title, t.post.text) for t in direct.subthreads]
    listed = uncovered.read_text(encoding="utf-8").split()
    assert listed == direct.uncovered
    every = {c for tree in forest.trees for c in tree.comments}
    assert sorted(listed + [c for t in loaded for c in t.comment_ids]) == sorted(every)
    assert f"{len(loaded)} sub-threads" in result.stdout


def test_subthreads_bad_record_is_one_line_and_exit_2(cli, tmp_path):
    result = cli("toxirex", "subthreads", FIXTURES / "threads_bad.jsonl", tmp_path / "st.jsonl")
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert "\n" not in message and "threads_bad.jsonl:" in message and message.startswith("error: ")
    assert not (tmp_path / "st.jsonl").exists()


def test_subthreads_skip_lists_every_problem(cli, tmp_path):
    result = cli("toxirex", "subthreads", FIXTURES / "threads_bad.jsonl", tmp_path / "st.jsonl", "--on-error", "skip")
    assert result.exit_code == 0, result.stderr
    problems = read_threads(FIXTURES / "threads_bad.jsonl", on_error="skip").problems
    reported = [x for x in result.stderr.splitlines() if x.startswith("skipped (")]
    assert len(reported) == len(problems) > 5
    assert {x.split(")")[0].removeprefix("skipped (") for x in reported} == {p.kind for p in problems}


def test_subthread_file_problems_name_line_and_field(subthreads_file, tmp_path):
    rows = lines(subthreads_file)
    broken = json.loads(json.dumps(rows))
    broken[1]["comments"][1]["parent_id"] = "elsewhere"
    path = write_lines(tmp_path / "broken.jsonl", broken)
    with pytest.raises(InputError, match=r"broken\.jsonl:2: field 'comments\.1\.parent_id'"):
        load_subthreads(path)
    twice = write_lines(tmp_path / "twice.jsonl", [rows[0], rows[0]])
    with pytest.raises(InputError, match=r"twice\.jsonl:2: field 'comments\.0\.id'.*already in"):
        load_subthreads(twice)
    renamed = json.loads(json.dumps(rows))
    renamed[0]["thread_id"] = "other/c1"
    with pytest.raises(InputError, match=r"renamed\.jsonl:1: field 'thread_id'"):
        load_subthreads(write_lines(tmp_path / "renamed.jsonl", renamed))


def _thread_output(entries: list[dict]) -> str:
    return json.dumps({"comments": entries}, ensure_ascii=False)


def test_predict_writes_one_line_per_comment_and_resumes(cli, subthreads_file, tmp_path):
    threads = load_subthreads(subthreads_file)
    assert len(threads) >= 3
    first, second, third = threads[:3]
    hateful = full(specificity="group", group="cyclists", group_type="Other")
    answers = [
        {"id": first.thread_id, "output": "```json\n" + _thread_output([{"messageNr": 2, **hateful}]) + "\n```"},
        {"id": second.thread_id, "output": "I think comment 2 is rude."},
        {"id": third.thread_id, "error": "model overloaded"},
    ]
    script = write_lines(tmp_path / "model.jsonl", answers)
    out = tmp_path / "preds.jsonl"
    args = ("toxirex", "predict", subthreads_file, out, "--model", f"scripted:{script}", "--max-concurrency", "2")
    result = cli(*args)
    assert result.exit_code == 0, result.stderr
    predictions = lines(out)
    assert [p["commentId"] for p in predictions] == [c for t in threads for c in t.comment_ids]
    by_id = {p["commentId"]: p for p in predictions}
    assert by_id[first.comment_ids[1]]["reasoning"] == hateful
    assert all(
        by_id[c]["reasoning"] == {"toxicity": False, "counternarrative": False}
        for k, c in enumerate(first.comment_ids)
        if k != 1
    )
    assert {by_id[c]["errorClass"] for c in second.comment_ids} == {"invalid_json"}
    assert {by_id[c]["errorClass"] for c in third.comment_ids} == {"request_failed"}
    assert "model overloaded" in by_id[third.comment_ids[0]]["error"]
    log = raw_log_path(out)
    assert len(lines(log)) == len(threads)

    # the failed request is asked again on the next start; the others are not
    answers[2] = {"id": third.thread_id, "output": _thread_output([])}
    write_lines(script, answers)
    again = cli(*args)
    assert again.exit_code == 0, again.stderr
    assert "(1 asked, 0 failed" in again.stdout
    assert len(lines(log)) == len(threads) + 1
    updated = {p["commentId"]: p for p in lines(out)}
    assert all(updated[c]["reasoning"]["toxicity"] is False for c in third.comment_ids)
    assert updated[first.comment_ids[1]] == by_id[first.comment_ids[1]]


def test_predict_asks_for_the_json_schema_over_http(subthreads_file, tmp_path):
    threads = load_subthreads(subthreads_file)[:2]
    answer = _thread_output([{"messageNr": 1, "toxicity": True, "counternarrative": False, "justInappropriate": True}])
    Draft202012Validator(toxic_reasoning_json_schema("thread")).validate(
        {"comments": [{"messageNr": 1, "toxicity": True, "counternarrative": False, "justInappropriate": True,
                       "hasImplication": None, "implication": None, "propositionComposition": None,
                       "implSarcasm": None, "implStereotype": None, "attitudes": None}]}
    )  # fmt: skip
    behaviour = FakeOpenAI(default=lambda _user: answer)
    out = tmp_path / "preds.jsonl"
    with FakeOpenAIServer(behaviour) as server:
        backend = create_backend("openai:toy", BackendOptions(base_urls=(server.base_url,)))

        async def go():
            try:
                return await predict_subthreads(
                    threads, backend, out, language="en", engine=EngineConfig(max_retries=0)
                )
            finally:
                await backend.aclose()

        summary = asyncio.run(go())
    assert summary.outcomes == {"ok": sum(len(t) for t in threads)}
    assert len(behaviour.bodies) == len(threads)
    for body in behaviour.bodies:
        response_format = body["response_format"]
        assert response_format["type"] == "json_schema"
        assert response_format["json_schema"]["schema"] == toxic_reasoning_json_schema("thread")
        system, user = body["messages"]
        assert system["role"] == "system" and '"messageNr"' in system["content"]
        assert user["content"] in {render_subthread(t) for t in threads}
    first = next(p for p in lines(out) if p["commentId"] == threads[0].comment_ids[0])
    assert first["reasoning"]["justInappropriate"] is True and first["model"] == "openai:toy"


def _pairs(annotations: list[dict], predictions: list[dict], variable: str) -> tuple[list[str], list[str]]:
    predicted = {p["commentId"]: p.get("reasoning") for p in predictions}
    y_true, y_pred = [], []
    for a in annotations:
        y_true.append("yes" if a["reasoning"][variable] else "no")
        pred = predicted.get(a["commentId"])
        y_pred.append("<invalid>" if pred is None else ("yes" if pred[variable] else "no"))
    return y_true, y_pred


def test_evaluate_first_questions_match_sklearn(cli, tmp_path):
    annotations, predictions = lines(FIXTURES / "annotations.jsonl"), lines(FIXTURES / "predictions.jsonl")
    result = cli("toxirex", "evaluate", FIXTURES / "annotations.jsonl", FIXTURES / "predictions.jsonl", "--json", "-")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    rows = {(r["variable"], r["setting"], r["mode"]): r for r in report["scores"]}
    for variable in ("toxicity", "counternarrative"):
        y_true, y_pred = _pairs(annotations, predictions, variable)
        p, r, f, _ = precision_recall_fscore_support(y_true, y_pred, average="weighted", zero_division=0)
        row = rows[(variable, "propagated", "all")]
        assert (row["precision"], row["recall"], row["f1"]) == pytest.approx((p, r, f))
        shares = np.unique(y_true, return_counts=True)[1] / len(y_true)
        assert row["prior"] == pytest.approx(float(np.sum(shares**2)))
        assert row["n"] == len(annotations)
        assert row["n_invalid"] == sum(v == "<invalid>" for v in y_pred) > 0
    assert report["n_missing"] == 1
    table = cli("toxirex", "evaluate", FIXTURES / "annotations.jsonl", FIXTURES / "predictions.jsonl")
    assert table.exit_code == 0 and "summary sentences" in table.stdout and "authorBelief" in table.stdout


def test_evaluate_bad_prediction_line_exits_2(cli, tmp_path):
    rows = lines(FIXTURES / "predictions.jsonl")
    rows[3] = {**rows[3], "errorClass": "gave_up"}
    rows[3].pop("reasoning", None)
    path = write_lines(tmp_path / "preds.jsonl", rows)
    result = cli("toxirex", "evaluate", FIXTURES / "annotations.jsonl", path)
    assert result.exit_code == 2
    assert "preds.jsonl:4" in result.stderr and "errorClass" in result.stderr
    assert cli("toxirex", "evaluate", FIXTURES / "annotations.jsonl", path, "--modes", "best").exit_code == 2


def test_agree_kappa_matches_statsmodels_and_sheet_counts(cli, tmp_path):
    annotations = lines(FIXTURES / "annotations.jsonl")
    sheet = tmp_path / "sheet.jsonl"
    result = cli(
        "toxirex", "agree", FIXTURES / "annotations.jsonl", "--sheet", sheet, "--bootstrap", "50", "--json", "-"
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    kappas = {r["variable"]: r for r in report["kappa"]}
    by_comment: dict[str, dict[str, bool]] = {}
    for a in annotations:
        by_comment.setdefault(a["commentId"], {})[a["annotator"]] = a["reasoning"]["toxicity"]
    table = np.array([[int(v[k]) for k in sorted(v)] for _, v in sorted(by_comment.items())])
    counts, _ = aggregate_raters(table)
    assert kappas["toxicity"]["kappa"] == pytest.approx(fleiss_kappa(counts, method="fleiss"))
    assert kappas["toxicity"]["n_items"] == len(by_comment)
    rows = lines(sheet)
    assert report["sheet_rows"] == len(rows) > 0
    categories = ["error", "subjective", "conditional"]
    filled = [{**r, "category": categories[k % 3]} for k, r in enumerate(rows)]
    write_lines(sheet, filled)
    counted = cli(
        "toxirex", "agree", FIXTURES / "annotations.jsonl", "--counts", sheet, "--bootstrap", "10", "--json", "-"
    )
    assert counted.exit_code == 0, counted.stderr
    total = json.loads(counted.stdout)["categories"]["total"]
    assert [total[c] for c in categories] == [sum(1 for k in range(len(rows)) if k % 3 == i) for i in range(3)]


def test_predict_takes_the_transport_options(cli, subthreads_file, tmp_path):
    """--timeout and --retries reach the engine: a server slower than the timeout is asked
    1 + retries times per sub-thread, then the comments are request_failed."""
    threads = load_subthreads(subthreads_file)[:2]
    write_lines(subthreads_file, lines(subthreads_file)[:2])
    behaviour = FakeOpenAI(default=lambda _user: _thread_output([]), delay_s=2.0)
    out = tmp_path / "preds.jsonl"
    with FakeOpenAIServer(behaviour) as server:
        result = cli("toxirex", "predict", subthreads_file, out, "-m", "openai:toy", "--base-url", server.base_url,
                     "--timeout", "0.3", "--retries", "1", "--no-cache")  # fmt: skip
        assert result.exit_code == 0, result.stderr
        assert sorted(behaviour.hits.values()) == [2] * len(threads)
    assert {p["errorClass"] for p in lines(out)} == {"request_failed"}
    assert "no answer within 0.3 s" in lines(out)[0]["error"]
    assert "grammar-constrained" not in result.stderr  # no warning for a served model
    bad = cli("toxirex", "predict", subthreads_file, out, "-m", "openai:toy", "--timeout", "0")
    assert bad.exit_code == 2 and "--timeout" in bad.stderr


@pytest.mark.slow
def test_predict_with_a_gguf_model_on_the_cpu_warns_and_takes_local_options(cli, subthreads_file, tmp_path):
    from tests.models.local_model import gguf_or_skip

    model = gguf_or_skip()
    write_lines(subthreads_file, lines(subthreads_file)[:1])
    out = tmp_path / "preds.jsonl"
    result = cli("toxirex", "predict", subthreads_file, out, "-m", f"gguf:{model}", "--threads", "2",
                 "--context-size", "8192", "--max-tokens", "8", "--timeout", "900", "--retries", "0")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "grammar-constrained (JSON-schema) decoding" in result.stderr and "--timeout 900" in result.stderr
    assert len(lines(out)) == len(load_subthreads(subthreads_file)[0].comment_ids)
    too_small = cli("toxirex", "predict", subthreads_file, out, "-m", f"gguf:{model}", "--context-size", "100")
    assert too_small.exit_code == 2 and "--context-size" in too_small.stderr


def test_evaluate_random_mode_shows_the_share_of_empty_draws_and_majority_and_by_language(cli, tmp_path):
    rows = lines(FIXTURES / "annotations.jsonl")
    options = ["--modes", "random,majority", "--variables", "hasOther,toxicity", "--by", "lang", "--json", "-"]
    result = cli("toxirex", "evaluate", FIXTURES / "annotations.jsonl", FIXTURES / "predictions.jsonl", *options)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert list(report["groups"]) == ["en", "nl", "zh"]
    for group in [report, *report["groups"].values()]:
        for row in group["scores"]:
            if row["mode"] == "random" and row["nonempty_share"] < 0.5:
                assert row["f1"] is None and row["precision"] is None  # never 100 % of nothing
            if row["n"] == 0:
                assert row["f1"] is None
    zh = {(r["variable"], r["setting"], r["mode"]): r for r in report["groups"]["zh"]["scores"]}
    assert report["groups"]["zh"]["n_comments"] == len({r["commentId"] for r in rows if r["lang"] == "zh"})
    assert zh[("toxicity", "propagated", "majority")]["n"] == report["groups"]["zh"]["n_comments"]
    # one comment, only a1 of three reached the implication: most random draws have no item
    one = [{"threadId": "t", "commentId": "e0", "annotator": a, "lang": "en", "reasoning": r}
           for a, r in (("a1", full()), ("a2", {"toxicity": False, "counternarrative": False}),
                        ("a3", {"toxicity": False, "counternarrative": False}))]  # fmt: skip
    gold = write_lines(tmp_path / "one.jsonl", one)
    pred = write_lines(tmp_path / "pred.jsonl", [{"threadId": "t", "commentId": "e0", "reasoning": full()}])
    args = ("toxirex", "evaluate", gold, pred, "--modes", "random", "--variables", "implPolarity", "--settings",
            "conditional", "--seed", "4")  # fmt: skip
    as_json = json.loads(cli(*args, "--json", "-").stdout)["scores"][0]
    share = float(np.mean(np.random.default_rng(4).integers(0, [3], size=(100, 1))[:, 0] == 0))
    assert as_json["nonempty_share"] == pytest.approx(share) and share < 0.5
    assert as_json["n"] == 0 and as_json["f1"] is None and as_json["precision"] is None
    shown = cli(*args).stdout
    row = next(x for x in shown.splitlines() if "implPolarity" in x)
    assert f"{100 * share:.0f} %" in row and row.count("n/a") == 4 and "100.0" not in row
    unlabelled = write_lines(tmp_path / "a.jsonl", [{k: v for k, v in r.items() if k != "lang"} for r in rows])
    no_lang = cli("toxirex", "agree", unlabelled, "--by", "lang")
    assert no_lang.exit_code == 2 and "has no lang" in no_lang.stderr


def test_agree_by_language_and_undefined_resamples(cli):
    result = cli(
        "toxirex", "agree", FIXTURES / "annotations.jsonl", "--by", "lang", "--bootstrap", "200", "--json", "-"
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["missing"] == "complete" and list(report["groups"]) == ["en", "nl", "zh"]
    for rows in [report["kappa"], *report["groups"].values()]:
        for row in rows:
            assert row["n_resamples"] == (200 if row["n_items"] else 0) and 0 <= row["n_undefined"] <= 200
    shown = cli("toxirex", "agree", FIXTURES / "annotations.jsonl", "--by", "lang", "--bootstrap", "200")
    assert "lang = zh" in shown.stdout and "undefined" in shown.stdout


def test_schema_command_prints_the_structured_output_schema(cli):
    result = cli("toxirex", "schema")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    Draft202012Validator.check_schema(schema)
    assert schema == toxic_reasoning_json_schema("thread")
    assert json.loads(cli("toxirex", "schema", "--scope", "comment").stdout) == toxic_reasoning_json_schema("comment")
    assert cli("toxirex", "schema", "--scope", "forum").exit_code == 2


@pytest.mark.slow
def test_predict_with_a_real_local_model(cli, tmp_path, monkeypatch):
    """Qwen2.5-Coder-0.5B through the gguf backend, the schema as a grammar: the output is
    complete JSON whenever generation stopped on its own, and every comment gets one line."""
    from tests.models.local_model import gguf_or_skip

    model = gguf_or_skip()
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    subthreads = tmp_path / "st.jsonl"
    assert cli("toxirex", "subthreads", FIXTURES / "threads_zh.jsonl", subthreads, "--quiet").exit_code == 0
    threads = load_subthreads(subthreads)[:1]
    write_lines(subthreads, lines(subthreads)[:1])
    out = tmp_path / "preds.jsonl"
    result = cli("toxirex", "predict", subthreads, out, "--model", f"gguf:{model}", "--language", "zh",
                 "--max-tokens", "1500", "--max-concurrency", "1")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    predictions = lines(out)
    assert [p["commentId"] for p in predictions] == list(threads[0].comment_ids)
    assert {p.get("errorClass") for p in predictions} <= PARSE_CLASSES | {None}
    (raw,) = lines(raw_log_path(out))
    assert raw["text"]
    if raw["finish_reason"] == "stop":
        assert not {p.get("errorClass") for p in predictions} & {"invalid_json", "missing"}
