"""Where an OpenAI-compatible server wants a decoding constraint, and checking that it obeyed.

Servers disagree on the request field of a regex or grammar constraint (a JSON schema goes in
the standard ``response_format``, which all of them read). A
:class:`~verimod.models.grammar.TextGrammar` is sent as its regex rendering, or as GBNF where
the server takes no regex:

- vLLM ≥ 0.10.2 (dialect ``vllm``): ``structured_outputs: {"regex": …}`` (vLLM docs,
  "Structured Outputs"; the older top-level ``guided_*`` fields were removed in 0.12);
- vLLM < 0.10.2 (``vllm-legacy``): ``guided_regex``;
- SGLang (``sglang``): ``regex`` (SGLang docs, "Structured Outputs");
- the llama.cpp server (``llama.cpp``): ``grammar`` with the GBNF rendering; it has no regex
  field, so a plain regex is refused.

A server ignores a field it does not know and answers 200 with unconstrained text (vLLM ≥ 0.12
does so for ``guided_regex``), so the field is chosen for the server actually answering:
:func:`detect_dialect` reads ``GET {base}/models`` (``owned_by``: ``vllm``, ``sglang``,
``llamacpp``) and, for vLLM, ``GET {root}/version``. A server it cannot place gets no
constraint sent but a ``client`` error that says so (:func:`unsupported`). As a second guard,
:func:`check_obeyed` refuses an answer to a :class:`~verimod.models.grammar.TextGrammar`
request that finished normally but is not in the grammar's language: the server did not honour
the field.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal

from verimod.models.base import BackendError, ModelRequest, ModelResponse, StructuredOutput

Dialect = Literal["vllm", "vllm-legacy", "sglang", "llama.cpp"]
DIALECTS: Final = ("vllm", "vllm-legacy", "sglang", "llama.cpp")
#: vLLM versions from this one on take ``structured_outputs``.
VLLM_STRUCTURED_OUTPUTS: Final = (0, 10, 2)
_OWNERS: Final[dict[str, Dialect]] = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llama.cpp"}
#: finish reasons of an answer that ended on its own (not cut at the token limit)
_FINISHED: Final = frozenset({"stop", "eos", "end_turn", None})

GetJson = Callable[[str], Awaitable[Any]]


def needs_dialect(structured: StructuredOutput | None) -> bool:
    """True when the constraint's request field depends on the server (a regex or a grammar)."""
    return structured is not None and (structured.regex is not None or structured.grammar is not None)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


async def detect_dialect(get_json: GetJson, base_url: str) -> Dialect | str:
    """The dialect of the server at ``base_url`` (``…/v1``), or a description of what it is
    when it is none of them (for the refusal). ``get_json(url)`` GETs and decodes JSON, raising
    :class:`BackendError` on failure."""
    try:
        listing = await get_json(f"{base_url}/models")
    except BackendError as exc:
        if exc.retryable and exc.kind != "bad_response":
            raise
        return f"a server whose GET {base_url}/models failed ({exc})"
    entries = listing.get("data") if isinstance(listing, dict) else None
    owners = {e.get("owned_by") for e in entries or [] if isinstance(e, dict)}
    dialect = next((_OWNERS[o] for o in owners if o in _OWNERS), None)
    if dialect is None:
        return f"a server whose models are owned by {', '.join(sorted(map(str, owners))) or 'nobody'}"
    if dialect == "vllm":
        root = base_url.removesuffix("/v1")
        try:
            found = await get_json(f"{root}/version")
        except BackendError:
            found = None
        version = _version(str(found.get("version", ""))) if isinstance(found, dict) else ()
        if version and version < VLLM_STRUCTURED_OUTPUTS:
            return "vllm-legacy"
    return dialect


def unsupported(server: str, structured: StructuredOutput) -> BackendError:
    """The refusal for a constraint the server at hand cannot be asked for."""
    what = f"the grammar {structured.grammar.name}" if structured.grammar is not None else "a regex constraint"
    return BackendError(
        "client",
        f"cannot send {what} to {server}: verimod knows the constraint fields of vLLM, SGLang and the llama.cpp "
        "server only, and an unknown field would be ignored silently (unconstrained output); run without the "
        "constraint (--constrain none), or add the server's own field with --extra-body",
    )


def structured_fields(structured: StructuredOutput, dialect: Dialect, server: str) -> dict[str, Any]:
    """The request-body fields carrying ``structured`` for a server of ``dialect``."""
    fields: dict[str, Any] = {}
    if structured.json_schema is not None:
        fields["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "verimod", "schema": structured.json_schema, "strict": True},
        }
    regex = structured.grammar.regex() if structured.grammar is not None else structured.regex
    if regex is None:
        return fields
    if dialect == "vllm":
        fields["structured_outputs"] = {"regex": regex}
    elif dialect == "vllm-legacy":
        fields["guided_regex"] = regex
    elif dialect == "sglang":
        fields["regex"] = regex
    elif structured.grammar is not None:  # llama.cpp: GBNF, no regex field
        fields["grammar"] = structured.grammar.gbnf()
    else:
        raise unsupported(f"{server} (a llama.cpp server: GBNF grammars only)", structured)
    return fields


def check_obeyed(request: ModelRequest, response: ModelResponse, server: str) -> ModelResponse:
    """``response``, unless it answers a grammar request, ended on its own (no stop string
    given, not cut at the token limit) and is outside the grammar: then a ``client`` error
    saying that the server ignored the constraint."""
    params = request.params
    grammar = None if params.structured is None else params.structured.grammar
    if grammar is None or params.stop or response.finish_reason not in _FINISHED or response.text is None:
        return response
    if grammar.matches(response.text):
        return response
    raise BackendError(
        "client",
        f"{server} answered outside the grammar {grammar.name} (finish_reason {response.finish_reason!r}): it did "
        "not honour the constraint field; run with --constrain none or check the server's structured-output support",
    )
