"""A real OpenAI-compatible chat-completions server for tests and benchmarks (aiohttp, loopback).

It answers ``POST /v1/chat/completions`` with scripted answers keyed by the last user message,
optional latency, and injected faults consumed one per attempt: ``429`` (with Retry-After),
``500``, ``503``, ``timeout`` (answers after the client gave up), ``drop`` (closes the
connection without answering), ``malformed`` (200 with a body that is not JSON), ``empty``
(200 with no choices). It counts requests per key and records the request bodies and Authorization headers seen.
``GET /v1/models`` names the models' owner (``owned_by``: ``vllm``, ``sglang``, ``llamacpp`` …)
and ``GET /version`` a server version, each 404 when not set; ``finish_reasons`` scripts the
finish reason of an answer (default ``stop``).

Fault injection for serving conditions (each replica of a fleet is its own server):
``fault_rates`` draws a fault for every attempt that has no scripted one, with the given
probabilities (``{"429": 0.05}``; seeded by ``fault_seed``, so a run is repeatable);
``retry_after`` is the Retry-After header sent with the faults named in ``retry_after_on``
(default ``429`` only; ``None``: no header); ``arrivals`` records when each chat request came
(monotonic seconds) and its key (``record=False``: no bodies, headers or arrivals are kept, for
long benchmark runs); ``responder`` (``body -> text``), when given, answers from the
whole request body (e.g. its seed). A dead replica is a port nothing listens on:
:func:`dead_base_url`.

Token log-probabilities come from a deterministic toy language model (:class:`ToyLM`: one token
per character of a fixed vocabulary, next-token logits a function of the previous token),
served the way the real servers do (``logprob_modes`` chooses which):

- ``vllm``: ``POST /tokenize`` (``{"prompt", "add_special_tokens"}`` → ``{"count",
  "max_model_len", "tokens"}``) and ``prompt_logprobs`` on ``POST /v1/completions``
  (``choices[0].prompt_logprobs``: ``null``, then ``{"<id>": {"logprob", "rank",
  "decoded_token"}}`` with the prompt token first, then the top k);
- ``echo``: ``echo`` + ``logprobs`` on ``POST /v1/completions`` (legacy ``tokens``,
  ``token_logprobs``, ``top_logprobs``, ``text_offset`` over the prompt and the generated token;
  a text prompt gets a BOS token rendered ``<s>``);
- ``llama.cpp``: ``POST /tokenize`` (``{"content", "add_special"}`` → ``{"tokens"}``) and
  ``POST /completion`` with ``n_probs`` (``completion_probabilities``: ``{"id", "token",
  "bytes", "logprob", "top_logprobs": [...]}`` for the generated token only).

Chat answers carry ``choices[0].logprobs.content`` when the request asks ``logprobs: true``.
A mode left out behaves like a server without it: the parameter is ignored, the endpoint 404s.
``delay_s`` applies to these endpoints too.

Run in-process (:class:`FakeOpenAIServer`, a background thread with its own event loop) or as
a separate process: ``python tests/helpers/fake_openai.py --port 0 --answers answers.json``
(prints ``PORT <n>`` when ready).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import socket
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from aiohttp import web

LOGPROB_MODES = frozenset({"vllm", "echo", "llama.cpp"})


class ToyLM:
    """A deterministic character-level language model over a fixed vocabulary.

    Token ids: ``BOS = 1``, ``UNK = 2``, and ``OFFSET + k`` for the k-th character of
    ``vocabulary``. The logits of the next token after ``prefix`` (its last id ``l``, 0 when
    empty) are ``z(t) = -0.3 · ((t − l) mod 13) + 0.1 · (t mod 5)`` over every non-BOS id.
    """

    BOS, UNK, OFFSET = 1, 2, 3

    def __init__(self, vocabulary: str = "") -> None:
        chars = dict.fromkeys(vocabulary or DEFAULT_VOCABULARY)
        self.chars = list(chars)
        self.ids = {ch: self.OFFSET + k for k, ch in enumerate(self.chars)}
        self.vocab = [self.UNK, *self.ids.values()]
        self._ranked: dict[int, list[tuple[int, float]]] = {}

    def tokenize(self, text: str, special: bool) -> list[int]:
        return ([self.BOS] if special else []) + [self.ids.get(ch, self.UNK) for ch in text]

    def piece(self, token_id: int) -> str:
        if token_id == self.BOS:
            return "<s>"
        if token_id == self.UNK:
            return "\ufffd"
        return self.chars[token_id - self.OFFSET]

    def logits(self, prefix: list[int]) -> dict[int, float]:
        last = prefix[-1] if prefix else 0
        return {t: -0.3 * ((t - last) % 13) + 0.1 * (t % 5) for t in self.vocab}

    def logprobs(self, prefix: list[int]) -> dict[int, float]:
        return dict(self.ranked(prefix))

    def ranked(self, prefix: list[int]) -> list[tuple[int, float]]:
        """(id, logprob) best first (ties: smaller id); it depends on the last token only."""
        last = prefix[-1] if prefix else 0
        if last not in self._ranked:
            z = self.logits(prefix)
            top = max(z.values())
            norm = top + math.log(sum(math.exp(v - top) for v in z.values()))
            self._ranked[last] = sorted(((t, v - norm) for t, v in z.items()), key=lambda kv: (-kv[1], kv[0]))
        return self._ranked[last]


DEFAULT_VOCABULARY = (
    " abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'\"-()\n"
    "的是不了人在有这个他上们来到时大地为子中你说生国年着就那和要她出也得里后自以会家可下而过天去能对小多然于心学么之都好看起发当没成只如事把还用第样道想作种开美总从无情己面最女但现前些所同日手又行意动方期它头经长儿回位分爱老因很给名法间斯知世什两次使身者被高已亲其进此话常与活正感"
    "河南东北上海广西湖京四川安徽山江苏浙福建甘肃贵州云藏陕青宁夏新疆台湾香港澳门黑龙吉辽天津重庆内蒙古省市县城农村乡下地域外籍男女性同恋跨别残疾穆斯林基督佛教犹太日本韩印度美非洲黑白"
)


class FakeOpenAI:
    """The behaviour: answers, faults, latency, counters."""

    def __init__(
        self,
        answers: dict[str, str] | None = None,
        default: Callable[[str], str] | None = None,
        faults: dict[str, list[str]] | None = None,
        delay_s: float = 0.0,
        timeout_sleep_s: float = 5.0,
        retry_after: str | None = "0.05",
        logprob_modes: frozenset[str] = LOGPROB_MODES,
        vocabulary: str = "",
        fault_rates: dict[str, float] | None = None,
        fault_seed: int = 0,
        retry_after_on: tuple[str, ...] = ("429",),
        responder: Callable[[dict[str, Any]], str] | None = None,
        record: bool = True,
        owned_by: str | None = None,
        version: str | None = None,
        finish_reasons: dict[str, str] | None = None,
    ) -> None:
        self.owned_by = owned_by  # GET /v1/models answers with this owner (None: 404)
        self.version = version  # GET /version answers with this version (None: 404)
        self.finish_reasons = finish_reasons or {}  # user message → finish_reason (default "stop")
        self.gets: list[str] = []
        self.logprob_modes = frozenset(logprob_modes)
        self.lm = ToyLM(vocabulary)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.answers = answers or {}
        self.default = default or (lambda text: "没有锚点的回答")
        self.faults: dict[str, list[str]] = defaultdict(list, {k: list(v) for k, v in (faults or {}).items()})
        self.delay_s = delay_s
        self.timeout_sleep_s = timeout_sleep_s
        self.retry_after = retry_after
        self.hits: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        self.authorization: list[str | None] = []
        self.models: set[str] = set()
        self.bodies: list[dict[str, Any]] = []
        self.fault_rates = dict(fault_rates or {})
        self._fault_rng = random.Random(fault_seed)
        self.retry_after_on = frozenset(retry_after_on)
        self.responder = responder
        self.arrivals: list[tuple[float, str]] = []
        self.injected: Counter[str] = Counter()
        self.record = record

    def _drawn_fault(self) -> str | None:
        """A fault drawn with ``fault_rates`` (None: answer normally)."""
        draw = self._fault_rng.random()
        for fault, rate in self.fault_rates.items():
            if draw < rate:
                return fault
            draw -= rate
        return None

    def _fault_headers(self, fault: str) -> dict[str, str]:
        return (
            {"Retry-After": self.retry_after} if self.retry_after is not None and fault in self.retry_after_on else {}
        )

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        user = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        self.hits[user] += 1
        if self.record:
            self.bodies.append(body)
            self.authorization.append(request.headers.get("Authorization"))
            self.models.add(body.get("model"))
            self.arrivals.append((time.monotonic(), user))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        fault = self.faults[user].pop(0) if self.faults.get(user) else None
        if fault is None and self.fault_rates:
            fault = self._drawn_fault()
        if fault is not None:
            self.injected[fault] += 1
        if fault == "429":
            return web.Response(status=429, text="slow down", headers=self._fault_headers(fault))
        if fault in ("500", "503"):
            return web.Response(status=int(fault), text="server trouble", headers=self._fault_headers(fault))
        if fault == "400":
            return web.Response(status=400, text="bad request")
        if fault == "timeout":
            await asyncio.sleep(self.timeout_sleep_s)
        if fault == "drop":
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=200)
        if fault == "malformed":
            return web.Response(status=200, text='{"choices": [', content_type="application/json")
        if fault == "empty":
            return web.json_response({"id": "x", "choices": []})
        text = self.responder(body) if self.responder is not None else self.answers.get(user)
        if text is None:
            text = self.default(user)
        self.answered[user] += 1
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": self.finish_reasons.get(user, "stop"),
        }
        if body.get("logprobs") is True:
            choice["logprobs"] = {"content": self._chat_logprobs(text, int(body.get("top_logprobs") or 0))}
        return web.json_response(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [choice],
                "usage": {
                    "prompt_tokens": len(user),
                    "completion_tokens": len(text),
                    "total_tokens": len(user) + len(text),
                },
            }
        )

    # -- token log-probabilities (see the module docstring) ----------------------------------

    def _entry(self, token_id: int, logprob: float) -> dict[str, Any]:
        piece = self.lm.piece(token_id)
        return {"id": token_id, "token": piece, "bytes": list(piece.encode("utf-8")), "logprob": logprob}

    def _chat_logprobs(self, text: str, k: int) -> list[dict[str, Any]]:
        ids = self.lm.tokenize(text, special=False)
        out = []
        for i, token_id in enumerate(ids):
            lp = self.lm.logprobs(ids[:i])
            top = [{"token": self.lm.piece(t), "logprob": v} for t, v in self.lm.ranked(ids[:i])[:k]]
            out.append({"token": self.lm.piece(token_id), "logprob": lp[token_id], "top_logprobs": top})
        return out

    def _prompt_ids(self, prompt: Any) -> list[int]:
        if isinstance(prompt, list):
            return [int(t) for t in prompt]
        return self.lm.tokenize(str(prompt), special=True)

    async def tokenize(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(("/tokenize", body))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if "content" in body and "llama.cpp" in self.logprob_modes:
            return web.json_response({"tokens": self.lm.tokenize(body["content"], bool(body.get("add_special")))})
        if "prompt" in body and self.logprob_modes & {"vllm"}:
            tokens = self.lm.tokenize(body["prompt"], bool(body.get("add_special_tokens", True)))
            return web.json_response({"count": len(tokens), "max_model_len": 4096, "tokens": tokens})
        return web.Response(status=404, text="Not Found")

    async def completions(self, request: web.Request) -> web.StreamResponse:
        """vLLM-style ``/v1/completions`` (text completion, echo, logprobs, prompt_logprobs)."""
        body = await request.json()
        self.requests.append(("/v1/completions", body))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        prompt = self._prompt_ids(body["prompt"])
        generated = []
        for _ in range(max(0, int(body.get("max_tokens", 16)))):
            generated.append(self.lm.ranked(prompt + generated)[0][0])
        echo = bool(body.get("echo")) and "echo" in self.logprob_modes
        shown = (prompt if echo else []) + generated
        text = "".join(self.lm.piece(t) for t in shown)
        choice: dict[str, Any] = {"index": 0, "text": text, "logprobs": None, "finish_reason": "length"}
        k = body.get("logprobs")
        if isinstance(k, int) and not isinstance(k, bool):
            start = 0 if echo else len(prompt)
            full = prompt + generated
            tokens, values, tops, offsets, offset = [], [], [], [], 0
            for position in range(start, len(full)):
                token_id = full[position]
                tokens.append(self.lm.piece(token_id))
                offsets.append(offset)
                offset += len(tokens[-1])
                if position == 0:
                    values.append(None)
                    tops.append(None)
                    continue
                lp = self.lm.logprobs(full[:position])
                values.append(lp[token_id])
                top = {self.lm.piece(token_id): lp[token_id]}
                top.update({self.lm.piece(t): v for t, v in self.lm.ranked(full[:position])[:k]})
                tops.append(top)
            choice["logprobs"] = {
                "tokens": tokens,
                "token_logprobs": values,
                "top_logprobs": tops,
                "text_offset": offsets,
            }
        k = body.get("prompt_logprobs")
        if isinstance(k, int) and not isinstance(k, bool) and "vllm" in self.logprob_modes:
            entries: list[dict[str, Any] | None] = [None]
            for position in range(1, len(prompt)):
                ranked = self.lm.ranked(prompt[:position])
                rank = {t: r for r, (t, _) in enumerate(ranked, start=1)}
                lp = dict(ranked)
                token_id = prompt[position]
                entry = {
                    str(token_id): {
                        "logprob": lp[token_id],
                        "rank": rank[token_id],
                        "decoded_token": self.lm.piece(token_id),
                    }
                }
                for t, v in ranked[:k]:
                    entry.setdefault(str(t), {"logprob": v, "rank": rank[t], "decoded_token": self.lm.piece(t)})
                entries.append(entry)
            choice["prompt_logprobs"] = entries
        return web.json_response(
            {
                "id": "cmpl-fake",
                "object": "text_completion",
                "model": body.get("model"),
                "choices": [choice],
                "usage": {
                    "prompt_tokens": len(prompt),
                    "completion_tokens": len(generated),
                    "total_tokens": len(prompt) + len(generated),
                },
            }
        )

    async def llamacpp_completion(self, request: web.Request) -> web.StreamResponse:
        """llama.cpp server's ``/completion`` with ``n_probs`` (generated token only)."""
        body = await request.json()
        self.requests.append(("/completion", body))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if "llama.cpp" not in self.logprob_modes:
            return web.Response(status=404, text="Not Found")
        prompt = self._prompt_ids(body["prompt"])
        ranked = self.lm.ranked(prompt)
        chosen, chosen_lp = ranked[0]
        k = int(body.get("n_probs") or 0)
        row = self._entry(chosen, chosen_lp) | {"top_logprobs": [self._entry(t, v) for t, v in ranked[:k]]}
        payload: dict[str, Any] = {
            "index": 0,
            "content": self.lm.piece(chosen),
            "tokens": [],
            "id_slot": 0,
            "stop": True,
            "model": "fake-llama",
            "tokens_predicted": 1,
            "tokens_evaluated": len(prompt),
        }
        if k > 0:
            payload["completion_probabilities"] = [row]
        return web.json_response(payload)

    async def list_models(self, request: web.Request) -> web.StreamResponse:
        self.gets.append(request.path)
        if self.owned_by is None:
            return web.Response(status=404, text="not found")
        model = {"id": "served-model", "object": "model", "owned_by": self.owned_by}
        return web.json_response({"object": "list", "data": [model]})

    async def server_version(self, request: web.Request) -> web.StreamResponse:
        self.gets.append(request.path)
        if self.version is None:
            return web.Response(status=404, text="not found")
        return web.json_response({"version": self.version})

    def app(self) -> web.Application:
        application = web.Application(client_max_size=64 * 1024 * 1024)
        application.router.add_get("/v1/models", self.list_models)
        application.router.add_get("/version", self.server_version)
        application.router.add_post("/v1/chat/completions", self.handle)
        application.router.add_post("/v1/completions", self.completions)
        application.router.add_post("/tokenize", self.tokenize)
        application.router.add_post("/completion", self.llamacpp_completion)
        return application


