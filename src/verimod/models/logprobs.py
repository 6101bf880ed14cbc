"""Token log-probabilities from OpenAI-compatible servers: reading them, and scoring a given
continuation after a context (teacher forcing over HTTP).

**Reading** (pure functions over decoded JSON; a body that lacks what they need raises
:class:`~verimod.models.base.BackendError` ``bad_response``; every value is checked here, so the
records are built without a second validation — a long continuation has thousands of them):

- :func:`chat_logprobs` — the chat-completions ``choices[0].logprobs.content`` list of
  ``{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}`` (OpenAI, vLLM, llama.cpp);
- :func:`prompt_logprobs` — vLLM's ``choices[0].prompt_logprobs``: one entry per prompt token,
  ``null`` for the first, else ``{"<token id>": {"logprob", "rank", "decoded_token"}}`` holding
  the prompt token itself and the top-k alternatives;
- :func:`echo_logprobs` — the legacy completions ``choices[0].logprobs`` of an ``echo``
  request: parallel lists ``tokens``, ``token_logprobs`` (``null`` first), ``top_logprobs``
  (``{token string: logprob}``) and ``text_offset``; spans are counted from the token strings;
- :func:`llamacpp_position` — one row of llama.cpp server's ``completion_probabilities``
  (``/completion`` with ``n_probs``): ``{"id", "token", "logprob", "top_logprobs": [{"id",
  "token", "logprob"}]}`` (``prob`` / ``top_probs`` with ``post_sampling_probs``).

**Scoring a continuation** (:func:`score_continuation`): the log-probability of every token of
``continuation`` read after ``context`` — the context is the plain text followed by a newline,
no chat template (as :class:`verimod.tasks.softhate.scorers.LlamaCppScorer` reads it). Three
protocols, tried in this order by :func:`detect_protocol`:

1. ``vllm``: ``POST <root>/tokenize`` (``add_special_tokens`` for the context only) gives the
   token ids; ``POST <base>/completions`` with the ids as ``prompt``, ``max_tokens = 1`` and
   ``prompt_logprobs = k``; the last ``len(continuation ids)`` entries are read by token id.
2. ``echo``: ``POST <base>/completions`` with the text ``context + "\\n" + continuation``,
   ``echo = true``, ``logprobs = k``, ``max_tokens = 1``; the echoed prompt tokens whose
   character span reaches past the context are the continuation's (a token spanning the
   newline counts as the continuation's). The echoed tokens must spell the prompt exactly,
   else the alignment is refused (a final ``model`` error: asking again cannot help). No
   tokenizer endpoint is needed.
3. ``llama.cpp``: ``POST <root>/tokenize`` (``{"content", "add_special"}``) gives the ids; then,
   for each continuation position i, ``POST <root>/completion`` with the ids up to i as the
   prompt, ``n_predict = 1``, ``n_probs = k``, ``cache_prompt = true``: the server's
   distribution over the next token, in which token i is looked up by id. llama.cpp does not
   score prompt tokens, so this is one request per continuation token (the prompt cache keeps
   it cheap). A token outside the top k gets ``logprob = None`` (its probability is known only
   to be below the k-th).

``<base>`` is the server's ``.../v1`` URL and ``<root>`` the same without a trailing ``/v1``.
A server none of the three works with is refused with a ``client`` error naming what was tried.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Literal

from verimod.models.base import BackendError, TokenLogprob, TopLogprob

Protocol = Literal["vllm", "echo", "llama.cpp"]
PROTOCOLS: Final[tuple[Protocol, ...]] = ("vllm", "echo", "llama.cpp")
#: ``post(url, body) -> decoded JSON``; raises :class:`BackendError` (HTTP errors mapped).
Post = Callable[[str, dict[str, Any]], Awaitable[Any]]

# ---------------------------------------------------------------------------------------------
# reading


def _bad(message: str) -> BackendError:
    return BackendError("bad_response", message)


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise _bad(f"{where} is not a number: {value!r}")
    return float(value)


def _first_choice(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise _bad("the response body is not a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _bad("the response has no choices")
    return choices[0]


def chat_logprobs(choice: Mapping[str, Any]) -> list[TokenLogprob] | None:
    """The generated tokens' log-probabilities of a chat-completions choice (None when the
    choice carries none)."""
    block = choice.get("logprobs")
    if not isinstance(block, dict) or not isinstance(block.get("content"), list):
        return None
    out = []
    for i, entry in enumerate(block["content"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            raise _bad(f"logprobs.content[{i}] has no token")
        top = tuple(
            TopLogprob.model_construct(
                token=str(t.get("token", "")), logprob=_number(t.get("logprob"), f"top_logprobs of token {i}")
            )
            for t in entry.get("top_logprobs") or ()
            if isinstance(t, dict)
        )
        out.append(
            TokenLogprob.model_construct(
                token=entry["token"], logprob=_number(entry.get("logprob"), f"token {i}"), top=top
            )
        )
    return out


def prompt_logprobs(payload: Any, token_ids: Sequence[int], last: int) -> list[TokenLogprob]:
    """The last ``last`` prompt positions of a vLLM ``prompt_logprobs`` answer, read by the
    prompt's own ``token_ids`` (the prompt that was sent)."""
    entries = _first_choice(payload).get("prompt_logprobs")
    if not isinstance(entries, list):
        raise _bad("the response has no prompt_logprobs (not a vLLM server?)")
    if len(entries) != len(token_ids):
        raise _bad(f"prompt_logprobs has {len(entries)} entries for a prompt of {len(token_ids)} tokens")
    out = []
    for position in range(len(token_ids) - last, len(token_ids)):
        entry = entries[position]
        if not isinstance(entry, dict):
            raise _bad(f"prompt_logprobs[{position}] is {entry!r}, expected an object")
        top = []
        own: float | None = None
        for key, value in entry.items():
            if not isinstance(value, dict):
                raise _bad(f"prompt_logprobs[{position}][{key!r}] is not an object")
            try:
                token_id = int(key)
            except ValueError:
                raise _bad(f"prompt_logprobs[{position}] key {key!r} is not a token id") from None
            logprob = _number(value.get("logprob"), f"prompt_logprobs[{position}][{key!r}].logprob")
            top.append(
                TopLogprob.model_construct(
                    token=str(value.get("decoded_token") or ""), token_id=token_id, logprob=logprob
                )
            )
            if token_id == token_ids[position]:
                own = logprob
        if own is None:
            raise _bad(f"prompt_logprobs[{position}] lacks the prompt token {token_ids[position]}")
        token = next(t.token for t in top if t.token_id == token_ids[position])
        out.append(TokenLogprob.model_construct(token=token, token_id=token_ids[position], logprob=own, top=tuple(top)))
    return out


