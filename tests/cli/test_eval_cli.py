"""``verimod eval``, ``runs``, ``cache`` and ``score --run`` end to end, against real servers."""

import csv
import io
import json
import re

import pytest

from tests.conftest import write_lines
from tests.helpers.fake_openai import FakeOpenAI, FakeOpenAIServer, dead_base_url
from verimod.models.base import GenerationParams
from verimod.tasks.varm.evaluate import build_requests
from verimod.tasks.varm.prompts import load_prompt
from verimod.tasks.varm.starter import load_starter

TEST = load_starter("test")[:24]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def data(tmp_path):
    return write_lines(tmp_path / "data.jsonl", [r.model_dump(exclude_none=True) for r in TEST])


def user_messages(setting="zero-shot"):
    requests = build_requests(TEST, load_prompt(setting), [], GenerationParams())
    return {r.sample_id: r.messages[-1].content for r in requests}


def answers_by_message(setting="zero-shot"):
    """The reference rationale as the answer of every item, except every fifth: no anchors."""
    messages = user_messages(setting)
    return {messages[r.id]: (r.cot if i % 5 else "这条评论没有问题。") for i, r in enumerate(TEST)}


def run_dir_of(stdout):
    return re.search(r"run directory: (\S+)", stdout.replace("\n", "")).group(1)


def test_eval_scripted_writes_a_complete_run(cli, tmp_path, data):
    outputs = write_lines(tmp_path / "out.jsonl", [{"id": r.id, "output": r.cot} for r in TEST])
    result = cli(
        "eval",
        "--model",
        f"scripted:{outputs}",
        "--data",
        data,
        "--runs-dir",
        tmp_path / "runs",
        "--json",
        tmp_path / "s.json",
    )
    assert result.exit_code == 0, result.stderr
    run = next((tmp_path / "runs").iterdir())
    assert {p.name for p in run.iterdir()} == {
        ".lock",  # the run's lock (free now: the process let it go)
        "manifest.json",
        "references.jsonl",
        "samples.jsonl",
        "scores.json",
        "items.jsonl",
    }
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "completed" and manifest["counts"]["done"] == len(TEST)
    assert manifest["prompt"]["version"] == "varm-prompts/2" and len(manifest["data"]["sha256"]) == 64
    assert manifest["parser_version"] and manifest["verimod_version"] and manifest["finished_at"]
    scores = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert scores["jrem"] == 1.0 and scores["n"] == len(TEST)
    rescored = cli("score", "--run", run, "--json", "-")
    assert json.loads(rescored.stdout) == scores
    direct = cli("score", outputs, "--ref", data, "--json", "-")
    assert json.loads(direct.stdout) == scores


