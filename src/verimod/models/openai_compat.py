"""``openai:<model>`` — any OpenAI-compatible chat-completions server.

vLLM, llama.cpp server, SGLang, Ollama and hosted APIs all speak it. Options:

- ``base_urls``: one or more ``.../v1`` URLs (default ``http://localhost:8000/v1``): a fleet of
  servers of the same model. :meth:`OpenAICompatibleBackend.replicas` gives the engine one view
  per server, so that it keeps limits and health per server and retries a failed attempt on
  another one (:mod:`verimod.core.fleet`); a request sent directly (:meth:`generate`) goes to
  the replica with the fewest requests in flight (ties in turn).
- ``api_key_env``: the name of the environment variable holding the API key (default
  ``OPENAI_API_KEY`` when set). The key is sent as a bearer token and never logged, returned
  or written to a run file.
- Generation parameters map to the request body: temperature, top_p, max_tokens, seed, stop;
  a JSON schema becomes ``response_format = {"type": "json_schema", ...}``; a regex or a grammar
  (``--constrain anchors``) goes in the field of the server answering — vLLM, SGLang or the
  llama.cpp server, detected once per replica; any other server is refused with a ``client``
  error — and an answer outside the grammar is refused too
  (:mod:`verimod.models.structured_request`); ``extra_body`` is merged last (it can override
  anything).

Token log-probabilities (:mod:`verimod.models.logprobs`): a chat answer's
``choices[0].logprobs.content`` (asked for with ``extra_body={"logprobs": true, ...}``) is
carried in ``ModelResponse.token_logprobs``; :meth:`OpenAICompatibleBackend.continuation_logprobs`
scores a given continuation after a context (vLLM ``prompt_logprobs``, completions ``echo``,
llama.cpp server ``n_probs``; the protocol is detected once per backend, and a server that
gives none is refused with a ``client`` error).

HTTP 429 and 503 are ``rate_limited`` (the engine slows down), other 5xx ``server``, 408 and
client-side timeouts ``timeout``, refused or dropped connections ``connection``, a body that is
not a chat completion (malformed JSON, no choices) ``bad_response`` — all retryable; other 4xx
are ``client`` errors, final at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Sequence
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from verimod.models import logprobs
from verimod.models.base import BackendError, BackendOptions, ModelBackend, ModelRequest, ModelResponse
from verimod.models.registry import backends
from verimod.models.structured_request import (
    DIALECTS,
    Dialect,
    check_obeyed,
    detect_dialect,
    needs_dialect,
    structured_fields,
    unsupported,
)

DEFAULT_BASE_URL = "http://localhost:8000/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"


def _compact_json(obj: Any) -> str:
    """Request bodies as compact UTF-8 JSON (Chinese text is not escaped: half the bytes)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def request_body(
    model: str, request: ModelRequest, dialect: Dialect | None = None, server: str = "the server"
) -> dict[str, Any]:
    """The chat-completions JSON body for one request; ``dialect`` (of ``server``) places a regex
    or grammar constraint (:mod:`verimod.models.structured_request`), which without it is refused."""
    params = request.params
    body: dict[str, Any] = {
        "model": model,
        "messages": [m.model_dump() for m in request.messages],
        "temperature": params.temperature,
        "max_tokens": params.max_tokens,
    }
    if params.top_p is not None:
        body["top_p"] = params.top_p
    if params.seed is not None:
        body["seed"] = params.seed
    if params.stop:
        body["stop"] = list(params.stop)
    if params.structured is not None:
        if dialect is None and needs_dialect(params.structured):
            raise unsupported(server, params.structured)
        body.update(structured_fields(params.structured, dialect or "vllm", server))
    body.update(params.extra_body)
    return body


