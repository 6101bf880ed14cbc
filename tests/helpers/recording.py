"""A ``scripted:`` backend that remembers every request it was asked (ids, messages, params)."""

from __future__ import annotations

from pathlib import Path

from verimod.models.base import BackendOptions, ModelRequest, ModelResponse
from verimod.models.scripted import ScriptedBackend


class Recording(ScriptedBackend):
    """The scripted backend of ``path``; ``requests`` lists what it was asked, in order."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path), BackendOptions())
        self.requests: list[ModelRequest] = []

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return await super().generate(request)