def test_eval_against_a_real_server_with_faults(cli, tmp_path, data):
    answers = answers_by_message()
    faults = {m: ["429"] for m in list(answers)[:3]} | {list(answers)[5]: ["500", "malformed"]}
    behaviour = FakeOpenAI(answers=answers, faults=faults)
    with FakeOpenAIServer(behaviour) as server:
        result = cli(
            "eval",
            "--model",
            "openai:fake-model",
            "--base-url",
            server.base_url,
            "--data",
            data,
            "--runs-dir",
            tmp_path / "runs",
            "--json",
            "-",
            "--quiet",
        )
    assert result.exit_code == 0, result.stderr
    scores = json.loads(result.stdout)
    expected_parse = sum(1 for i in range(len(TEST)) if i % 5) / len(TEST)
    assert scores["parse_rate"] == pytest.approx(expected_parse) and scores["jrem"] == pytest.approx(expected_parse)
    run = next((tmp_path / "runs").iterdir())
    lines = [json.loads(x) for x in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(x["id"] for x in lines) == sorted(r.id for r in TEST)  # zero lost, zero duplicated
    assert max(x["attempts"] for x in lines) == 3
    assert behaviour.models == {"fake-model"}


def test_cache_is_reused_and_can_be_bypassed_and_cleared(cli, tmp_path, data):
    behaviour = FakeOpenAI(answers=answers_by_message())
    with FakeOpenAIServer(behaviour) as server:
        common = [
            "eval",
            "--model",
            "openai:m",
            "--base-url",
            server.base_url,
            "--data",
            data,
            "--quiet",
            "--runs-dir",
            tmp_path / "runs",
        ]
        assert cli(*common).exit_code == 0
        assert sum(behaviour.hits.values()) == len(TEST)
        assert cli(*common).exit_code == 0
        assert sum(behaviour.hits.values()) == len(TEST)  # all from the cache
        assert cli(*common, "--temperature", "0.5").exit_code == 0
        assert sum(behaviour.hits.values()) == 2 * len(TEST)  # other parameters: not cached
        assert cli(*common, "--no-cache").exit_code == 0
        assert sum(behaviour.hits.values()) == 3 * len(TEST)
    runs = sorted((tmp_path / "runs").iterdir())
    second = [json.loads(x) for x in (runs[1] / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(x["cache_hit"] for x in second)
    info = json.loads(cli("cache", "info", "--json").stdout)
    assert info["entries"] == 2 * len(TEST)
    assert "deleted 48" in cli("cache", "clear").stdout


def test_api_key_never_reaches_run_files_or_output(cli, tmp_path, data, monkeypatch):
    monkeypatch.setenv("SECRET_KEY_VAR", "sk-do-not-leak-42")
    behaviour = FakeOpenAI(answers=answers_by_message())
    with FakeOpenAIServer(behaviour) as server:
        result = cli(
            "eval",
            "--model",
            "openai:m",
            "--base-url",
            server.base_url,
            "--api-key-env",
            "SECRET_KEY_VAR",
            "--data",
            data,
            "--runs-dir",
            tmp_path / "runs",
        )
    assert result.exit_code == 0 and "sk-do-not-leak" not in result.stdout + result.stderr
    assert set(behaviour.authorization) == {"Bearer sk-do-not-leak-42"}
    for path in (tmp_path / "runs").rglob("*"):
        if path.is_file():
            assert b"sk-do-not-leak" not in path.read_bytes(), path
    for path in (tmp_path / "cache").rglob("*"):
        assert b"sk-do-not-leak" not in path.read_bytes(), path


def test_unreachable_server_fails_clearly_and_the_run_resumes(cli, tmp_path, data):
    dead = "http://127.0.0.1:9/v1"
    result = cli(
        "eval",
        "--model",
        "openai:m",
        "--base-url",
        dead,
        "--data",
        data,
        "--runs-dir",
        tmp_path / "runs",
        "--retries",
        "1",
        "--quiet",
    )
    assert result.exit_code == 1
    assert "every sample failed" in result.stderr and "--resume" in result.stderr
    run = next((tmp_path / "runs").iterdir())
    assert json.loads((run / "manifest.json").read_text(encoding="utf-8"))["status"] == "failed"
    behaviour = FakeOpenAI(answers=answers_by_message())
    with FakeOpenAIServer(behaviour) as server:
        resumed = cli("eval", "--resume", run, "--base-url", server.base_url, "--quiet", "--json", "-")
    assert resumed.exit_code == 0, resumed.stderr
    assert json.loads(resumed.stdout)["n_model_errors"] == 0
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "completed" and manifest["backend_options"]["base_urls"] == [server.base_url]
    assert sum(behaviour.hits.values()) == len(TEST)


def test_runs_list_show_compare_formats(cli, tmp_path, data):
    outputs = write_lines(tmp_path / "out.jsonl", [{"id": r.id, "output": r.cot} for r in TEST])
    for setting in ("zero-shot", "taxonomy"):
        assert (
            cli(
                "eval",
                "--model",
                f"scripted:{outputs}",
                "--data",
                data,
                "--setting",
                setting,
                "--runs-dir",
                tmp_path / "runs",
                "--quiet",
            ).exit_code
            == 0
        )
    runs = sorted((tmp_path / "runs").iterdir())
    listed = cli("runs", "list", "--runs-dir", tmp_path / "runs", "--format", "csv")
    rows = list(csv.reader(io.StringIO(listed.stdout)))
    assert rows[0][:5] == ["Run", "Model", "Setting", "N", "Label"] and len(rows) == 3
    assert {r[2] for r in rows[1:]} == {"zero-shot", "taxonomy"} and all(
        r[rows[0].index("JREM")] == "100.00" for r in rows[1:]
    )
    as_json = json.loads(cli("runs", "compare", *runs, "--format", "json").stdout)
    assert [r["jrem"] for r in as_json] == [1.0, 1.0]
    md = cli("runs", "compare", *runs, "--format", "md").stdout
    assert md.startswith("| Run | Model |") and md.count("\n") == 4
    latex = cli("runs", "compare", *runs, "--format", "latex").stdout
    assert "\\begin{tabular}" in latex and "zero-shot" in latex and "scripted:" in latex
    shown = cli("runs", "show", runs[0])
    assert shown.exit_code == 0 and "JREM" in shown.stdout and "completed" in shown.stdout
    assert cli("runs", "list", "--format", "xml").exit_code == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "opnai:x"], "did you mean 'openai'"),
        (["--model", "scripted:/nonexistent.jsonl"], "file not found"),
        (["--setting", "two-shot"], "unknown prompt setting"),
        (["--extra-body", "{oops"], "--extra-body"),
        (["--max-concurrency", "0"], "--max-concurrency"),
        (["--temperature", "-1"], "--temperature"),
    ],
)
def test_bad_options_exit_2_with_one_line(cli, data, args, message, tmp_path):
    result = cli("eval", "--data", data, "--runs-dir", tmp_path / "runs", *args)
    assert result.exit_code == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_bad_data_files_exit_2_naming_the_line(cli, tmp_path):
    rows = [r.model_dump(exclude_none=True) for r in TEST[:3]]
    broken = write_lines(tmp_path / "broken.jsonl", [json.dumps(rows[0], ensure_ascii=False), "{not json", rows[1]])
    result = cli("eval", "--data", broken, "--model", "baseline", "--runs-dir", tmp_path / "runs")
    assert result.exit_code == 2 and f"{broken}:2: invalid JSON" in result.stderr
    unknown = write_lines(tmp_path / "unknown.jsonl", [rows[0], {**rows[1], "labl": "x"}])
    result = cli("eval", "--data", unknown, "--model", "baseline", "--runs-dir", tmp_path / "runs")
    assert result.exit_code == 2 and f"{unknown}:2: field 'labl': unknown field" in result.stderr
    assert not (tmp_path / "runs").exists()


