"""Model backends behind one async interface (see :mod:`verimod.models.base`)."""

from verimod.models.base import (
    BackendError,
    BackendOptions,
    ChatMessage,
    GenerationParams,
    ModelBackend,
    ModelRequest,
    ModelResponse,
    StructuredOutput,
)
from verimod.models.registry import backends, create_backend, split_spec

__all__ = [
    "BackendError",
    "BackendOptions",
    "ChatMessage",
    "GenerationParams",
    "ModelBackend",
    "ModelRequest",
    "ModelResponse",
    "StructuredOutput",
    "backends",
    "create_backend",
    "split_spec",
]
