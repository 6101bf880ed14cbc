"""The ``baseline`` model backend: the embedded CPU model behind the common async interface.

Specs:

- ``baseline``: the default model, shipped prebuilt and trained on real data
  (:mod:`verimod.models.baseline.default`); no server, no download;
- ``baseline:DIR``: a model saved by ``verimod train baseline`` or
  :meth:`~verimod.models.baseline.model.BaselineModel.save` (loaded when the backend is
  created, so a bad folder fails at once with :class:`~verimod.core.errors.InputError`).

The backend reads the text under moderation from ``ModelRequest.input_text`` and ignores the
prompt; when ``input_text`` is None it reads the last user message. Generation parameters are
ignored: the model is deterministic and its rationales are short. ``label_probs`` is filled
when the request's candidate ``labels`` are values of one record field (e.g.
``("harmful", "non_harmful")``), with that field's probabilities. Prediction runs in a worker
thread, one batch (``batch_size``, default 256) at a time. Of :class:`BackendOptions` only
``batch_size`` applies; setting any other option raises ``BackendError("client", ...)``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verimod.models._local import check_options
from verimod.models.base import BackendError, BackendOptions, ModelBackend, ModelRequest, ModelResponse
from verimod.models.baseline.default import (
    cached_model_dir,
    default_identity,
    default_model,
    fallback_training_data,
    has_prebuilt,
)
from verimod.models.baseline.leakage import leakage_message
from verimod.models.baseline.model import MODEL_VERSION, BaselineModel, BaselinePrediction
from verimod.models.registry import backends
from verimod.tasks.varm.codebook import DISCRETE_FIELDS, VOCABULARY


def request_text(request: ModelRequest) -> str:
    """The text under moderation: ``input_text``, else the last user message, else ``""``."""
    if request.input_text is not None:
        return request.input_text
    for message in reversed(request.messages):
        if message.role == "user":
            return message.content
    return ""


def _label_probs(prediction: BaselinePrediction, labels: tuple[str, ...] | None) -> dict[str, float] | None:
    if not labels:
        return None
    for field in DISCRETE_FIELDS:
        if set(labels) <= set(VOCABULARY[field]):
            return {label: prediction.probabilities[field][label] for label in labels}
    return None


@backends.register("baseline")
class BaselineBackend(ModelBackend):
    """The embedded baseline model (see the module docstring)."""

    prefix = "baseline"
    kind = "generative"
    batch_size = 256
    max_concurrency = 1

    def __init__(self, name: str, options: BackendOptions) -> None:
        super().__init__(name, options)
        check_options(options, self.prefix, ("batch_size",))
        if options.batch_size is not None:
            self.batch_size = options.batch_size
        self._lock = threading.Lock()
        self._model: BaselineModel | None = None
        self._identity: dict[str, Any]
        if name:
            self._model = BaselineModel.load(Path(name))
            self._identity = self._model_identity(self._model)
        else:
            self._identity = {"backend": self.prefix, "model": "default", "model_version": MODEL_VERSION}
            self._identity.update(default_identity())

    def _model_identity(self, model: BaselineModel) -> dict[str, Any]:
        return {
            "backend": self.prefix,
            "model": self.name,
            "model_version": MODEL_VERSION,
            "data_sha256": model.data_sha256,
            "fingerprint": model.fingerprint,
        }

    def identity(self) -> dict[str, Any]:
        """Backend, model name, model version and training-data sha256 (plus the model files'
        fingerprint, or the cache key of the starter-trained fallback)."""
        return dict(self._identity)

    @property
    def needs_training(self) -> bool:
        """True when :meth:`model` would train now: the default model, with no shipped model
        files and no cached starter-trained fallback yet."""
        return (
            self._model is None
            and not self.name
            and not has_prebuilt()
            and not cached_model_dir(fallback_training_data()).is_dir()
        )

    @property
    def model_cache_folder(self) -> Path | None:
        """Where the model :meth:`model` would train is cached (None when nothing would train)."""
        return cached_model_dir(fallback_training_data()) if self.needs_training else None

    def model(self) -> BaselineModel:
        """The model, loading or training the default one on first use (thread-safe)."""
        with self._lock:
            if self._model is None:
                self._model = default_model()
            return self._model

    def leakage_warning(self, ids: Sequence[str], texts: Sequence[str]) -> str | None:
        """A one-line warning when ``texts`` near-duplicate the model's training texts, else
        None (:func:`~verimod.models.baseline.leakage.leakage_message`)."""
        return leakage_message(self.model().leakage, ids, texts)

    def _predict(self, texts: list[str]) -> list[BaselinePrediction]:
        return self.model().predict(texts)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Answer one request (see :meth:`generate_batch`)."""
        result = (await self.generate_batch([request]))[0]
        if isinstance(result, BackendError):
            raise result
        return result

    async def generate_batch(self, requests: Sequence[ModelRequest]) -> list[ModelResponse | BackendError]:
        """Predict every request's text in one worker-thread call; a failure of the model fails
        the batch's requests with a non-retryable ``model`` error."""
        texts = [request_text(r) for r in requests]
        try:
            predictions = await asyncio.to_thread(self._predict, texts)
        except Exception as exc:  # reported on every sample of the batch, never raised
            error = BackendError("model", f"baseline model failed: {type(exc).__name__}: {exc}")
            return [error for _ in requests]
        name = f"baseline/{self._identity['data_sha256'][:12]}"
        return [
            ModelResponse(text=p.rationale, label_probs=_label_probs(p, r.labels), finish_reason="stop", model=name)
            for r, p in zip(requests, predictions, strict=True)
        ]
