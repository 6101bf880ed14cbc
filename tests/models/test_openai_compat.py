"""The OpenAI-compatible backend against a real aiohttp server on loopback."""

import asyncio
import json

import pytest

from tests.helpers.fake_openai import FakeOpenAI, FakeOpenAIServer
from verimod.core.engine import EngineConfig, run_requests
from verimod.models import BackendError, BackendOptions, ChatMessage, GenerationParams, ModelRequest, create_backend
from verimod.models.base import StructuredOutput
from verimod.models.openai_compat import _retry_after, parse_completion, request_body

FAST = EngineConfig(max_concurrency=16, max_retries=4, backoff_base_s=0.001, backoff_max_s=0.05, request_timeout_s=0.5)


def req(text, sample_id=None, **params):
    return ModelRequest(
        sample_id=sample_id or text,
        messages=(ChatMessage(role="user", content=text),),
        params=GenerationParams(**params),
    )


def run_all(backend, requests, config=FAST):
    outcomes = []

    async def go():
        try:
            return await run_requests(backend, requests, outcomes.append, config)
        finally:
            await backend.aclose()

    stats = asyncio.run(go())
    return outcomes, stats


def test_answers_and_reports_usage():
    with FakeOpenAIServer(FakeOpenAI(answers={"你好": "回答"})) as server:
        backend = create_backend("openai:qwen", BackendOptions(base_urls=(server.base_url,)))
        outcomes, _ = run_all(backend, [req("你好")])
    response = outcomes[0].response
    assert response.text == "回答" and response.finish_reason == "stop"
    assert response.prompt_tokens == 2 and response.completion_tokens == 2 and response.model == "qwen"


def test_faults_end_answered_or_recorded_zero_lost_zero_duplicated():
    texts = [f"样本{i}" for i in range(60)]
    faults = {
        texts[0]: ["429", "429"],
        texts[1]: ["500"],
        texts[2]: ["503"],
        texts[3]: ["timeout"],
        texts[4]: ["drop"],
        texts[5]: ["malformed"],
        texts[6]: ["empty"],
        texts[7]: ["400"],  # client error: final at once
        texts[8]: ["500"] * 10,  # more failures than retries
        texts[9]: ["drop", "malformed", "429", "empty"],
    }
    behaviour = FakeOpenAI(answers={t: f"答{t}" for t in texts}, faults=faults, timeout_sleep_s=2.0)
    with FakeOpenAIServer(behaviour) as server:
        backend = create_backend("openai:m", BackendOptions(base_urls=(server.base_url,), request_timeout_s=0.5))
        outcomes, stats = run_all(backend, [req(t) for t in texts])
    ids = [o.request.sample_id for o in outcomes]
    assert sorted(ids) == sorted(texts) and len(ids) == len(set(ids))  # zero lost, zero duplicated
    by_id = {o.request.sample_id: o for o in outcomes}
    for t in [*texts[:7], texts[9], *texts[10:]]:
        assert by_id[t].response.text == f"答{t}", t
    assert by_id[texts[7]].error.kind == "client" and behaviour.hits[texts[7]] == 1
    assert by_id[texts[8]].error.kind == "server" and behaviour.hits[texts[8]] == FAST.max_retries + 1
    assert stats.errors == 2
    # the server answered nothing twice, except the request the client had given up on (timeout)
    assert all(behaviour.answered[t] <= 1 for t in texts if t != texts[3])


