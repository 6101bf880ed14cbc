"""Backends are chosen by the prefix of a model spec: ``openai:qwen2.5-7b``, ``gguf:/m.gguf``,
``hf:Qwen/Qwen2.5-0.5B-Instruct``, ``hfcls:cardiffnlp/twitter-roberta-base-hate``, ``baseline``,
``scripted:outputs.jsonl``.

A backend module registers its class with ``@backends.register("prefix")``; modules with
optional dependencies are imported only when their prefix is asked for, so the core installs
and runs without torch or llama-cpp-python.
"""

from __future__ import annotations

import importlib
from typing import Final

from verimod.core.registry import Registry, UnknownNameError
from verimod.models.base import BackendOptions, ModelBackend

backends: Registry[type[ModelBackend]] = Registry("model backend")

#: prefix → module that registers it (imported on first use).
BACKEND_MODULES: Final = {
    "openai": "verimod.models.openai_compat",
    "gguf": "verimod.models.gguf",
    "hf": "verimod.models.hf",
    "hfcls": "verimod.models.hf_classifier",
    "baseline": "verimod.models.baseline",
    "scripted": "verimod.models.scripted",
}


def split_spec(spec: str) -> tuple[str, str]:
    """``"openai:qwen"`` → ``("openai", "qwen")``; ``"baseline"`` → ``("baseline", "")``."""
    prefix, _, name = spec.partition(":")
    return prefix.strip(), name.strip()


def create_backend(spec: str, options: BackendOptions | None = None) -> ModelBackend:
    """Instantiate the backend for ``spec``; unknown prefixes raise :class:`UnknownNameError`
    (with a did-you-mean suggestion)."""
    prefix, name = split_spec(spec)
    module = BACKEND_MODULES.get(prefix)
    if module is None:
        probe: Registry[str] = Registry("model backend")
        for known in BACKEND_MODULES:
            probe.register(known)(known)
        probe.get(prefix)  # raises with did-you-mean
    if prefix not in backends:
        importlib.import_module(module)  # type: ignore[arg-type]
        if prefix not in backends:
            raise RuntimeError(f"{module} did not register the {prefix!r} backend")
    return backends.get(prefix)(name, options or BackendOptions())


__all__ = ["BACKEND_MODULES", "UnknownNameError", "backends", "create_backend", "split_spec"]
