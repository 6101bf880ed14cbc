"""Token log-probabilities from OpenAI-compatible servers: the three scoring protocols (vLLM
``prompt_logprobs``, completions ``echo``, llama.cpp ``n_probs``) and chat logprobs against a
real aiohttp server on loopback whose toy language model is computed independently here; the
readers on hand-written bodies in the servers' formats; and the refusal of a server that gives
none."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from tests.helpers.fake_openai import FakeOpenAI, FakeOpenAIServer, ToyLM
from verimod.models import BackendError, BackendOptions, ChatMessage, GenerationParams, ModelRequest, create_backend
from verimod.models.logprobs import echo_logprobs, llamacpp_position, prompt_logprobs, server_root


def expected(lm: ToyLM, context: str, continuation: str) -> list[tuple[str, float]]:
    """(token, log p) of each continuation token: the toy LM's softmax, computed here."""
    head = lm.tokenize(context + "\n", special=True)
    tail = lm.tokenize(continuation, special=False)
    out = []
    for i, token_id in enumerate(tail):
        z = lm.logits(head + tail[:i])
        log_norm = math.log(sum(math.exp(v) for v in z.values()))
        out.append((lm.piece(token_id), z[token_id] - log_norm))
    return out


def score(modes: set[str], context: str, continuation: str, top_k: int = 5) -> tuple[Any, str, FakeOpenAI]:
    fake = FakeOpenAI(logprob_modes=frozenset(modes))
    with FakeOpenAIServer(fake) as server:
        backend = create_backend("openai:toy", BackendOptions(base_urls=(server.base_url,)))

        async def go() -> tuple[Any, str]:
            try:
                response = await backend.continuation_logprobs(context, continuation, top_k)  # type: ignore[attr-defined]
                return response, await backend.logprob_protocol()  # type: ignore[attr-defined]
            finally:
                await backend.aclose()

        response, protocol = asyncio.run(go())
    return response, protocol, fake


@pytest.mark.parametrize("mode", ["vllm", "echo", "llama.cpp"])
def test_each_protocol_scores_the_continuation_tokens(mode):
    context, continuation = "河南人 are", "a risk, 他们说"
    response, protocol, fake = score({mode}, context, continuation, top_k=1000)
    assert protocol == mode
    want = expected(fake.lm, context, continuation)
    got = response.token_logprobs
    assert [t.token for t in got] == [token for token, _ in want]
    assert [t.logprob for t in got] == pytest.approx([lp for _, lp in want], abs=1e-12)
    assert response.completion_tokens == len(continuation)
    for token in got:  # the full distribution came back: it sums to one
        assert sum(math.exp(alt.logprob) for alt in token.top) == pytest.approx(1.0, abs=1e-9)


def test_llamacpp_asks_one_prompt_cached_request_per_continuation_token():
    _, _, fake = score({"llama.cpp"}, "ctx", "abc", top_k=3)
    asked = [body for path, body in fake.requests if path == "/completion"]
    scoring = asked[-3:]  # after the detection probe
    head = fake.lm.tokenize("ctx\n", special=True)
    tail = fake.lm.tokenize("abc", special=False)
    assert [b["prompt"] for b in scoring] == [head, head + tail[:1], head + tail[:2]]
    assert all(b["n_probs"] == 3 and b["cache_prompt"] and b["n_predict"] == 1 for b in scoring)


def test_llamacpp_token_outside_the_top_k_has_no_logprob():
    response, _, fake = score({"llama.cpp"}, "x", "zz", top_k=1)
    head = fake.lm.tokenize("x\n", special=True)
    tail = fake.lm.tokenize("zz", special=False)
    for i, token in enumerate(response.token_logprobs):
        best = fake.lm.ranked(head + tail[:i])[0][0]
        assert (token.logprob is None) == (best != tail[i])
        assert len(token.top) == 1
    assert any(t.logprob is None for t in response.token_logprobs)


def test_detection_prefers_vllm_and_is_remembered():
    _, protocol, fake = score({"vllm", "echo", "llama.cpp"}, "a", "b")
    assert protocol == "vllm"
    probes = [body for path, body in fake.requests if path == "/v1/completions"]
    assert len(probes) == 2  # one detection probe, one scoring call; the second lookup asks nothing