def test_replicas_share_the_load_and_the_key_is_sent_but_never_exposed(monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-secret-123")
    first, second = FakeOpenAI(default=lambda t: "a"), FakeOpenAI(default=lambda t: "b")
    with FakeOpenAIServer(first) as one, FakeOpenAIServer(second) as two:
        backend = create_backend(
            "openai:m", BackendOptions(base_urls=(one.base_url, two.base_url), api_key_env="MY_KEY")
        )
        outcomes, _ = run_all(backend, [req(f"t{i}") for i in range(200)])
        assert "sk-secret" not in repr(backend) and "sk-secret" not in json.dumps(backend.identity())
        assert len(outcomes) == 200
        concurrent = sum(first.hits.values()), sum(second.hits.values())
        # one at a time, the replicas take turns exactly
        backend = create_backend(
            "openai:m", BackendOptions(base_urls=(one.base_url, two.base_url), api_key_env="MY_KEY")
        )
        run_all(backend, [req(f"u{i}") for i in range(100)], EngineConfig(max_concurrency=1))
    assert sum(concurrent) == 200 and min(concurrent) >= 20  # least-busy replica first: both take a share
    sequential = sum(first.hits.values()) - concurrent[0], sum(second.hits.values()) - concurrent[1]
    assert sequential == (50, 50)
    assert set(first.authorization) == {"Bearer sk-secret-123"} == set(second.authorization)


def test_each_replica_view_sends_to_its_own_server_and_is_labelled_without_secrets():
    """The engine keeps limits and health per server through these views (issue #20)."""
    first, second = FakeOpenAI(default=lambda t: "a"), FakeOpenAI(default=lambda t: "b")
    with FakeOpenAIServer(first) as one, FakeOpenAIServer(second) as two:
        with_password = one.base_url.replace("http://", "http://user:pw-secret@")
        backend = create_backend("openai:m", BackendOptions(base_urls=(with_password, two.base_url)))
        (label_one, view_one), (label_two, view_two) = backend.replicas()
        assert (label_one, label_two) == (one.base_url, two.base_url)  # no user or password in a label
        assert view_one.identity() == view_two.identity() == backend.identity()

        async def ask():
            try:
                return [await view.generate(req(f"v{i}")) for i in range(3) for view in (view_two, view_one)]
            finally:
                await backend.aclose()

        answers = asyncio.run(ask())
    assert [a.text for a in answers] == ["b", "a"] * 3
    assert sum(first.hits.values()) == sum(second.hits.values()) == 3
    assert first.authorization[0].startswith("Basic ") and second.authorization == [None] * 3


def test_missing_key_variable_and_bad_urls_are_clear_errors(monkeypatch):
    monkeypatch.delenv("NOPE_KEY", raising=False)
    with pytest.raises(BackendError, match="NOPE_KEY"):
        create_backend("openai:m", BackendOptions(api_key_env="NOPE_KEY"))
    with pytest.raises(BackendError, match="http"):
        create_backend("openai:m", BackendOptions(base_urls=("localhost:8000",)))
    with pytest.raises(BackendError, match="model name"):
        create_backend("openai:", BackendOptions())


def test_unreachable_server_is_a_connection_error():
    backend = create_backend("openai:m", BackendOptions(base_urls=("http://127.0.0.1:9/v1",)))
    outcomes, _ = run_all(backend, [req("x")], EngineConfig(max_retries=1, backoff_base_s=0.001))
    assert outcomes[0].error.kind == "connection" and outcomes[0].attempts == 2


def test_request_body_maps_every_parameter():
    structured = StructuredOutput(json_schema={"type": "object"}, regex="a+")
    body = request_body(
        "m",
        req(
            "x",
            temperature=0.3,
            top_p=0.9,
            max_tokens=7,
            seed=3,
            stop=("。",),
            structured=structured,
            extra_body={"top_k": 5, "temperature": 0.1},
        ),
        "vllm-legacy",
    )
    assert body["messages"] == [{"role": "user", "content": "x"}]
    assert body["top_p"] == 0.9 and body["max_tokens"] == 7 and body["seed"] == 3 and body["stop"] == ["。"]
    assert body["response_format"]["json_schema"]["schema"] == {"type": "object"} and body["guided_regex"] == "a+"
    assert body["top_k"] == 5 and body["temperature"] == 0.1  # extra body wins


@pytest.mark.parametrize(
    "payload", [[], {"choices": []}, {"choices": [{}]}, {"choices": [{"message": {"content": 3}}]}, "x"]
)
def test_malformed_completions_are_bad_responses(payload):
    with pytest.raises(BackendError) as err:
        parse_completion(payload)
    assert err.value.kind == "bad_response" and err.value.retryable


def test_refusal_field_is_the_text_and_retry_after_forms():
    assert parse_completion({"choices": [{"message": {"content": None, "refusal": "不能回答"}}]}).text == "不能回答"
    assert _retry_after("2") == 2.0 and _retry_after(None) is None and _retry_after("soon") is None
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


# -- structured output: the anchor grammar (--constrain anchors) -------------------------------

ANCHORED = (
    "骂[T: 外地人]群体[TY: group]点名[T: explicit]攻击[S: attack_or_endorse]判[L: harmful]归[C: region_ethnicity]"
)


def _anchors_request(text="评论", **params):
    from verimod.tasks.varm.grammar import structured_output

    return req(text, structured=structured_output("anchors"), max_tokens=64, **params)


@pytest.mark.parametrize(
    ("owned_by", "version", "field"),
    [
        ("vllm", "0.11.0", "structured_outputs"),
        ("vllm", None, "structured_outputs"),
        ("vllm", "0.10.1", "guided_regex"),
        ("sglang", None, "regex"),
        ("llamacpp", None, "grammar"),
    ],
)
def test_the_anchor_grammar_goes_in_the_field_of_the_server_answering(owned_by, version, field):
    from verimod.tasks.varm.grammar import anchor_grammar

    grammar = anchor_grammar()
    behaviour = FakeOpenAI(answers={"评论": ANCHORED}, owned_by=owned_by, version=version)
    with FakeOpenAIServer(behaviour) as server:
        backend = create_backend("openai:m", BackendOptions(base_urls=(server.base_url,)))
        outcomes, _ = run_all(backend, [_anchors_request(), _anchors_request(sample_id="again")])
    assert [o.response.text for o in outcomes] == [ANCHORED, ANCHORED]
    expected = {
        "structured_outputs": {"regex": grammar.regex()},
        "guided_regex": grammar.regex(),
        "regex": grammar.regex(),
        "grammar": grammar.gbnf(),
    }[field]
    for body in behaviour.bodies:
        assert body[field] == expected
        others = {"structured_outputs", "guided_regex", "regex", "grammar", "response_format"} - {field}
        assert not others & set(body)
    # the dialect is detected once per replica, not per request
    assert behaviour.gets.count("/v1/models") == 1
    assert behaviour.gets.count("/version") == (1 if owned_by == "vllm" else 0)


@pytest.mark.parametrize("owned_by", [None, "openai", "ollama"])
def test_a_server_that_cannot_be_asked_for_the_grammar_is_refused_before_any_completion(owned_by):
    behaviour = FakeOpenAI(answers={"评论": ANCHORED}, owned_by=owned_by)
    with FakeOpenAIServer(behaviour) as server:
        backend = create_backend("openai:m", BackendOptions(base_urls=(server.base_url,)))
        outcomes, _ = run_all(backend, [_anchors_request()])
    error = outcomes[0].error
    assert error is not None and error.kind == "client" and not error.retryable
    assert "--constrain none" in str(error) and "\n" not in str(error)
    assert behaviour.bodies == []  # nothing was generated unconstrained


def test_an_answer_outside_the_grammar_is_refused_as_an_ignored_constraint():
    behaviour = FakeOpenAI(answers={"评论": "这条评论有害。"}, owned_by="vllm", version="0.12.0")
    with FakeOpenAIServer(behaviour) as server:
        backend = create_backend("openai:m", BackendOptions(base_urls=(server.base_url,)))
        outcomes, _ = run_all(backend, [_anchors_request()])
    error = outcomes[0].error
    assert error is not None and error.kind == "client" and "did not honour" in str(error)
    assert behaviour.bodies[0]["structured_outputs"]["regex"]


def test_an_answer_cut_at_the_token_limit_is_kept_with_its_finish_reason():
    cut = ANCHORED[:20]
    behaviour = FakeOpenAI(answers={"评论": cut}, owned_by="sglang", finish_reasons={"评论": "length"})
    with FakeOpenAIServer(behaviour) as server:
        backend = create_backend("openai:m", BackendOptions(base_urls=(server.base_url,)))
        outcomes, _ = run_all(backend, [_anchors_request()])
    response = outcomes[0].response
    assert response.text == cut and response.finish_reason == "length"


def test_a_plain_regex_cannot_go_to_a_llama_cpp_server_and_unknown_dialects_are_refused():
    with pytest.raises(BackendError, match="GBNF grammars only") as caught:
        request_body("m", req("x", structured=StructuredOutput(regex="a+")), "llama.cpp")
    assert caught.value.kind == "client"
    with pytest.raises(BackendError, match="--constrain none"):
        request_body("m", _anchors_request())  # no dialect known: refused, not sent unconstrained
    schema_only = request_body("m", req("x", structured=StructuredOutput(json_schema={"type": "object"})))
    assert schema_only["response_format"]["type"] == "json_schema"  # every server reads it: no dialect needed