def test_json_to_stdout_is_the_only_stdout_and_the_shipped_baseline_trains_nothing(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    result = cli("eval", "--limit", "3", "--runs-dir", tmp_path / "runs", "--json", "-")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 3
    assert "run " in result.stderr and "training" not in result.stderr
    assert not (tmp_path / "cache" / "baseline").exists()


def test_first_use_without_the_shipped_model_says_it_trains(cli, tmp_path, monkeypatch):
    from verimod.models.baseline import default

    monkeypatch.setenv("VERIMOD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(default, "prebuilt_dir", lambda: tmp_path / "no-shipped-model")
    result = cli("eval", "--data", "starter", "--limit", "3", "--runs-dir", tmp_path / "runs", "--json", "-")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 3
    # the empty cache: the fallback is trained first, and the user is told so, on stderr
    notice, done = result.stderr.splitlines()[:2]
    assert notice == (
        "training the baseline model on the starter train split (the shipped model is missing; first use only; "
        f"cached in {tmp_path / 'cache' / 'baseline'}/{next((tmp_path / 'cache' / 'baseline').iterdir()).name})"
    )
    assert re.fullmatch(r"baseline model trained in \d+\.\d s", done)
    again = cli("eval", "--data", "starter", "--limit", "3", "--runs-dir", tmp_path / "runs", "--json", "-")
    assert again.exit_code == 0 and "training" not in again.stderr
    assert json.loads(again.stdout) == json.loads(result.stdout)


def test_model_help_names_every_backend(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    text = cli("eval", "--help").stdout
    for prefix in ("baseline", "openai:", "gguf:", "hf:", "hfcls:", "scripted:"):
        assert prefix in text


# -- issue #20: the engine under serving conditions --------------------------------------------


def eval_args(server_urls, data, runs, *extra):
    urls = [a for url in server_urls for a in ("--base-url", url)]
    return ["eval", "--model", "openai:m", *urls, "--data", data, "--runs-dir", runs, *extra]


def test_failed_samples_exit_3_and_the_scores_are_still_written(cli, tmp_path, data):
    """Issue #20: a run where 24 % of the samples failed exited 0."""
    answers = answers_by_message()
    behaviour = FakeOpenAI(answers=answers, faults={m: ["400"] for m in list(answers)[:2]})  # final errors
    with FakeOpenAIServer(behaviour) as server:
        result = cli(*eval_args([server.base_url], data, tmp_path / "runs", "--quiet", "--json", "-"))
    assert result.exit_code == 3
    assert json.loads(result.stdout)["n_model_errors"] == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: 2 sample(s) failed and are scored as wrong (exit code 3)") and "--resume" in line
    run = next((tmp_path / "runs").iterdir())
    assert json.loads((run / "scores.json").read_text(encoding="utf-8"))["n_model_errors"] == 2
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "completed_with_errors" and manifest["counts"]["errors"] == 2


def test_the_manifest_records_the_engine_counters_and_latency_covers_every_attempt(cli, tmp_path, data):
    answers = answers_by_message()
    first = next(iter(answers))
    behaviour = FakeOpenAI(answers=answers, faults={first: ["429"]}, retry_after="0.3")
    with FakeOpenAIServer(behaviour) as server:
        result = cli(*eval_args([server.base_url], data, tmp_path / "runs", "--quiet", "--retry-after-max", "10"))
    assert result.exit_code == 0, result.stderr
    run = next((tmp_path / "runs").iterdir())
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["engine"]["retry_after_max_s"] == 10.0
    (phase,) = manifest["engine_phases"]
    assert phase["requests"] == len(TEST) and phase["attempts"] == len(TEST) + 1
    assert phase["retries"] == {"rate_limited": 1} and phase["errors"] == {}
    assert phase["lowest_limit"] == 32  # one refusal among 24 answers is tolerated: the limit stays
    assert phase["elapsed_s"] >= 0.3 and phase["started_at"] <= manifest["finished_at"]
    (replica,) = phase["replicas"]
    assert replica["replica"] == server.base_url and replica["attempts"] == len(TEST) + 1
    assert replica["answered"] == len(TEST) and replica["failures"] == {"rate_limited": 1}
    assert replica["pauses"] == 0 and replica["limit_decreases"] == 0
    samples = {json.loads(x)["id"]: json.loads(x) for x in (run / "samples.jsonl").read_text("utf-8").splitlines()}
    retried = samples[TEST[0].id]
    assert retried["attempts"] == 2 and retried["latency_s"] >= 0.3  # the wait between attempts included


def test_a_dead_replica_in_the_fleet_fails_no_sample(cli, tmp_path, data):
    """Issue #20: one --base-url dead, one healthy: 5 samples failed for good."""
    behaviour = FakeOpenAI(answers=answers_by_message())
    with FakeOpenAIServer(behaviour) as server:
        args = eval_args([dead_base_url(), server.base_url], data, tmp_path / "runs", "--retries", "1")
        result = cli(*args, "--max-concurrency", "4", "--quiet", "--json", "-")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n_model_errors"] == 0
    run = next((tmp_path / "runs").iterdir())
    (phase,) = json.loads((run / "manifest.json").read_text(encoding="utf-8"))["engine_phases"]
    dead, alive = phase["replicas"]
    assert dead["answered"] == 0 and set(dead["failures"]) == {"connection"} and alive["answered"] == len(TEST)


def test_repeats_sample_each_item_with_its_own_seed_and_give_the_spread(cli, tmp_path, data):
    """Issue #20: --repeats N for sampling at temperature > 0; repeated runs are not served from
    the cache silently."""
    messages = user_messages()
    rationale = {messages[r.id]: r.cot for r in TEST}

    def responder(body):  # an even seed answers right, an odd one without anchors
        return rationale[body["messages"][-1]["content"]] if body["seed"] % 2 == 0 else "这条评论没有问题。"

    behaviour = FakeOpenAI(responder=responder)
    with FakeOpenAIServer(behaviour) as server:
        args = eval_args([server.base_url], data, tmp_path / "runs", "--temperature", "0.7", "--repeats", "3")
        first = cli(*args, "--quiet", "--json", "-")
        assert first.exit_code == 0, first.stderr
        assert sorted(b["seed"] for b in behaviour.bodies) == [0] * 24 + [1] * 24 + [2] * 24
        again = cli(*args, "--quiet", "--json", "-")
        assert len(behaviour.bodies) == 3 * len(TEST)  # all from the cache …
        assert f"warning: {3 * len(TEST)} answer(s) came from the response cache" in again.stderr  # … and said so
        table = cli(*args, "--no-cache")
    scores = json.loads(first.stdout)
    assert scores["jrem"] == 1.0 and scores["n"] == len(TEST)  # repeat 0: the run's scores
    jrem = scores["repeats"]["metrics"]["jrem"]
    assert scores["repeats"]["count"] == 3 and jrem["values"] == [1.0, 0.0, 1.0]
    assert jrem["mean"] == pytest.approx(2 / 3) and jrem["sd"] == pytest.approx(3**-0.5)  # sd of 1, 0, 1 (n − 1)
    assert (jrem["min"], jrem["max"]) == (0.0, 1.0)
    assert json.loads(again.stdout) == scores
    run = sorted((tmp_path / "runs").iterdir())[0]
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["repeats"] == 3 and manifest["counts"]["total"] == manifest["counts"]["done"] == 3 * len(TEST)
    samples = [json.loads(x) for x in (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted((x["id"], x["repeat"]) for x in samples) == sorted((r.id, k) for r in TEST for k in range(3))
    items = [json.loads(x) for x in (run / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(x["id"], x["repeat"]) for x in items] == [(r.id, k) for r in TEST for k in range(3)]
    assert json.loads(cli("score", "--run", run, "--json", "-").stdout)["jrem"] == 1.0
    assert table.exit_code == 0 and "over 3 repeats" in table.stdout and "66.67" in table.stdout


def test_constrain_anchors_is_sent_recorded_in_the_manifest_and_keyed_in_the_cache(cli, tmp_path, data):
    from verimod.tasks.varm.grammar import GRAMMAR_NAME, anchor_grammar

    answers = {message: r.cot for r, message in zip(TEST, user_messages().values(), strict=True)}
    cut_message = next(iter(answers))
    answers[cut_message] = answers[cut_message][:15]  # this one is cut at the token limit
    behaviour = FakeOpenAI(answers=answers, owned_by="vllm", version="0.11.0", finish_reasons={cut_message: "length"})
    with FakeOpenAIServer(behaviour) as server:
        common = ["eval", "--model", "openai:m", "--base-url", server.base_url, "--data", data, "--quiet",
                  "--runs-dir", tmp_path / "runs", "--json", "-"]  # fmt: skip
        assert cli(*common).exit_code == 0
        assert sum(behaviour.hits.values()) == len(TEST)
        constrained = cli(*common, "--constrain", "anchors")
        assert constrained.exit_code == 0, constrained.stderr
        assert sum(behaviour.hits.values()) == 2 * len(TEST)  # the constraint is in the cache key
        assert cli(*common, "--constrain", "anchors").exit_code == 0
        assert sum(behaviour.hits.values()) == 2 * len(TEST)  # the same constraint: all from the cache
    plain_bodies, constrained_bodies = behaviour.bodies[: len(TEST)], behaviour.bodies[len(TEST) :]
    assert not any("structured_outputs" in b for b in plain_bodies)
    assert all(b["structured_outputs"] == {"regex": anchor_grammar().regex()} for b in constrained_bodies)
    scores = json.loads(constrained.stdout)
    assert scores["error_classes"] == {"truncated": 1} and scores["n_truncated"] == 1
    assert scores["n_parsed"] == len(TEST) - 1
    runs = sorted((tmp_path / "runs").iterdir())
    assert not runs[0].name.endswith("-anchors") and runs[1].name.endswith("-anchors")
    manifest = json.loads((runs[1] / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["constrain"] == "anchors"
    assert manifest["params"]["structured"]["grammar"]["name"] == GRAMMAR_NAME
    assert json.loads((runs[0] / "manifest.json").read_text(encoding="utf-8"))["constrain"] == "none"
    samples = [json.loads(x) for x in (runs[1] / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(x["finish_reason"] for x in samples) == ["length"] + ["stop"] * (len(TEST) - 1)
    listing = cli("runs", "list", "--runs-dir", tmp_path / "runs", "--format", "json")
    assert listing.exit_code == 0, listing.stderr
    settings = sorted(row["setting"] for row in json.loads(listing.stdout))
    assert settings == ["zero-shot", "zero-shot +anchors", "zero-shot +anchors"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--constrain", "json"], "anchors"), (["--constrain", "anchors", "--regex", "a"], "--regex")],
)
def test_bad_constrain_options_are_one_line_input_errors(cli, tmp_path, data, extra, message):
    result = cli("eval", "--model", "baseline", "--data", data, "--runs-dir", tmp_path / "runs", *extra)
    assert result.exit_code == 2 and message in result.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
