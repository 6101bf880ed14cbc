"""``scripted:<file>`` — serves outputs from a JSONL file of ``{"id", "output"}`` lines.

For tests, and for scoring outputs produced by another tool through the same engine and run
store. A line may carry ``"error"`` (a message) instead of ``"output"``: the request then fails
with a final ``model`` error. A request whose sample id has no line fails with a ``client``
error naming the id. Duplicate ids are an input error naming the line.
"""

from __future__ import annotations

from typing import Any

from verimod.core.errors import InputError, shown
from verimod.core.hashing import file_sha256
from verimod.data.jsonl import read_jsonl
from verimod.models.base import BackendError, BackendOptions, ModelBackend, ModelRequest, ModelResponse
from verimod.models.registry import backends


@backends.register("scripted")
class ScriptedBackend(ModelBackend):
    """Answers from a file (see the module docstring)."""

    prefix = "scripted"
    in_process = True
    batch_size = 64

    def __init__(self, name: str, options: BackendOptions) -> None:
        super().__init__(name, options)
        if not name:
            raise InputError.at("--model", None, None, "scripted: needs a file, e.g. scripted:outputs.jsonl")
        self._answers: dict[str, str | BackendError] = {}
        first_line: dict[str, int] = {}
        for line, obj in read_jsonl(name):
            item_id = obj.get("id")
            if isinstance(item_id, int) and not isinstance(item_id, bool):
                item_id = str(item_id)
            if not isinstance(item_id, str) or not item_id:
                raise InputError.at(name, line, "id", "must be a non-empty string")
            if item_id in first_line:
                raise InputError.at(
                    name, line, "id", f"duplicate id {shown(item_id)} (first on line {first_line[item_id]})"
                )
            first_line[item_id] = line
            if isinstance(obj.get("error"), str):
                self._answers[item_id] = BackendError("model", obj["error"])
            elif isinstance(obj.get("output"), str):
                self._answers[item_id] = obj["output"]
            else:
                raise InputError.at(name, line, "output", 'must be a string (or give "error")')
        self._sha256 = file_sha256(name)

    def identity(self) -> dict[str, Any]:
        """The file and its content hash."""
        return {"backend": self.prefix, "model": self.name, "sha256": self._sha256}

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """The scripted output of the request's sample id."""
        answer = self._answers.get(request.sample_id)
        if answer is None:
            raise BackendError("client", f"no scripted output for id {request.sample_id!r}")
        if isinstance(answer, BackendError):
            raise answer
        return ModelResponse(text=answer, finish_reason="stop", model=self.name)
