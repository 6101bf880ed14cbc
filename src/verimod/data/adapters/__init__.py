"""Adapters that turn public data sets into (partial) VARM references.

>>> from verimod.data.adapters import adapters, convert
>>> adapters.names()  # doctest: +NORMALIZE_WHITESPACE
['cold', 'generic', 'hatecheck', 'jade', 'mhc', 'safetybench-zh', 'sghatecheck', 'state-toxicn',
 'swsr', 'toxicn', 'varm-bench']

``convert(name, path, **options)`` runs one adapter and returns a :class:`ConversionResult`:
the references, exact counts (rows read, records converted, records skipped by reason) and
the notes of the mapping. Every adapter takes ``encoding`` (default ``"auto"``: UTF-8, UTF-16
or GB18030 by detection) and ``on_error`` (``"fail"``: the first malformed or invalid row raises
:class:`~verimod.core.errors.InputError` naming file, line and field; ``"skip"``: it is counted
and kept in ``problems``). Each adapter's own options are listed by :func:`adapter_options`;
the mappings are documented in ``MAPPINGS.md`` beside this file.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from verimod.core.errors import InputError, did_you_mean
from verimod.data.adapters import (
    cold,
    generic,
    hatecheck,
    jade,
    mhc,
    safetybench,
    sghatecheck,
    state_toxicn,
    swsr,
    toxicn,
)
from verimod.data.adapters.base import Adapter, ConversionResult, adapters
from verimod.data.adapters.generic import ColumnMap, parse_column_map

__all__ = [
    "Adapter",
    "ColumnMap",
    "ConversionResult",
    "adapter_options",
    "adapters",
    "cold",
    "convert",
    "describe",
    "generic",
    "hatecheck",
    "jade",
    "mhc",
    "parse_column_map",
    "safetybench",
    "sghatecheck",
    "state_toxicn",
    "swsr",
    "toxicn",
]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def adapter_options(name: str) -> dict[str, Any]:
    """``{option: default}`` of an adapter's keyword options (``inspect.Parameter.empty`` when required)."""
    signature = inspect.signature(adapters.get(name))
    return {p.name: p.default for p in signature.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}


def describe(name: str) -> str:
    """The first line of an adapter's docstring (for ``--help`` listings)."""
    doc = inspect.getdoc(adapters.get(name)) or ""
    return doc.splitlines()[0] if doc else ""


def convert(name: str, path: str | Path, **options: Any) -> ConversionResult:
    """Convert ``path`` with the adapter registered as ``name``.

    Unknown adapter names raise :class:`~verimod.core.registry.UnknownNameError` (did-you-mean);
    unknown options raise :class:`InputError`. Options given as strings (from a command line)
    are coerced when the default is a boolean (``true/false/yes/no/1/0``).
    """
    adapter = adapters.get(name)
    return adapter(path, **_coerce(name, options))


def _coerce(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    known = adapter_options(name)
    coerced: dict[str, Any] = {}
    for key, value in options.items():
        if key not in known:
            hint = did_you_mean(key, known)
            raise InputError.at(
                f"--from {name}", None, key, f"unknown option{hint}; options: {', '.join(sorted(known))}"
            )
        if isinstance(known[key], bool) and isinstance(value, str):
            word = value.strip().lower()
            if word not in _TRUE | _FALSE:
                raise InputError.at(f"--from {name}", None, key, f"expected true or false, got {value!r}")
            value = word in _TRUE
        coerced[key] = value
    return coerced
