"""A bound on the requests in flight on one backend, shared by every caller.

Each engine call (:func:`verimod.core.engine.run_requests`) limits only its own requests; the
SoftHateBench commands make many calls at once (one per candidate, per scorer, per search), so
the models they share are wrapped in :class:`BoundedBackend`: at most ``limit`` requests (or
batches) in flight in all, whatever the number of concurrent searches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from verimod.models.base import BackendError, ModelBackend, ModelRequest, ModelResponse


class BoundedBackend(ModelBackend):
    """``inner`` with at most ``limit`` requests in flight across all its callers (module
    docstring); same spec, identity (cache keys) and batching."""

    def __init__(self, inner: ModelBackend, limit: int) -> None:
        super().__init__(inner.name, inner.options)
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        self.inner = inner
        self.prefix = inner.prefix  # type: ignore[misc]
        self.kind = inner.kind  # type: ignore[misc]
        self.batch_size = inner.batch_size
        self.max_concurrency = inner.max_concurrency
        self._slots = asyncio.Semaphore(limit)

    def __getattr__(self, name: str) -> Any:  # the inner backend's own attributes (a gguf path …)
        return getattr(self.inner, name)

    def identity(self) -> dict[str, Any]:
        """The inner backend's identity."""
        return self.inner.identity()

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """The inner answer, once a slot is free."""
        async with self._slots:
            return await self.inner.generate(request)

    async def generate_batch(self, requests: Sequence[ModelRequest]) -> list[ModelResponse | BackendError]:
        """The inner batch answer, once a slot is free (a batch takes one slot)."""
        async with self._slots:
            return await self.inner.generate_batch(requests)

    async def aclose(self) -> None:
        """Close the inner backend."""
        await self.inner.aclose()