def dead_base_url() -> str:
    """The base URL of a loopback port nothing listens on (connections are refused): a dead replica."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class FakeOpenAIServer:
    """Runs a :class:`FakeOpenAI` on 127.0.0.1 in a background thread; use as a context manager."""

    def __init__(self, behaviour: FakeOpenAI) -> None:
        self.behaviour = behaviour
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._runner = web.AppRunner(self.behaviour.app(), access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._ready.set()
        self._loop.run_forever()

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._runner is not None
            await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--answers", help="JSON file: {user message: answer}")
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument(
        "--fault-rate", action="append", default=[], metavar="FAULT=P", help="e.g. 429=0.05 (repeatable)"
    )
    parser.add_argument("--retry-after", default="0.05", help="Retry-After of a 429 ('none': no header)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the drawn faults")
    parser.add_argument("--no-record", action="store_true", help="keep no request bodies (long benchmark runs)")
    args = parser.parse_args()
    answers: dict[str, Any] = {}
    if args.answers:
        with open(args.answers, encoding="utf-8") as handle:
            answers = json.load(handle)
    rates = {fault: float(rate) for fault, _, rate in (item.partition("=") for item in args.fault_rate)}
    behaviour = FakeOpenAI(
        answers=answers,
        delay_s=args.delay,
        fault_rates=rates,
        fault_seed=args.seed,
        retry_after=None if args.retry_after == "none" else args.retry_after,
        record=not args.no_record,
    )

    async def serve() -> None:
        runner = web.AppRunner(behaviour.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(f"PORT {port}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