def parse_completion(payload: Any) -> ModelResponse:
    """A :class:`ModelResponse` from a decoded chat-completions body, or ``bad_response``."""
    if not isinstance(payload, dict):
        raise BackendError("bad_response", "the response body is not a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BackendError("bad_response", "the response has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise BackendError("bad_response", "the first choice has no message")
    content = message.get("content")
    if content is None:
        content = message.get("refusal")
    if not isinstance(content, str):
        raise BackendError("bad_response", "the message has no text content")
    raw_usage = payload.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    return ModelResponse(
        text=content,
        finish_reason=choices[0].get("finish_reason"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        model=payload.get("model") if isinstance(payload.get("model"), str) else None,
        token_logprobs=logprobs.chat_logprobs(choices[0]),
    )


@backends.register("openai")
class OpenAICompatibleBackend(ModelBackend):
    """Chat completions over HTTP (see the module docstring)."""

    prefix = "openai"

    def __init__(self, name: str, options: BackendOptions) -> None:
        super().__init__(name, options)
        if not name:
            raise BackendError("client", "openai: needs a model name, e.g. openai:qwen2.5-7b-instruct")
        self.base_urls = [u.rstrip("/") for u in (options.base_urls or (DEFAULT_BASE_URL,))]
        for url in self.base_urls:
            if not url.startswith(("http://", "https://")):
                raise BackendError("client", f"base URL {url!r} must start with http:// or https://")
        key_env = options.api_key_env or DEFAULT_KEY_ENV
        if options.api_key_env and not os.environ.get(options.api_key_env):
            raise BackendError("client", f"environment variable {options.api_key_env} (the API key) is not set")
        self._headers = {"Content-Type": "application/json"}
        key = os.environ.get(key_env)
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._in_flight = [0] * len(self.base_urls)
        self._turn = 0
        self._session: aiohttp.ClientSession | None = None
        self._timeout = aiohttp.ClientTimeout(total=options.request_timeout_s)
        self._logprob_protocols: dict[str, logprobs.Protocol] = {}
        self._dialects: dict[str, asyncio.Future[Dialect | str]] = {}  # base URL → its structured-output dialect

    def __repr__(self) -> str:  # never show headers (the key)
        return f"OpenAICompatibleBackend(model={self.name!r}, base_urls={self.base_urls!r})"

    def identity(self) -> dict[str, Any]:
        """Backend and model name (base URLs and keys are not part of a model's identity)."""
        return {"backend": self.prefix, "model": self.name}

    def replicas(self) -> Sequence[tuple[str, ModelBackend]]:
        """One view per base URL, labelled by its URL (without any user or password in it),
        sharing this backend's connection pool and key."""
        return tuple((replica_label(url), _Replica(self, i)) for i, url in enumerate(self.base_urls))

    def _pick(self) -> int:
        fewest = min(self._in_flight)
        candidates = [i for i, n in enumerate(self._in_flight) if n == fewest]
        choice = candidates[self._turn % len(candidates)]
        self._turn += 1
        return choice

    async def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self._timeout, headers=self._headers, json_serialize=_compact_json
            )
        return self._session

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """POST one chat completion to the least-busy replica."""
        return await self.generate_on(self._pick(), request)

    async def generate_on(self, index: int, request: ModelRequest) -> ModelResponse:
        """POST one chat completion to replica ``index`` (its structured-output dialect detected first
        when the request carries a constraint)."""
        base = self.base_urls[index]
        dialect = await self._dialect(base, request) if needs_dialect(request.params.structured) else None
        body = request_body(self.name, request, dialect, base)
        response = parse_completion(await self._post_json(index, f"{base}/chat/completions", body))
        return check_obeyed(request, response, base)

    async def _dialect(self, base: str, request: ModelRequest) -> Dialect:
        """The structured-output dialect of the server at ``base`` (detected once), or the refusal."""
        pending = self._dialects.get(base)
        if pending is None:  # one detection per replica, shared by the requests arriving meanwhile
            pending = self._dialects[base] = asyncio.ensure_future(detect_dialect(self._get_json, base))
        try:
            found = await asyncio.shield(pending)
        except BackendError:
            if self._dialects.get(base) is pending:  # a failed detection (retryable) is tried again
                del self._dialects[base]
            raise
        if found not in DIALECTS:
            raise unsupported(f"{base} ({found})", request.params.structured)  # type: ignore[arg-type]
        return found  # type: ignore[return-value]

    async def _get_json(self, url: str) -> Any:
        """GET ``url`` and decode the JSON answer (errors as in :meth:`_post_json`)."""
        session = await self._client()
        try:
            async with session.get(url) as response:
                raw, status = await response.read(), response.status
        except TimeoutError:
            raise BackendError("timeout", f"{url}: no answer within {self._timeout.total} s") from None
        except aiohttp.ClientError as exc:
            raise BackendError("connection", f"{url}: {type(exc).__name__}: {exc}") from None
        return _json_answer(url, status, raw, None)

    async def _post_json(self, index: int, url: str, body: dict[str, Any]) -> Any:
        """POST ``body`` to ``url`` (replica ``index``) and decode the JSON answer; HTTP and
        transport failures become :class:`BackendError` (module docstring)."""
        session = await self._client()
        self._in_flight[index] += 1
        try:
            async with session.post(url, json=body) as response:
                raw = await response.read()
                status = response.status
                retry_after = _retry_after(response.headers.get("Retry-After"))
        except TimeoutError:
            raise BackendError("timeout", f"{url}: no answer within {self._timeout.total} s") from None
        except aiohttp.ClientConnectionError as exc:
            raise BackendError("connection", f"{url}: {type(exc).__name__}: {exc}") from None
        except aiohttp.ClientError as exc:
            raise BackendError("bad_response", f"{url}: {type(exc).__name__}: {exc}") from None
        finally:
            self._in_flight[index] -= 1
        return _json_answer(url, status, raw, retry_after)

    async def logprob_protocol(self, index: int = 0) -> logprobs.Protocol:
        """How replica ``index`` gives token log-probabilities (detected on first use, then
        remembered); a ``client`` :class:`BackendError` when it gives none."""
        url = self.base_urls[index]
        if url not in self._logprob_protocols:

            async def post(target: str, body: dict[str, Any]) -> Any:
                return await self._post_json(index, target, body)

            self._logprob_protocols[url] = await logprobs.detect_protocol(post, url, self.name)
        return self._logprob_protocols[url]

    async def continuation_logprobs(self, context: str, continuation: str, top_k: int = 20) -> ModelResponse:
        """The log-probability of each token of ``continuation`` read after ``context`` (plain
        text, no chat template), with the top ``top_k`` alternatives per position, in
        ``token_logprobs`` (:func:`verimod.models.logprobs.score_continuation`). Every request
        of one call goes to the same replica."""
        index = self._pick()
        protocol = await self.logprob_protocol(index)

        async def post(target: str, body: dict[str, Any]) -> Any:
            return await self._post_json(index, target, body)

        found = await logprobs.score_continuation(
            post, self.base_urls[index], self.name, context, continuation, top_k, protocol
        )
        return ModelResponse(token_logprobs=found, completion_tokens=len(found))

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        if self._session is not None and not self._session.closed:
            await self._session.close()
            await asyncio.sleep(0)


class _Replica(ModelBackend):
    """One server of an :class:`OpenAICompatibleBackend` fleet: its requests go there only."""

    prefix = "openai"

    def __init__(self, fleet: OpenAICompatibleBackend, index: int) -> None:
        super().__init__(fleet.name, fleet.options)
        self.fleet = fleet
        self.index = index

    def identity(self) -> dict[str, Any]:
        return self.fleet.identity()

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return await self.fleet.generate_on(self.index, request)


def replica_label(url: str) -> str:
    """A base URL as run files may show it: any ``user:password@``, query and fragment removed."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _json_answer(url: str, status: int, body: bytes, retry_after: float | None) -> Any:
    """The decoded JSON of a 200 answer; otherwise the status's :class:`BackendError`, or
    ``bad_response`` for a body that is not JSON."""
    if status != 200:
        raise _status_error(url, status, body, retry_after)
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BackendError("bad_response", f"{url}: the response body is not JSON") from None


def _status_error(url: str, status: int, body: bytes, retry_after: float | None) -> BackendError:
    snippet = body[:200].decode("utf-8", "replace").replace("\n", " ")
    message = f"{url}: HTTP {status}: {snippet}"
    if status in (429, 503):
        return BackendError("rate_limited", message, retry_after)
    if status == 408:
        return BackendError("timeout", message, retry_after)
    if status >= 500:
        return BackendError("server", message, retry_after)
    return BackendError("client", message)
