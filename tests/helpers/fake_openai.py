"""A real OpenAI-compatible chat-completions server for tests and benchmarks (aiohttp, loopback).

It answers ``POST /v1/chat/completions`` with scripted answers keyed by the last user message,
optional latency, and injected faults consumed one per attempt: ``429`` (with Retry-After),
``500``, ``503``, ``timeout`` (answers after the client gave up), ``drop`` (closes the
connection without answering), ``malformed`` (200 with a body that is not JSON), ``empty``
(200 with no choices). It counts requests per key and records the request bodies and Authorization headers seen.

Run in-process (:class:`FakeOpenAIServer`, a background thread with its own event loop) or as
a separate process: ``python tests/helpers/fake_openai.py --port 0 --answers answers.json``
(prints ``PORT <n>`` when ready).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from aiohttp import web


class FakeOpenAI:
    """The behaviour: answers, faults, latency, counters."""

    def __init__(
        self,
        answers: dict[str, str] | None = None,
        default: Callable[[str], str] | None = None,
        faults: dict[str, list[str]] | None = None,
        delay_s: float = 0.0,
        timeout_sleep_s: float = 5.0,
        retry_after: str = "0.05",
    ) -> None:
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

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.bodies.append(body)
        self.authorization.append(request.headers.get("Authorization"))
        self.models.add(body.get("model"))
        user = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        self.hits[user] += 1
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        fault = self.faults[user].pop(0) if self.faults.get(user) else None
        if fault == "429":
            return web.Response(status=429, text="slow down", headers={"Retry-After": self.retry_after})
        if fault in ("500", "503"):
            return web.Response(status=int(fault), text="server trouble")
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
        text = self.answers.get(user)
        if text is None:
            text = self.default(user)
        self.answered[user] += 1
        return web.json_response(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": len(user),
                    "completion_tokens": len(text),
                    "total_tokens": len(user) + len(text),
                },
            }
        )

    def app(self) -> web.Application:
        application = web.Application(client_max_size=64 * 1024 * 1024)
        application.router.add_post("/v1/chat/completions", self.handle)
        return application


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
    args = parser.parse_args()
    answers: dict[str, Any] = {}
    if args.answers:
        with open(args.answers, encoding="utf-8") as handle:
            answers = json.load(handle)
    behaviour = FakeOpenAI(answers=answers, delay_s=args.delay)

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