def echo_logprobs(payload: Any, prompt: str, start: int) -> list[TokenLogprob]:
    """The echoed prompt tokens of a legacy-completions ``echo`` answer whose character span
    ends after ``start`` (the continuation's first character).

    Spans are counted from the echoed token strings themselves, which must spell ``prompt``
    exactly (a first token without a log-probability that is not a prefix of the prompt — a
    rendered BOS such as ``<s>`` — is passed over); otherwise the alignment is refused.
    """
    block = _first_choice(payload).get("logprobs")
    if not isinstance(block, dict):
        raise _bad("the response has no logprobs")
    tokens, values, tops = (block.get(k) for k in ("tokens", "token_logprobs", "top_logprobs"))
    if not (isinstance(tokens, list) and isinstance(values, list) and isinstance(tops, list)):
        raise _bad("logprobs lacks tokens, token_logprobs or top_logprobs (no echo support?)")
    if not len(tokens) == len(values) == len(tops):
        raise _bad("logprobs lists differ in length")
    if not all(isinstance(t, str) for t in tokens):
        raise _bad("logprobs.tokens holds a non-string")
    first = 1 if tokens and values[0] is None and not prompt.startswith(tokens[0]) else 0
    if not "".join(tokens[first:]).startswith(prompt):
        raise BackendError("model", "the echoed tokens do not spell the prompt (cannot align the continuation)")
    out: list[TokenLogprob] = []
    end = 0
    for i in range(first, len(tokens)):
        if end >= len(prompt):
            break
        end += len(tokens[i])
        if end <= start:
            continue
        if values[i] is None:
            raise _bad(f"no log-probability for the echoed token {i}")
        top = tuple(
            TopLogprob.model_construct(token=str(k), logprob=_number(v, f"top_logprobs[{i}][{k!r}]"))
            for k, v in (tops[i] or {}).items()
        )
        out.append(
            TokenLogprob.model_construct(token=tokens[i], logprob=_number(values[i], f"token_logprobs[{i}]"), top=top)
        )
    if end != len(prompt):
        raise BackendError("model", "the prompt does not end on an echoed token boundary (cannot align it)")
    return out