def test_a_server_without_logprobs_is_refused_clearly():
    fake = FakeOpenAI(logprob_modes=frozenset())
    with FakeOpenAIServer(fake) as server:
        backend = create_backend("openai:toy", BackendOptions(base_urls=(server.base_url,)))

        async def go() -> None:
            try:
                await backend.continuation_logprobs("a", "b")  # type: ignore[attr-defined]
            finally:
                await backend.aclose()

        with pytest.raises(BackendError) as caught:
            asyncio.run(go())
    message = str(caught.value)
    assert caught.value.kind == "client" and not caught.value.retryable
    assert "gives no token log-probabilities" in message
    assert all(name in message for name in ("vllm:", "echo:", "llama.cpp:"))


def test_chat_answers_carry_their_token_logprobs():
    fake = FakeOpenAI(answers={"q": "hateful"})
    with FakeOpenAIServer(fake) as server:
        backend = create_backend("openai:toy", BackendOptions(base_urls=(server.base_url,)))
        request = ModelRequest(
            sample_id="s",
            messages=(ChatMessage(role="user", content="q"),),
            params=GenerationParams(extra_body={"logprobs": True, "top_logprobs": 2}),
        )

        async def go() -> Any:
            try:
                return await backend.generate(request)
            finally:
                await backend.aclose()

        response = asyncio.run(go())
    ids = fake.lm.tokenize("hateful", special=False)
    want = [fake.lm.logprobs(ids[:i])[t] for i, t in enumerate(ids)]
    assert [t.token for t in response.token_logprobs] == list("hateful")
    assert [t.logprob for t in response.token_logprobs] == pytest.approx(want)
    assert all(len(t.top) == 2 for t in response.token_logprobs)


# -- the readers on hand-written bodies -------------------------------------------------------


def test_vllm_prompt_logprobs_are_read_by_token_id():
    body = {
        "choices": [
            {
                "text": "x",
                "prompt_logprobs": [
                    None,
                    {"17": {"logprob": -2.5, "rank": 3, "decoded_token": " risk"}, "4": {"logprob": -0.1, "rank": 1}},
                    {"9": {"logprob": -0.7, "rank": 1, "decoded_token": "!"}},
                ],
            }
        ]
    }
    got = prompt_logprobs(body, [1, 17, 9], last=2)
    assert [(t.token, t.token_id, t.logprob) for t in got] == [(" risk", 17, -2.5), ("!", 9, -0.7)]
    assert [a.token_id for a in got[0].top] == [17, 4]
    with pytest.raises(BackendError, match="lacks the prompt token 18"):
        prompt_logprobs(body, [1, 18, 9], last=2)
    with pytest.raises(BackendError, match="no prompt_logprobs"):
        prompt_logprobs({"choices": [{"text": "x"}]}, [1], last=1)


def test_echo_logprobs_skip_a_rendered_bos_and_refuse_a_misaligned_prompt():
    body = {
        "choices": [
            {
                "logprobs": {
                    "tokens": ["<s>", "ab", "\n", "cd", "e", "Z"],
                    "token_logprobs": [None, -1.0, -0.5, -0.25, -2.0, -0.1],
                    "top_logprobs": [None, {"ab": -1.0}, {"\n": -0.5}, {"cd": -0.25, "c": -1.5}, {"e": -2.0}, {}],
                    "text_offset": [0, 3, 5, 6, 8, 9],
                }
            }
        ]
    }
    got = echo_logprobs(body, "ab\ncde", start=3)
    assert [(t.token, t.logprob) for t in got] == [("cd", -0.25), ("e", -2.0)]
    assert {a.token: a.logprob for a in got[0].top} == {"cd": -0.25, "c": -1.5}
    with pytest.raises(BackendError, match="do not spell the prompt"):
        echo_logprobs(body, "ab\ncdX", start=3)


def test_llamacpp_rows_in_both_probability_formats():
    logprob_row = {"id": 5, "token": "a", "logprob": -0.2, "top_logprobs": [{"id": 5, "token": "a", "logprob": -0.2}]}
    assert llamacpp_position({"completion_probabilities": [logprob_row]}, 5).logprob == -0.2
    prob_row = {"id": 5, "token": "a", "prob": 0.5, "top_probs": [{"id": 5, "token": "a", "prob": 0.5}]}
    assert llamacpp_position({"completion_probabilities": [prob_row]}, 5).logprob == pytest.approx(math.log(0.5))
    assert llamacpp_position({"completion_probabilities": [prob_row]}, 6).logprob is None
    with pytest.raises(BackendError, match="no completion_probabilities"):
        llamacpp_position({"content": "a"}, 5)


def test_server_root_drops_the_v1_suffix():
    assert server_root("http://h:8000/v1/") == "http://h:8000"
    assert server_root("http://h:8080") == "http://h:8080"
