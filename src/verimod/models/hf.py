"""``hf:<path-or-hub-id>`` — a Hugging Face transformers causal LM run in-process.

Install with ``pip install ".[hf]"`` after a torch build that suits the machine
(CPU: ``pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu``).

Loading: an existing local folder (or a name starting with ``/``, ``.`` or ``~``) is loaded
offline (``local_files_only``); anything else is a hub id loaded the normal way, which
honours ``HF_HUB_OFFLINE``. (A GGUF file is for the ``gguf:`` backend.) ``adapter`` names
a PEFT (LoRA) adapter folder applied on top.

Options (:class:`BackendOptions`): ``device`` (``cpu``, the default, or ``cuda``/``cuda:N``),
``batch_size`` (default 8), ``threads`` (``torch.set_num_threads``, which is process-wide),
``adapter``. Weights are bfloat16 on CUDA and float32 on CPU. ``base_urls``,
``api_key_env`` and ``context_size`` are refused.

Generation: the tokenizer's chat template with ``add_generation_prompt=True``, left padding
(pad token falls back to EOS). ``temperature`` 0 is greedy (``do_sample=False``) and
requests with equal ``max_tokens``, ``stop`` and ``extra_body`` are generated as one batch;
``temperature`` > 0 samples with ``top_p`` (default 1.0) and no top-k, each request alone
after ``torch.manual_seed(seed)``, so a sampled output does not depend on its batch.
``extra_body`` may set ``top_k``, ``min_p`` and ``repetition_penalty``. Outputs are cut at the
first stop string. Structured output (a :class:`~verimod.models.grammar.TextGrammar` such as
``--constrain anchors``, a regex or a JSON schema) is enforced by a precompiled token mask
applied to the logits at every step (:mod:`verimod.models.token_mask`, llguidance; one matcher
per row of a batch); without llguidance it is a ``client`` error naming the extra.

Batches run one at a time in a worker thread; the engine never times them out (``in_process``).
A generation stops after its current decoding step when its caller is cancelled or the backend
is closed, and :meth:`HfBackend.aclose` drops the model only after the running generation has
returned.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from verimod.models._local import (
    SerialRunner,
    chat_dicts,
    check_extra_body,
    check_options,
    package_version,
    require_module,
    sha256_tree,
    truncate_at_stop,
)
from verimod.models.base import (
    BackendError,
    BackendOptions,
    ModelBackend,
    ModelRequest,
    ModelResponse,
    StructuredOutput,
)
from verimod.models.registry import backends
from verimod.models.token_mask import TokenMask, check_readable, llguidance_grammar, llguidance_module

#: requests per ``generate_batch`` call when ``batch_size`` is not given.
DEFAULT_BATCH_SIZE = 8
#: ``extra_body`` keys passed through to the generation config.
SAMPLER_KEYS = frozenset({"top_k", "min_p", "repetition_penalty"})


@backends.register("hf")
class HfBackend(ModelBackend):
    """A transformers causal LM in this process (see the module docstring).

    Construction checks the options, paths and packages, then loads tokenizer, model and
    adapter; each failure is a one-line ``BackendError("client", ...)``.
    """

    prefix = "hf"
    in_process = True
    max_concurrency = 1

    def __init__(self, name: str, options: BackendOptions) -> None:
        super().__init__(name, options)
        check_options(options, self.prefix, {"device", "batch_size", "threads", "adapter"})
        if not name:
            raise BackendError("client", "the hf backend needs a model folder or hub id: hf:Qwen/Qwen2.5-0.5B-Instruct")
        self.batch_size = options.batch_size or DEFAULT_BATCH_SIZE
        self.local_path = local_model_path(name)
        if self.local_path is not None and not self.local_path.exists():
            raise BackendError("client", f"hf model folder not found: {self.local_path}")
        self.adapter_path = Path(options.adapter).expanduser() if options.adapter else None
        if self.adapter_path is not None and not (self.adapter_path / "adapter_config.json").is_file():
            raise BackendError("client", f"LoRA adapter folder not found (no adapter_config.json): {self.adapter_path}")
        self._torch: Any = require_module("torch", "hf", "the hf backend")
        self._transformers: Any = require_module("transformers", "hf", "the hf backend")
        self.device = torch_device(self._torch, options.device, self.prefix)
        self.dtype = self._torch.bfloat16 if self.device.type == "cuda" else self._torch.float32
        if options.threads is not None:
            self._torch.set_num_threads(options.threads)
        self._runner = SerialRunner(self.prefix)
        self._adapter_sha256: str | None = None
        self._tokenizer, self._model = self._load()
        self._eos_ids = self._eos_token_ids()
        self._mask_tokenizer: Any = None  # llguidance's view of the tokenizer, built on first use
        self._mask_grammars: dict[str, str] = {}

    # -- loading -----------------------------------------------------------------------------

    def _load(self) -> tuple[Any, Any]:
        """Tokenizer and model (with the adapter applied), in eval mode on the device."""
        transformers = self._transformers
        kwargs: dict[str, Any] = {}
        source = self.name
        if self.local_path is not None:
            kwargs["local_files_only"] = True
            source = str(self.local_path)
            if not self.local_path.is_dir():
                hint = " (for a GGUF file use gguf:PATH)" if self.local_path.suffix == ".gguf" else ""
                raise BackendError("client", f"hf: expected a model folder, got the file {self.local_path}{hint}")
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(source, padding_side="left", **kwargs)
            kwargs[dtype_keyword()] = self.dtype
            model = transformers.AutoModelForCausalLM.from_pretrained(source, **kwargs)
        except (OSError, ValueError, ImportError) as exc:
            raise BackendError("client", f"hf: cannot load model {self.name!r}: {first_line(exc)}") from None
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        if tokenizer.pad_token_id is None:
            raise BackendError("client", f"hf: the tokenizer of {self.name!r} has neither a pad nor an EOS token")
        if getattr(tokenizer, "chat_template", None) is None:
            raise BackendError("client", f"hf: the tokenizer of {self.name!r} has no chat template")
        if self.adapter_path is not None:
            peft = require_module("peft", "hf", "a LoRA adapter")
            try:
                model = peft.PeftModel.from_pretrained(model, str(self.adapter_path), is_trainable=False)
            except (OSError, ValueError, RuntimeError, KeyError) as exc:
                message = f"hf: cannot load adapter {self.adapter_path}: {first_line(exc)}"
                raise BackendError("client", message) from None
        model.to(self.device)
        model.eval()
        return tokenizer, model

    def _eos_token_ids(self) -> list[int]:
        """EOS ids from the model's generation config and the tokenizer (chat models often end
        turns with a token that only one of them names)."""
        ids: list[int] = []
        configured = getattr(getattr(self._model, "generation_config", None), "eos_token_id", None)
        for value in (configured, self._tokenizer.eos_token_id):
            for token in value if isinstance(value, list | tuple) else [value]:
                if isinstance(token, int) and token not in ids:
                    ids.append(token)
        return ids

    def identity(self) -> dict[str, Any]:
        """Backend, model (absolute local path, or hub id), dtype, device type, adapter path and SHA-256 of the
        adapter folder's files (computed once), and the transformers/torch versions."""
        if self.adapter_path is not None and self._adapter_sha256 is None:
            self._adapter_sha256 = sha256_tree(self.adapter_path)
        return {
            "backend": self.prefix,
            "model": str(self.local_path.resolve()) if self.local_path is not None else self.name,
            "dtype": str(self.dtype).removeprefix("torch."),
            "device": self.device.type,
            "adapter": str(self.adapter_path) if self.adapter_path is not None else None,
            "adapter_sha256": self._adapter_sha256,
            "runtime": f"transformers {package_version('transformers')}, torch {package_version('torch')}",
        }

    # -- generation --------------------------------------------------------------------------

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Answer one request (a batch of one)."""
        return await self.generate_via_batch(request)

    async def generate_batch(self, requests: Sequence[ModelRequest]) -> list[ModelResponse | BackendError]:
        """Answer several requests: invalid ones get a client error, greedy ones with the same
        settings share one ``generate`` call, sampled ones run alone."""
        results: list[ModelResponse | BackendError | None] = [None] * len(requests)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for index, request in enumerate(requests):
            try:
                key = self._group_key(request)
            except BackendError as exc:
                results[index] = exc
                continue
            groups.setdefault(key if key[0] == "greedy" else (*key, index), []).append(index)
        for indices in groups.values():
            group = [requests[i] for i in indices]
            try:
                responses: list[ModelResponse | BackendError] = list(
                    await self._runner.run(functools.partial(self._run_group, group))
                )
            except BackendError as exc:
                responses = [exc] * len(group)
            except Exception as exc:  # a failure inside transformers must not lose the other groups
                responses = [BackendError("model", f"hf: {type(exc).__name__}: {first_line(exc)}")] * len(group)
            for i, response in zip(indices, responses, strict=True):
                results[i] = response
        return [r if r is not None else BackendError("model", "hf: no result") for r in results]

    def _group_key(self, request: ModelRequest) -> tuple[Any, ...]:
        """Requests with equal keys can share one ``generate`` call; client errors for what this
        backend cannot do."""
        params = request.params
        extra = check_extra_body(params.extra_body, self.prefix, SAMPLER_KEYS)
        constraint = None
        if params.structured is not None:
            constraint = params.structured.model_dump_json()
            if constraint not in self._mask_grammars:
                purpose = "structured output with the hf backend"
                self._mask_grammars[constraint] = llguidance_grammar(params.structured, purpose)
        mode = "greedy" if params.temperature == 0 else "sample"
        return (mode, params.max_tokens, params.stop, tuple(sorted(extra.items())), constraint)

    def _run_group(self, requests: Sequence[ModelRequest]) -> list[ModelResponse]:
        """The blocking part: tokenize, generate, decode. Every request shares the first one's
        generation settings (see :meth:`_group_key`)."""
        if self._model is None:
            raise BackendError("client", "hf: the backend is closed")
        torch = self._torch
        tokenizer = self._tokenizer
        params = requests[0].params
        try:
            prompts = [
                tokenizer.apply_chat_template(chat_dicts(r.messages), tokenize=False, add_generation_prompt=True)
                for r in requests
            ]
            encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
            config = self._generation_config(requests[0])
            stop_kwargs: dict[str, Any] = {"stopping_criteria": self._checkpoint_criteria()}
            if params.structured is not None:
                stop_kwargs["logits_processor"] = self._mask_processor(params.structured, len(requests))
            if params.stop:
                stop_kwargs |= {"stop_strings": list(params.stop), "tokenizer": tokenizer}
            if params.temperature > 0 and params.seed is not None:
                torch.manual_seed(params.seed)
            with torch.inference_mode():
                output = self._model.generate(**encoded, generation_config=config, **stop_kwargs)
        except (RuntimeError, ValueError, TypeError) as exc:
            raise BackendError("model", f"hf: {type(exc).__name__}: {first_line(exc)}") from None
        width = encoded["input_ids"].shape[1]
        return [
            self._response(output[row, width:].tolist(), int(encoded["attention_mask"][row].sum()), params.stop)
            for row in range(len(requests))
        ]

    def _checkpoint_criteria(self) -> Any:
        """A stopping-criteria list whose only member calls the runner's checkpoint after every
        decoding step (it never stops a generation itself: it raises to abandon it)."""
        transformers, torch, checkpoint = self._transformers, self._torch, self._runner.checkpoint

        class Checkpoint(transformers.StoppingCriteria):  # type: ignore[misc,name-defined]
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                checkpoint()
                return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

        return transformers.StoppingCriteriaList([Checkpoint()])

    def _mask_processor(self, structured: StructuredOutput, rows: int) -> Any:
        """A logits-processor list masking each row of a batch with its own grammar matcher."""
        transformers = self._transformers
        if self._mask_tokenizer is None:
            llguidance_module("structured output with the hf backend")
            from llguidance.hf import from_tokenizer

            mask_tokenizer = from_tokenizer(
                self._tokenizer, n_vocab=self._logits_width(), eos_token=list(self._eos_ids)
            )
            check_readable(mask_tokenizer, self._tokenizer, f"the tokenizer of {self.name}")
            self._mask_tokenizer = mask_tokenizer
        grammar = self._mask_grammars[structured.model_dump_json()]
        masks = [TokenMask(self._mask_tokenizer, grammar, self._logits_width()) for _ in range(rows)]

        class GrammarMasks(transformers.LogitsProcessor):  # type: ignore[misc,name-defined]
            def __call__(self, input_ids: Any, scores: Any) -> Any:
                for row, mask in enumerate(masks):
                    mask(input_ids[row].tolist(), scores[row])
                return scores

        return transformers.LogitsProcessorList([GrammarMasks()])

    def _logits_width(self) -> int:
        """Entries of the model's next-token logits (the output layer may be wider than the
        tokenizer's vocabulary)."""
        return int(self._model.get_output_embeddings().weight.shape[0])

    def _generation_config(self, request: ModelRequest) -> Any:
        """A generation config built from the request alone (the model's own sampling defaults
        are not inherited)."""
        params = request.params
        settings: dict[str, Any] = {
            "max_new_tokens": params.max_tokens,
            "eos_token_id": self._eos_ids,
            "pad_token_id": self._tokenizer.pad_token_id,
            "do_sample": params.temperature > 0,
        }
        if params.temperature > 0:
            settings.update(temperature=params.temperature, top_p=params.top_p or 1.0, top_k=0)
        settings.update(params.extra_body)
        return self._transformers.GenerationConfig(**settings)

    def _response(self, generated: list[int], prompt_tokens: int, stops: Sequence[str]) -> ModelResponse:
        """Decode one row: tokens up to the first EOS/pad, cut at the first stop string."""
        ends = {*self._eos_ids, self._tokenizer.pad_token_id}
        content = generated
        ended = False
        for position, token in enumerate(generated):
            if token in ends:
                content, ended = generated[:position], True
                break
        text = self._tokenizer.decode(content, skip_special_tokens=True)
        text, stopped = truncate_at_stop(text, stops)
        finish = "stop" if stopped or ended else "length"
        return ModelResponse(
            text=text,
            finish_reason=finish,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(content) + (1 if ended and not stopped else 0),
            model=self.name,
        )

    async def aclose(self) -> None:
        """Stop the running generation after its current step, wait for it, then drop the model
        and free its memory. Requests after this fail with a ``client`` error."""
        await self._runner.close(self._free)

    def _free(self) -> None:
        self._model = None
        gc.collect()
        if self.device.type == "cuda":
            with contextlib.suppress(RuntimeError):
                self._torch.cuda.empty_cache()


def torch_device(torch: Any, device: str | None, prefix: str) -> Any:
    """The torch device for a backend's ``device`` option (default cpu); a client error if it
    cannot be used."""
    try:
        parsed = torch.device(device or "cpu")
    except (RuntimeError, ValueError) as exc:
        raise BackendError("client", f"{prefix}: bad device {device!r}: {exc}") from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise BackendError("client", f"{prefix}: device {device!r} asked for, but torch sees no CUDA device")
    if parsed.type not in ("cpu", "cuda"):
        raise BackendError("client", f"{prefix}: device must be cpu or cuda, got {device!r}")
    return parsed


def local_model_path(name: str) -> Path | None:
    """The local path ``name`` denotes, or None for a hub id (``org/model``)."""
    path = Path(name).expanduser()
    if name.startswith(("/", ".", "~")) or path.exists():
        return path
    return None


def first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def dtype_keyword() -> str:
    """``dtype`` in transformers ≥ 4.56 (``torch_dtype`` is deprecated there), else ``torch_dtype``."""
    try:
        major, minor = (int(part) for part in version("transformers").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return "dtype"
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
