"""``--model verimod-scripted/NAME -M outputs=FILE``: an inspect model that answers from a
``{"id", "output"}`` JSONL file, as verimod's ``scripted:`` backend does.

For outputs made elsewhere, and for tests that must not reach any server. Each VARM sample's
user message carries its id (``metadata["verimod_id"]``, set by
:mod:`verimod.integrations.inspect_ai.tasks`); the answer is that id's line. A line with
``"error"`` instead of ``"output"`` makes the request fail with that message (the sample ends in
an error); an id without a line fails likewise. The file is read with verimod's scripted
backend, so its rules (duplicate ids, types) and one-line errors are the same. Token usage is
not reported: nothing was generated.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from verimod.integrations.inspect_ai.tasks import ID_KEY
from verimod.models.base import BackendError, BackendOptions, ModelRequest
from verimod.models.scripted import ScriptedBackend


class ScriptedOutputError(RuntimeError):
    """A scripted line asked for an error, or the sample has no line."""


@modelapi(name="verimod-scripted")
class ScriptedModel(ModelAPI):
    """Answers VARM samples from a ``{"id", "output"}`` JSONL file (``-M outputs=FILE``)."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 - inspect's own signature
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        outputs = model_args.get("outputs")
        if not isinstance(outputs, str) or not outputs:
            raise ValueError("verimod-scripted needs its answers: -M outputs=FILE (a {id, output} JSONL file)")
        self._backend = ScriptedBackend(outputs, BackendOptions())

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """The scripted answer of the sample whose id the last user message carries."""
        sample_id = next(
            (m.metadata[ID_KEY] for m in reversed(input) if m.role == "user" and m.metadata and ID_KEY in m.metadata),
            None,
        )
        if not isinstance(sample_id, str):
            raise ScriptedOutputError(f"no user message carries metadata[{ID_KEY!r}]: not a verimod VARM sample")
        request = ModelRequest(sample_id=sample_id, messages=())
        try:
            response = await self._backend.generate(request)
        except BackendError as exc:
            raise ScriptedOutputError(str(exc)) from None
        return ModelOutput.from_content(model=self.model_name, content=response.text or "")

    def should_retry(self, ex: BaseException) -> bool:
        """A scripted answer never changes: nothing is retried."""
        return False