def llamacpp_position(payload: Any, token_id: int) -> TokenLogprob:
    """Token ``token_id`` in the first row of llama.cpp's ``completion_probabilities``
    (``logprob = None`` when it is not among the returned top tokens)."""
    if not isinstance(payload, dict):
        raise _bad("the response body is not a JSON object")
    rows = payload.get("completion_probabilities")
    if not isinstance(rows, list) or not rows or not isinstance(rows[0], dict):
        raise _bad("the response has no completion_probabilities (not a llama.cpp server, or n_probs ignored)")
    row = rows[0]
    if isinstance(row.get("top_logprobs"), list):
        entries, key = row["top_logprobs"], "logprob"
    elif isinstance(row.get("top_probs"), list):
        entries, key = row["top_probs"], "prob"
    else:
        raise _bad("completion_probabilities[0] has no top_logprobs (a llama.cpp server older than b4500?)")
    top = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), int):
            raise _bad("a top_logprobs entry has no token id")
        value = _number(entry.get(key), f"top_logprobs {key}")
        logprob = value if key == "logprob" else (math.log(value) if value > 0 else -math.inf)
        top.append(TopLogprob.model_construct(token=str(entry.get("token", "")), token_id=entry["id"], logprob=logprob))
    own = next((t for t in top if t.token_id == token_id), None)
    return TokenLogprob.model_construct(
        token=own.token if own else "", token_id=token_id, logprob=own.logprob if own else None, top=tuple(top)
    )


# ---------------------------------------------------------------------------------------------
# scoring a continuation


def server_root(base_url: str) -> str:
    """``base_url`` without a trailing ``/v1`` (where vLLM and llama.cpp serve ``/tokenize``)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


async def _tokenize(post: Post, root: str, model: str, text: str, special: bool, protocol: Protocol) -> list[int]:
    if protocol == "llama.cpp":
        body: dict[str, Any] = {"content": text, "add_special": special}
    else:
        body = {"model": model, "prompt": text, "add_special_tokens": special}
    payload = await post(f"{root}/tokenize", body)
    tokens = payload.get("tokens") if isinstance(payload, dict) else None
    if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise _bad(f"{root}/tokenize did not return a list of token ids")
    return tokens


async def score_continuation(
    post: Post, base_url: str, model: str, context: str, continuation: str, top_k: int, protocol: Protocol
) -> list[TokenLogprob]:
    """One :class:`~verimod.models.base.TokenLogprob` per token of ``continuation`` after
    ``context`` (module docstring), through ``protocol``."""
    if not continuation:
        raise BackendError("client", "an empty continuation has no tokens to score")
    root = server_root(base_url)
    prefix = context + "\n"
    if protocol == "echo":
        prompt = prefix + continuation
        body = {"model": model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0, "echo": True, "logprobs": top_k}
        found = echo_logprobs(await post(f"{base_url}/completions", body), prompt, len(prefix))
        if not found:
            raise _bad("no echoed token covers the continuation")
        return found
    head = await _tokenize(post, root, model, prefix, True, protocol)
    tail = await _tokenize(post, root, model, continuation, False, protocol)
    if not tail:
        raise _bad("the continuation tokenized to no tokens")
    if protocol == "vllm":
        ids = head + tail
        body = {"model": model, "prompt": ids, "max_tokens": 1, "temperature": 0.0, "prompt_logprobs": top_k}
        return prompt_logprobs(await post(f"{base_url}/completions", body), ids, len(tail))
    if protocol != "llama.cpp":
        raise ValueError(f"unknown log-probability protocol {protocol!r}; choose from {', '.join(PROTOCOLS)}")
    out = []
    for i, token_id in enumerate(tail):
        body = {
            "prompt": head + tail[:i],
            "n_predict": 1,
            "n_probs": top_k,
            "temperature": 0.0,
            "cache_prompt": True,
            "post_sampling_probs": False,
        }
        out.append(llamacpp_position(await post(f"{root}/completion", body), token_id))
    return out


async def detect_protocol(post: Post, base_url: str, model: str, top_k: int = 2) -> Protocol:
    """The first protocol of :data:`PROTOCOLS` that scores a probe continuation; a server none
    works with raises a ``client`` :class:`BackendError` naming what each attempt answered.
    Errors worth retrying (connection, timeout, server errors) propagate at once: they say
    nothing about the server's capabilities."""
    reasons = []
    for protocol in PROTOCOLS:
        try:
            await score_continuation(post, base_url, model, "a", "b", top_k, protocol)
        except BackendError as exc:
            if exc.kind not in ("client", "bad_response", "model"):
                raise
            reasons.append(f"{protocol}: {exc}")
            continue
        return protocol
    raise BackendError(
        "client",
        f"{base_url} gives no token log-probabilities of a given text (needed by scorer LMs); tried "
        + "; ".join(reasons)
        + ". Serve the model with vLLM or llama.cpp server, or score with a GGUF file or a table",
    )
