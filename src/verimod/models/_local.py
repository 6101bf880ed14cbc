"""Helpers shared by the in-process backends (``gguf``, ``hf``).

Contracts:

* :func:`require_module` imports an optional dependency or raises a one-line
  :class:`BackendError` (kind ``client``) naming the extra to install;
* :func:`check_options` rejects the :class:`BackendOptions` a backend cannot honour;
* :func:`check_extra_body` accepts only whitelisted sampler keys in ``extra_body``;
* :class:`SerialRunner` runs blocking model calls in a worker thread, one at a time, stops
  them cooperatively (:meth:`SerialRunner.checkpoint`) and closes only after the running one;
* :func:`truncate_at_stop` cuts a text at the earliest stop string;
* :func:`sha256_tree` hashes the files of a folder in chunks (one file: :func:`verimod.core.hashing.file_sha256`).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from verimod.core.errors import install_hint
from verimod.models.base import BackendError, BackendOptions, ChatMessage

T = TypeVar("T")

_CHUNK = 1 << 20


def require_module(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise ``BackendError("client", ...)`` saying which extra to install.

    ``purpose`` names what needs it, e.g. ``"the gguf backend"``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise BackendError(
            "client",
            f"{purpose} needs the Python package {module!r}, which is not installed "
            f"({exc}); install the {extra!r} extra: {install_hint(extra)}",
        ) from None


def check_options(options: BackendOptions, prefix: str, supported: Iterable[str]) -> None:
    """Raise ``BackendError("client", ...)`` if an option outside ``supported`` differs from its
    default. ``request_timeout_s`` is always accepted (and ignored by in-process backends)."""
    allowed = {*supported, "request_timeout_s"}
    unused = [
        name
        for name, field in BackendOptions.model_fields.items()
        if name not in allowed and getattr(options, name) != field.get_default(call_default_factory=True)
    ]
    if unused:
        raise BackendError("client", f"the {prefix} backend does not use the option(s) {', '.join(unused)}")


def check_extra_body(extra_body: Mapping[str, Any], prefix: str, allowed: Iterable[str]) -> dict[str, Any]:
    """Return ``extra_body`` as a dict if every key is in ``allowed``; otherwise raise a client
    error naming the unknown keys and the accepted ones."""
    known = set(allowed)
    unknown = sorted(set(extra_body) - known)
    if unknown:
        raise BackendError(
            "client",
            f"the {prefix} backend does not understand extra_body key(s) {', '.join(unknown)}; "
            f"accepted: {', '.join(sorted(known)) or 'none'}",
        )
    return dict(extra_body)


def package_version(distribution: str) -> str:
    """The installed version of ``distribution`` (for identities), or ``"unknown"``."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"


def chat_dicts(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    """Chat messages as the ``[{"role": ..., "content": ...}]`` lists that chat templates take."""
    return [{"role": m.role, "content": m.content} for m in messages]


def truncate_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` before the earliest occurrence of any non-empty stop string.

    Returns ``(text, True)`` when a stop string was found, ``(text, False)`` otherwise.

    >>> truncate_at_stop("a\\nb END c", ["END", "\\n"])
    ('a', True)
    """
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def sha256_tree(folder: Path) -> str:
    """Hex SHA-256 over the regular files directly in ``folder`` (sorted by name; each file's
    name, size and content enter the hash). Sub-folders are ignored."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        digest.update(f"{path.name}\0{path.stat().st_size}\0".encode())
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


class GenerationStopped(BackendError):
    """Raised inside a blocking model call at a :meth:`SerialRunner.checkpoint` once the call's
    caller has given up (its task was cancelled) or the backend is closing (kind ``client``:
    never retried)."""

    def __init__(self, message: str) -> None:
        super().__init__("client", message)


class SerialRunner:
    """Runs blocking model calls in a worker thread, one at a time, and stops them cooperatively.

    * One at a time: one in-process model instance is not thread-safe; the engine already
      keeps at most one batch in flight (``max_concurrency = 1``), and this lock also
      serialises callers that bypass the engine (``asyncio.gather`` over ``generate``). A
      :class:`threading.Lock` (not an asyncio one) works from any event loop.
    * Cooperative stop: a running call cannot be interrupted from outside, so the blocking
      function calls :meth:`checkpoint` at safe points (between decoding steps); it raises
      :class:`GenerationStopped` when the awaiting task was cancelled or :meth:`close` began.
    * :meth:`close` stops the running call at its next checkpoint, waits until it has returned,
      and only then runs ``release`` (which frees the model) under the lock; calls made after
      it fail with a ``client`` error. The model is never freed while a call is using it.
    """

    def __init__(self, name: str = "model") -> None:
        self.name = name  # begins error messages
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._stop: threading.Event | None = None  # the running call's stop flag

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has begun."""
        return self._closing.is_set()

    def checkpoint(self) -> None:
        """Raise :class:`GenerationStopped` if the running call should stop (called from it)."""
        if self._closing.is_set():
            raise GenerationStopped(f"{self.name}: generation stopped: the backend was closed")
        stop = self._stop
        if stop is not None and stop.is_set():
            raise GenerationStopped(f"{self.name}: generation stopped: its caller gave up")

    def _locked(self, function: Callable[[], T], stop: threading.Event) -> T:
        with self._lock:
            if self._closing.is_set():
                raise BackendError("client", f"{self.name}: the backend is closed")
            self._stop = stop
            try:
                return function()
            finally:
                self._stop = None

    async def run(self, function: Callable[[], T]) -> T:
        """Run ``function()`` in a worker thread under the lock and return its result. If the
        awaiting task is cancelled, the call is asked to stop at its next checkpoint."""
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._locked, function, stop)
        except asyncio.CancelledError:
            stop.set()
            raise

    def _release_locked(self, release: Callable[[], None]) -> None:
        with self._lock:
            release()

    async def close(self, release: Callable[[], None]) -> None:
        """Stop the running call (if any), wait for it, then run ``release()`` under the lock.

        ``release`` runs in the worker thread once the lock is free, so it never overlaps a
        model call even if this coroutine is itself cancelled while waiting.
        """
        self._closing.set()
        await asyncio.to_thread(self._release_locked, release)
