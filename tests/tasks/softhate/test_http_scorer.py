"""The HTTP scorer LM: surprisal and entropy from a loopback server's token log-probabilities,
checked against an independent numpy computation over the toy model's full logits; the
top-k lower bound by hand; caching; and the refusal of a server without log-probabilities."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from tests.helpers.fake_openai import FakeOpenAI, FakeOpenAIServer, ToyLM
from verimod.core.cache import ResponseCache
from verimod.models import BackendOptions, create_backend
from verimod.models.base import TokenLogprob, TopLogprob
from verimod.tasks.softhate.http_scorer import HttpLanguageScorer, stats_from_logprobs
from verimod.tasks.softhate.scorers import ScoringError


def numpy_stats(lm: ToyLM, context: str, continuation: str) -> tuple[float, float]:
    """Mean NLL and mean entropy from the full logits, written independently of the scorer."""
    head = lm.tokenize(context + "\n", special=True)
    tail = lm.tokenize(continuation, special=False)
    nll, entropy = [], []
    for i, token_id in enumerate(tail):
        z = lm.logits(head + tail[:i])
        ids = sorted(z)
        logits = np.array([z[t] for t in ids])
        logp = logits - np.log(np.exp(logits).sum())
        nll.append(-logp[ids.index(token_id)])
        entropy.append(-(np.exp(logp) * logp).sum())
    return float(np.mean(nll)), float(np.mean(entropy))


def run(scorer_factory, fake: FakeOpenAI, calls):
    with FakeOpenAIServer(fake) as server:
        backend = create_backend("openai:toy", BackendOptions(base_urls=(server.base_url,)))

        async def go():
            scorer = scorer_factory(backend)
            try:
                return [await call(scorer) for call in calls]
            finally:
                await backend.aclose()

        return asyncio.run(go())


@pytest.mark.parametrize("mode", ["vllm", "echo", "llama.cpp"])
def test_full_distribution_gives_the_exact_surprisal_and_entropy(mode):
    context, continuation = "移民威胁公共安全。", "外地人 take jobs"
    fake = FakeOpenAI(logprob_modes=frozenset({mode}), vocabulary=context + continuation + "\n")
    (stats,) = run(
        lambda b: HttpLanguageScorer(b, top_k=1000), fake, [lambda s: s.score(context, continuation, key="c/lm")]
    )
    nll, entropy = numpy_stats(fake.lm, context, continuation)
    assert stats.mean_nll == pytest.approx(nll, abs=1e-9)
    assert stats.mean_entropy == pytest.approx(entropy, abs=1e-9)
    assert (stats.n_tokens, stats.top_k, stats.outside_top_k) == (len(continuation), 1000, 0)


def test_a_small_top_k_bounds_the_entropy_from_below():
    fake = FakeOpenAI(logprob_modes=frozenset({"vllm"}))
    context, continuation = "abc", "risky people"
    small, full = run(
        lambda b: b,
        fake,
        [
            lambda b: HttpLanguageScorer(b, top_k=3).score(context, continuation),
            lambda b: HttpLanguageScorer(b, top_k=1000).score(context, continuation),
        ],
    )
    assert small.mean_nll == pytest.approx(full.mean_nll)  # vLLM always returns the token itself
    assert small.mean_entropy < full.mean_entropy


def test_stats_by_hand_with_a_token_outside_the_top_k():
    tokens = [
        TokenLogprob(token="a", logprob=math.log(0.5), top=(TopLogprob(token="a", logprob=math.log(0.5)),
                                                             TopLogprob(token="b", logprob=math.log(0.25)))),
        TokenLogprob(token="c", logprob=None, top=(TopLogprob(token="d", token_id=4, logprob=math.log(0.9)),)),
    ]  # fmt: skip
    stats = stats_from_logprobs(tokens, "hand", top_k=2)
    # position 1: NLL = log 2; residual 0.25; H = 0.5 log 2 + 0.25 log 4 + 0.25 log 4 = 1.5 log 2
    # position 2: c not returned; its probability ≤ min(0.9, residual 0.1) = 0.1; H = −0.9 log 0.9 − 0.1 log 0.1
    nll = (math.log(2) + -math.log(0.1)) / 2
    entropy = (1.5 * math.log(2) + (-0.9 * math.log(0.9) - 0.1 * math.log(0.1))) / 2
    assert stats.mean_nll == pytest.approx(nll)
    assert stats.mean_entropy == pytest.approx(entropy)
    assert stats.outside_top_k == 1
    with pytest.raises(ScoringError, match="without top alternatives"):
        stats_from_logprobs([TokenLogprob(token="a", logprob=-1.0)], "hand")
    with pytest.raises(ScoringError, match="no scored tokens"):
        stats_from_logprobs([], "hand")


def test_scores_are_cached_under_their_own_identity(tmp_path):
    fake = FakeOpenAI(logprob_modes=frozenset({"vllm"}))
    with ResponseCache(tmp_path / "cache.sqlite3") as cache:
        first, second = run(
            lambda b: HttpLanguageScorer(b, top_k=4, cache=cache),
            fake,
            [lambda s: s.score("ctx", "text", key="k/lm"), lambda s: s.score("ctx", "text", key="k/lm")],
        )
    assert first == second
    completions = [body for path, body in fake.requests if path == "/v1/completions"]
    assert len(completions) == 2  # the detection probe and one scoring call; the second was cached


def test_probe_refuses_a_server_without_logprobs():
    fake = FakeOpenAI(logprob_modes=frozenset())

    async def probe(scorer):
        return await scorer.probe()

    with pytest.raises(ScoringError, match="gives no token log-probabilities"):
        run(lambda b: HttpLanguageScorer(b), fake, [probe])


def test_only_openai_backends_and_a_positive_top_k():
    with pytest.raises(TypeError, match="not an OpenAI-compatible"):
        HttpLanguageScorer(create_backend("baseline", BackendOptions()))
    backend = create_backend("openai:x", BackendOptions(base_urls=("http://127.0.0.1:9/v1",)))
    with pytest.raises(ValueError, match="top_k"):
        HttpLanguageScorer(backend, top_k=0)
