"""``hfcls:<path-or-hub-id>`` — a Hugging Face sequence classifier run in-process: hate
classifiers (Twitter-RoBERTa-hate, HateXplain-BERT), NLI cross-encoders, any
``AutoModelForSequenceClassification`` checkpoint.

Install with ``pip install ".[hf]"`` after a torch build that suits the machine. Loading
follows the ``hf:`` backend: an existing local folder (or a name starting with ``/``, ``.`` or
``~``) is loaded offline, anything else as a hub id (honouring ``HF_HUB_OFFLINE``).

**Input.** A classifier reads the text itself, not a chat prompt: the request's
``input_pair`` (two segments, e.g. NLI premise and hypothesis, encoded as the tokenizer's text
pair) when set, else its ``input_text`` (the text under moderation). A request with neither is
a client error. The encoded input is truncated to the model's maximum length
(``tokenizer.model_max_length``, else 512, capped at the model's position embeddings); a pair
loses tokens from its longer segment first (``truncation="longest_first"``).

**Output.** ``label_probs`` over the model's own labels (``config.id2label``): the softmax of
the logits, or for a multi-label model (``problem_type == "multi_label_classification"``) the
sigmoid of each logit, independently. ``text`` is the most probable label, ``finish_reason``
``"stop"``. The request's ``labels`` are not used to rename anything: callers map the model's
labels (``--positive hate`` for a hate classifier; NLI labels by their usual names).

Requests are answered in batches (``batch_size``, default 16, right padding); a row's
probabilities do not depend on its batch (up to float rounding). Options: ``device``,
``batch_size``, ``threads``; others are refused.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Sequence
from typing import Any

from verimod.models._local import SerialRunner, check_options, package_version, require_module
from verimod.models.base import BackendError, BackendOptions, ModelBackend, ModelRequest, ModelResponse
from verimod.models.hf import dtype_keyword, first_line, local_model_path, torch_device
from verimod.models.registry import backends

DEFAULT_BATCH_SIZE = 16
#: Input length when neither the tokenizer nor the model config gives one.
FALLBACK_MAX_LENGTH = 512


@backends.register("hfcls")
class HfClassifierBackend(ModelBackend):
    """A transformers sequence classifier in this process (see the module docstring)."""

    prefix = "hfcls"
    in_process = True
    kind = "classifier"
    max_concurrency = 1

    def __init__(self, name: str, options: BackendOptions) -> None:
        super().__init__(name, options)
        check_options(options, self.prefix, {"device", "batch_size", "threads"})
        if not name:
            raise BackendError("client", "the hfcls backend needs a model folder or hub id: hfcls:org/classifier")
        self.batch_size = options.batch_size or DEFAULT_BATCH_SIZE
        self.local_path = local_model_path(name)
        if self.local_path is not None and not self.local_path.is_dir():
            raise BackendError("client", f"hfcls: model folder not found: {self.local_path}")
        self._torch: Any = require_module("torch", "hf", "the hfcls backend")
        self._transformers: Any = require_module("transformers", "hf", "the hfcls backend")
        self.device = torch_device(self._torch, options.device, self.prefix)
        self.dtype = self._torch.bfloat16 if self.device.type == "cuda" else self._torch.float32
        if options.threads is not None:
            self._torch.set_num_threads(options.threads)
        self._runner = SerialRunner(self.prefix)
        self._tokenizer, self._model = self._load()
        config = self._model.config
        self.labels: tuple[str, ...] = tuple(str(config.id2label[i]) for i in range(config.num_labels))
        self.multi_label = getattr(config, "problem_type", None) == "multi_label_classification"
        self.max_length = _max_length(self._tokenizer, config)

    def _load(self) -> tuple[Any, Any]:
        """Tokenizer and classifier, in eval mode on the device; a pad token for decoder models."""
        transformers = self._transformers
        kwargs: dict[str, Any] = {"local_files_only": True} if self.local_path is not None else {}
        source = str(self.local_path) if self.local_path is not None else self.name
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(source, **kwargs)
            model = transformers.AutoModelForSequenceClassification.from_pretrained(
                source, **kwargs, **{dtype_keyword(): self.dtype}
            )
        except (OSError, ValueError, ImportError) as exc:
            raise BackendError("client", f"hfcls: cannot load classifier {self.name!r}: {first_line(exc)}") from None
        tokenizer.padding_side = "right"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        if tokenizer.pad_token_id is None:
            raise BackendError("client", f"hfcls: the tokenizer of {self.name!r} has neither a pad nor an EOS token")
        if model.config.pad_token_id is None:
            model.config.pad_token_id = tokenizer.pad_token_id
        model.to(self.device)
        model.eval()
        return tokenizer, model

    def identity(self) -> dict[str, Any]:
        """Backend, model (absolute local path, or hub id), labels, dtype, device type and the
        transformers/torch versions."""
        return {
            "backend": self.prefix,
            "model": str(self.local_path.resolve()) if self.local_path is not None else self.name,
            "labels": list(self.labels),
            "dtype": str(self.dtype).removeprefix("torch."),
            "device": self.device.type,
            "runtime": f"transformers {package_version('transformers')}, torch {package_version('torch')}",
        }

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Classify one request (a batch of one)."""
        return await self.generate_via_batch(request)

    async def generate_batch(self, requests: Sequence[ModelRequest]) -> list[ModelResponse | BackendError]:
        """Classify several requests in one forward pass; a request without input gets a client
        error and does not stop the others."""
        results: list[ModelResponse | BackendError | None] = [None] * len(requests)
        inputs: list[tuple[int, str | tuple[str, str]]] = []
        for index, request in enumerate(requests):
            if request.input_pair is not None:
                inputs.append((index, request.input_pair))
            elif request.input_text is not None:
                inputs.append((index, request.input_text))
            else:
                message = "hfcls: the request carries no input_text or input_pair (a classifier reads the text)"
                results[index] = BackendError("client", message)
        if inputs:
            try:
                responses = await self._runner.run(functools.partial(self._classify, [x for _, x in inputs]))
            except BackendError as exc:
                responses = [exc] * len(inputs)
            for (index, _), response in zip(inputs, responses, strict=True):
                results[index] = response
        return [r if r is not None else BackendError("model", "hfcls: no result") for r in results]

    def _classify(self, inputs: Sequence[str | tuple[str, str]]) -> list[ModelResponse | BackendError]:
        """The blocking part: tokenize (pairs and single texts apart), one forward pass each."""
        if self._model is None:
            raise BackendError("client", "hfcls: the backend is closed")
        results: list[ModelResponse | BackendError | None] = [None] * len(inputs)
        pairs = [i for i, x in enumerate(inputs) if isinstance(x, tuple)]
        singles = [i for i, x in enumerate(inputs) if not isinstance(x, tuple)]
        for indices in (pairs, singles):
            if not indices:
                continue
            chosen = [inputs[i] for i in indices]
            try:
                probs = self._probabilities(chosen)
            except (RuntimeError, ValueError, TypeError, IndexError) as exc:
                error = BackendError("model", f"hfcls: {type(exc).__name__}: {first_line(exc)}")
                for i in indices:
                    results[i] = error
                continue
            for i, row in zip(indices, probs, strict=True):
                label_probs = dict(zip(self.labels, row, strict=True))
                best = max(label_probs, key=lambda label: label_probs[label])
                results[i] = ModelResponse(text=best, label_probs=label_probs, finish_reason="stop", model=self.name)
        return [r if r is not None else BackendError("model", "hfcls: no result") for r in results]

    def _probabilities(self, inputs: Sequence[str | tuple[str, str]]) -> list[list[float]]:
        torch = self._torch
        if isinstance(inputs[0], tuple):
            first = [x[0] for x in inputs]
            second = [x[1] for x in inputs]
            encoded = self._tokenizer(first, second, padding=True, truncation="longest_first",
                                      max_length=self.max_length, return_tensors="pt")  # fmt: skip
        else:
            encoded = self._tokenizer(list(inputs), padding=True, truncation=True, max_length=self.max_length,
                                      return_tensors="pt")  # fmt: skip
        with torch.inference_mode():
            logits = self._model(**encoded.to(self.device)).logits.float()
        probs = torch.sigmoid(logits) if self.multi_label else torch.softmax(logits, dim=-1)
        return [[float(v) for v in row] for row in probs.cpu().tolist()]

    async def aclose(self) -> None:
        """Wait for the running batch, then drop the model and free its memory."""
        await self._runner.close(self._free)

    def _free(self) -> None:
        self._model = None
        gc.collect()


def _max_length(tokenizer: Any, config: Any) -> int:
    """The input length limit: the tokenizer's (else 512), capped by the model's position
    embeddings."""
    own = getattr(tokenizer, "model_max_length", None)
    limit = own if isinstance(own, int) and 0 < own < 1_000_000 else FALLBACK_MAX_LENGTH
    positions = getattr(config, "max_position_embeddings", None)
    return min(limit, positions) if isinstance(positions, int) and positions > 0 else limit
