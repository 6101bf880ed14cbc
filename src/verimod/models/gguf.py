"""``gguf:<path>`` — a local GGUF model run in-process with llama-cpp-python.

Install with ``pip install ".[local]"``. The chat template is the one stored in the
GGUF file (llama-cpp-python's ``create_chat_completion`` applies it; a file without one gets
llama-cpp-python's guess from the model's metadata).

Options (:class:`BackendOptions`): ``threads`` (default: llama.cpp's choice), ``context_size``
(``n_ctx``, default 4096), ``batch_size`` (must be 1 or unset), ``device`` (``cpu``, the
default, or ``cuda``/``gpu`` to offload every layer, which needs a GPU build of
llama-cpp-python). Any other option (``base_urls``, ``api_key_env``, ``adapter``) is refused.

Generation: ``temperature`` 0 is greedy decoding; ``temperature`` > 0 samples with
``top_p`` (default 1.0), ``top_k`` disabled and ``min_p`` 0 (so only temperature and top-p
shape the distribution), seeded with ``seed``. ``extra_body`` may set ``top_k``, ``min_p``,
``typical_p``, ``repeat_penalty``, ``presence_penalty`` and ``frequency_penalty``.
Structured output: a JSON schema is enforced with a grammar; a
:class:`~verimod.models.grammar.TextGrammar` (``--constrain anchors``) with a precompiled token
mask (:mod:`verimod.models.token_mask`, llguidance over the GGUF file's own vocabulary) applied
through llama-cpp-python's logits-processor hook, one mask per request. Without llguidance, or
with ``grammar_engine = "gbnf"``, llama.cpp's own grammar sampler takes the grammar's GBNF
rendering instead (checked once per grammar: a GBNF llama.cpp cannot parse is a ``client``
error, never a crash); both enforce the same language, but llama.cpp's sampler costs about
3× an unconstrained decoding step on the VARM grammar (``benchmarks/bench_constrain.py``). A
regular expression is refused (``BackendError("client", ...)``). Every request starts from an
empty KV cache, so its output does not depend on the requests before it.

Requests run one at a time in a worker thread (``batch_size = 1``, ``max_concurrency = 1``):
one model instance is not thread-safe. The engine never times them out (``in_process``): a
generation is bounded by ``max_tokens``. A generation stops at the next decoding step (or
prompt batch) when its caller is cancelled or the backend is closed, and :meth:`GgufBackend.aclose`
frees the model only after the running generation has returned.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from verimod.core.hashing import file_sha256
from verimod.models._local import (
    SerialRunner,
    chat_dicts,
    check_extra_body,
    check_options,
    package_version,
    require_module,
)
from verimod.models.base import (
    BackendError,
    BackendOptions,
    ModelBackend,
    ModelRequest,
    ModelResponse,
    StructuredOutput,
)
from verimod.models.grammar import TextGrammar
from verimod.models.registry import backends
from verimod.models.token_mask import TokenMask, llguidance_grammar

#: ``n_ctx`` when ``context_size`` is not given.
DEFAULT_CONTEXT_SIZE = 4096
#: ``extra_body`` keys passed through to ``create_chat_completion``.
SAMPLER_KEYS = frozenset({"top_k", "min_p", "typical_p", "repeat_penalty", "presence_penalty", "frequency_penalty"})
_GPU_DEVICES = frozenset({"cuda", "gpu"})


@backends.register("gguf")
class GgufBackend(ModelBackend):
    """A GGUF model in this process (see the module docstring).

    Construction checks the options, the file and the package, then loads the model;
    each failure is a one-line ``BackendError("client", ...)``.
    """

    prefix = "gguf"
    in_process = True
    batch_size = 1
    max_concurrency = 1

    def __init__(self, name: str, options: BackendOptions) -> None:
        super().__init__(name, options)
        check_options(options, self.prefix, {"threads", "context_size", "batch_size", "device"})
        if options.batch_size not in (None, 1):
            raise BackendError(
                "client", f"the gguf backend runs one request at a time: batch_size must be 1, got {options.batch_size}"
            )
        device = (options.device or "cpu").lower()
        if device != "cpu" and device not in _GPU_DEVICES:
            raise BackendError("client", f"the gguf backend takes device 'cpu' or 'cuda', got {options.device!r}")
        if not name:
            raise BackendError("client", "the gguf backend needs a model file: gguf:/path/to/model.gguf")
        self.path = Path(name).expanduser()
        if not self.path.is_file():
            raise BackendError("client", f"GGUF model file not found: {self.path}")
        llama_cpp = require_module("llama_cpp", "local", "the gguf backend")
        gpu_layers = 0
        if device in _GPU_DEVICES:
            if not llama_cpp.llama_supports_gpu_offload():
                raise BackendError(
                    "client", "device cuda asked for, but this llama-cpp-python build has no GPU support"
                )
            gpu_layers = -1
        self.n_ctx = options.context_size or DEFAULT_CONTEXT_SIZE
        self._runner = SerialRunner(self.prefix)
        self._sha256: str | None = None
        self._llama_cpp = llama_cpp
        self._grammars: dict[TextGrammar, Any] = {}  # GBNF engine: LlamaGrammar per grammar
        self._compiled: dict[TextGrammar, str] = {}  # llguidance engine: grammar text per grammar
        #: how a TextGrammar is enforced: llguidance's token mask when installed, else llama.cpp's GBNF sampler
        self.grammar_engine: Literal["llguidance", "gbnf"] = "llguidance" if _has_llguidance() else "gbnf"
        self._mask_tokenizer: Any = None  # llguidance's view of the GGUF vocabulary, built on first use
        try:
            self._llm: Any = stoppable_llama(llama_cpp, self._runner.checkpoint)(
                model_path=str(self.path),
                n_ctx=self.n_ctx,
                n_threads=options.threads,
                n_threads_batch=options.threads,
                n_gpu_layers=gpu_layers,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise BackendError("client", f"cannot load GGUF model {self.path}: {exc}") from None

    def identity(self) -> dict[str, Any]:
        """Backend, model file name, size, SHA-256 (computed once, on first call), ``n_ctx``
        and the llama-cpp-python version. No directory path enters it."""
        if self._sha256 is None:
            self._sha256 = file_sha256(self.path)
        return {
            "backend": self.prefix,
            "model": self.path.name,
            "size": self.path.stat().st_size,
            "sha256": self._sha256,
            "n_ctx": self.n_ctx,
            "runtime": f"llama-cpp-python {package_version('llama-cpp-python')}",
        }

    def _call_kwargs(self, request: ModelRequest) -> dict[str, Any]:
        """``create_chat_completion`` keyword arguments for ``request``; client errors for what
        this backend cannot do."""
        params = request.params
        kwargs: dict[str, Any] = {
            "messages": chat_dicts(request.messages),
            "temperature": params.temperature,
            "top_p": 1.0 if params.top_p is None else params.top_p,
            "top_k": 0,
            "min_p": 0.0,
            "repeat_penalty": 1.0,
            "max_tokens": params.max_tokens,
            "stop": list(params.stop),
        }
        if params.seed is not None:
            kwargs["seed"] = params.seed
        kwargs.update(check_extra_body(params.extra_body, self.prefix, SAMPLER_KEYS))
        structured = params.structured
        if structured is not None:
            if structured.regex is not None:
                raise BackendError("client", "the gguf backend does not support regex-constrained output")
            if structured.json_schema is not None:
                kwargs["response_format"] = {"type": "json_object", "schema": structured.json_schema}
            if structured.grammar is not None and self.grammar_engine == "llguidance":
                kwargs["logits_processor"] = [self._token_mask(structured)]
            elif structured.grammar is not None:
                kwargs["grammar"] = self._llama_grammar(structured.grammar)
        return kwargs

    def _token_mask(self, structured: StructuredOutput) -> TokenMask:
        """A fresh llguidance mask for one generation under ``structured``'s grammar (the
        grammar text is compiled once per grammar, the vocabulary once per backend)."""
        if self._llm is None:
            raise BackendError("client", "gguf: the backend is closed")
        grammar = structured.grammar
        assert grammar is not None
        compiled = self._compiled.get(grammar)
        if compiled is None:
            compiled = self._compiled[grammar] = llguidance_grammar(structured, "structured output with gguf")
        if self._mask_tokenizer is None:
            from llguidance.llamacpp import lltokenizer_from_vocab

            llama_cpp = self._llama_cpp
            vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
            ends = [t for t in range(self._llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t)]
            with warnings.catch_warnings():  # it calls a llama_cpp function deprecated once per token
                warnings.simplefilter("ignore", DeprecationWarning)
                self._mask_tokenizer = lltokenizer_from_vocab(vocab, eos_token=ends)
        return TokenMask(self._mask_tokenizer, compiled, self._llm.n_vocab())

    def _llama_grammar(self, grammar: TextGrammar) -> Any:
        """The ``LlamaGrammar`` of ``grammar`` (its GBNF), after checking once that llama.cpp
        parses it: llama-cpp-python hands the text to llama.cpp unchecked, and a grammar sampler
        that failed to build would crash the process."""
        found = self._grammars.get(grammar)
        if found is None:
            if self._llm is None:
                raise BackendError("client", "gguf: the backend is closed")
            gbnf = grammar.gbnf()
            llama_cpp = self._llama_cpp
            vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
            sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
            if not sampler:
                raise BackendError("client", f"gguf: llama.cpp cannot parse the GBNF of grammar {grammar.name}")
            llama_cpp.llama_sampler_free(sampler)
            found = self._grammars[grammar] = llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)
        return found

    def _complete(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The blocking call: a fresh KV cache, then one chat completion."""
        if self._llm is None:
            raise BackendError("client", "gguf: the backend is closed")
        self._llm.reset()
        result: dict[str, Any] = self._llm.create_chat_completion(**kwargs)
        return result

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Answer one request. A prompt longer than the context is a ``client`` error; any
        other failure inside llama.cpp is a ``model`` error."""
        kwargs = self._call_kwargs(request)
        try:
            result = await self._runner.run(lambda: self._complete(kwargs))
        except ValueError as exc:
            if "context window" in str(exc):
                raise BackendError("client", f"gguf: {exc}") from None
            raise BackendError("model", f"gguf: {exc}") from None
        except (RuntimeError, OSError) as exc:
            raise BackendError("model", f"gguf: {type(exc).__name__}: {exc}") from None
        try:
            choice = result["choices"][0]
            usage = result.get("usage") or {}
            return ModelResponse(
                text=choice["message"]["content"] or "",
                finish_reason=choice.get("finish_reason"),
                prompt_tokens=usage.get("prompt_tokens"),
                completion_tokens=usage.get("completion_tokens"),
                model=self.path.name,
            )
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError("bad_response", f"gguf: unexpected completion shape: {exc!r}") from None

    async def aclose(self) -> None:
        """Stop the running generation at its next step, wait for it, then free the model (its
        memory map and context). Requests after this fail with a ``client`` error."""
        await self._runner.close(self._free)

    def _free(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            with contextlib.suppress(AttributeError):
                llm.close()


def _has_llguidance() -> bool:
    try:
        import llguidance  # noqa: F401
    except ImportError:
        return False
    return True


def stoppable_llama(llama_cpp: Any, checkpoint: Callable[[], None]) -> Any:
    """A ``llama_cpp.Llama`` subclass whose ``eval`` calls ``checkpoint()`` before each batch of
    at most ``n_batch`` tokens: before every decoding step of a generation and between the
    batches of a long prompt. ``checkpoint`` raises to stop the generation there (the KV cache
    is reset before the next request, so a stopped generation leaves nothing behind)."""

    class StoppableLlama(llama_cpp.Llama):  # type: ignore[misc,name-defined]
        def eval(self, tokens: Sequence[int]) -> None:
            step = max(1, int(self.n_batch))
            start = 0
            while True:  # at least once: an empty eval still trims the KV cache
                checkpoint()
                super().eval(tokens[start : start + step])
                start += step
                if start >= len(tokens):
                    return

    return StoppableLlama
