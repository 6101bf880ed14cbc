"""Value aliases for lenient anchor parsing, loaded from ``resources/varm_aliases.json``.

:func:`alias_key` is the normalisation applied to a raw anchor value before lookup:
Unicode NFKC, case folding, trimming, and every run of whitespace, hyphens or slashes
replaced by one underscore (``"Non-Harmful"`` → ``"non_harmful"``,
``"status / occupation"`` → ``"status_occupation"``).

:func:`canonical_value` maps a raw value of one field to its canonical value, or None when the
value is not admissible. The target field is free text: only the ``no_clear_target`` aliases
apply to it, and any other non-blank text is returned trimmed.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache, lru_cache
from typing import Final

from verimod.resources import resource_path
from verimod.tasks.varm.codebook import NO_CLEAR_TARGET, VOCABULARY

ALIAS_RESOURCE: Final = "varm_aliases.json"
_SEPARATORS = re.compile(r"[\s\-/_]+")


def alias_key(raw: str) -> str:
    """Normalised lookup key of a raw value (see the module docstring)."""
    folded = unicodedata.normalize("NFKC", raw).casefold().strip()
    return _SEPARATORS.sub("_", folded).strip("_")


@cache
def alias_table() -> dict[str, dict[str, str]]:
    """``{field: {alias_key: canonical value}}`` for the five discrete fields and ``target``.

    Canonical values map to themselves. Raises ``ValueError`` if the resource maps one key of a
    field to two different values (a broken table is a bug, not a user error).
    """
    data = json.loads(resource_path(ALIAS_RESOURCE).read_text(encoding="utf-8"))
    table: dict[str, dict[str, str]] = {"target": {}}
    for field, values in VOCABULARY.items():
        table[field] = {alias_key(v): v for v in values}
        for canonical, aliases in data.get(field, {}).items():
            if canonical not in values:
                raise ValueError(f"{ALIAS_RESOURCE}: {field}: {canonical!r} is not a canonical value")
            for alias in aliases:
                _add(table[field], alias_key(alias), canonical, field)
    for field in ("target", "target_type", "target_explicitness"):
        for alias in data["no_clear_target"]:
            _add(table[field], alias_key(alias), NO_CLEAR_TARGET, field)
    return table


def _add(mapping: dict[str, str], key: str, canonical: str, field: str) -> None:
    if mapping.get(key, canonical) != canonical:
        raise ValueError(f"{ALIAS_RESOURCE}: {field}: {key!r} maps to both {mapping[key]!r} and {canonical!r}")
    mapping[key] = canonical


def canonical_value(field: str, raw: str) -> str | None:
    """Canonical value of ``raw`` for ``field``, or None if it is not admissible.

    A written value that is exactly canonical (``" harmful"``) is answered from a dictionary;
    anything else goes through :func:`alias_key` (cached).
    """
    fast = _EXACT.get(field)
    if fast is not None:
        hit = fast.get(raw)
        if hit is not None:
            return hit
    return _canonical_value_slow(field, raw)


_EXACT: Final = {field: {f" {v}": v for v in values} for field, values in VOCABULARY.items()}


@lru_cache(maxsize=65536)
def _canonical_value_slow(field: str, raw: str) -> str | None:
    stripped = raw.strip()
    if not stripped:
        return None
    key = alias_key(stripped)
    if field == "target":
        return alias_table()["target"].get(key, stripped)
    return alias_table()[field].get(key)
