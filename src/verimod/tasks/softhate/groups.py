"""Target-group taxonomy of SoftHateBench: target phrases → groups (Level-1 domain, Level-2 group).

Level 1 follows UK equality guidance and Level 2 US census definitions (the paper); the
bundled mapping ``resources/softhate/groups.json`` is verimod's.

**Resolution** (:meth:`GroupTaxonomy.resolve`): key(p) = p after NFKC, case folding,
whitespace runs collapsed to one space and stripping, with one leading ``the `` removed; a
phrase resolves to the group whose name or alias has the same key (exact, no fuzzy match),
else to None.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from verimod.core.errors import InputError, did_you_mean, shown
from verimod.resources import resource_path
from verimod.tasks.softhate.schema import Level1Domain, TargetGroup
from verimod.tasks.softhate.scoring import normalise_text

GROUPS_RESOURCE: Final = "softhate/groups.json"


def _key(phrase: str) -> str:
    key = normalise_text(phrase)
    return key[4:] if key.startswith("the ") else key


def slug(text: str) -> str:
    """NFKC, case-folded, runs of characters other than letters, digits and ``_`` as ``-``."""
    return re.sub(r"\W+", "-", unicodedata.normalize("NFKC", text).casefold()).strip("-")


def _index(groups: Sequence[TargetGroup]) -> tuple[dict[str, int], list[tuple[int, int, str]]]:
    """Key → group position, and the clashes ``(group, form position, message)`` where form
    position 0 is the name and k ≥ 1 is alias k − 1."""
    index: dict[str, int] = {}
    clashes: list[tuple[int, int, str]] = []
    slugs: dict[str, int] = {}
    for g, group in enumerate(groups):
        level2_slug = slug(group.level2)
        if not level2_slug or level2_slug in slugs:
            other = f" (as {groups[slugs[level2_slug]].level2!r})" if level2_slug in slugs else ""
            clashes.append((g, -1, f"level2 {group.level2!r} gives the standpoint id 'sp-{level2_slug}'{other}"))
        slugs.setdefault(level2_slug, g)
        for k, form in enumerate((group.name, *group.aliases)):
            key = _key(form)
            if not key:
                clashes.append((g, k, "empty name"))
            elif key in index:
                owner = groups[index[key]].name
                where = "this group" if index[key] == g else f"group {owner!r}"
                clashes.append((g, k, f"{form!r} already names {where}"))
            else:
                index[key] = g
    return index, clashes


@dataclass(frozen=True)
class GroupTaxonomy:
    """Target groups with their names and aliases; :meth:`resolve` maps a phrase to one."""

    groups: tuple[TargetGroup, ...]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        groups = tuple(self.groups)
        index, clashes = _index(groups)
        if clashes:
            g, _, message = clashes[0]
            raise ValueError(f"group {groups[g].name!r}: {message}")
        object.__setattr__(self, "groups", groups)
        object.__setattr__(self, "_index", index)

    def resolve(self, phrase: str | None) -> TargetGroup | None:
        """The group whose name or an alias matches ``phrase`` (module docstring), else None."""
        if phrase is None:
            return None
        position = self._index.get(_key(phrase))
        return None if position is None else self.groups[position]


def _group(path: str, where: str, entry: object) -> TargetGroup:
    if not isinstance(entry, dict):
        raise InputError.at(path, None, where, f"expected an object, got {shown(entry)}")
    allowed = ("name", "level1", "level2", "aliases")
    for name in entry:
        if name not in allowed:
            raise InputError.at(path, None, f"{where}.{name}", f"unknown field{did_you_mean(str(name), allowed)}")
    for name in ("name", "level2"):
        if not isinstance(entry.get(name), str) or not entry[name].strip():
            raise InputError.at(path, None, f"{where}.{name}", "must be a non-empty string")
    level1 = entry.get("level1")
    domains = [d.value for d in Level1Domain]
    if level1 not in domains:
        hint = did_you_mean(str(level1), domains)
        raise InputError.at(path, None, f"{where}.level1", f"{shown(level1)} is not one of {', '.join(domains)}{hint}")
    aliases = entry.get("aliases", [])
    if not isinstance(aliases, list):
        raise InputError.at(path, None, f"{where}.aliases", f"expected a list of strings, got {shown(aliases)}")
    for k, alias in enumerate(aliases):
        if not isinstance(alias, str) or not alias.strip():
            raise InputError.at(path, None, f"{where}.aliases[{k}]", "must be a non-empty string")
    return TargetGroup(name=entry["name"], level1=Level1Domain(level1), level2=entry["level2"], aliases=tuple(aliases))


def load_group_taxonomy(path: str | Path | None = None) -> GroupTaxonomy:
    """Read a taxonomy file (default: the bundled ``resources/softhate/groups.json``).

    The file is a JSON object: ``groups`` — a list of ``{"name", "level1", "level2",
    "aliases"}`` (``level1`` one of :class:`~verimod.tasks.softhate.schema.Level1Domain`);
    optional ``_note`` and ``version`` (strings) and ``unmapped`` (target name → reason: names
    deliberately left out, which must not resolve). Every name and alias key (module docstring)
    must be unique across the file, and so must the standpoint ids of the ``level2`` values.
    Problems raise a one-line :class:`~verimod.core.errors.InputError` naming the file and
    the JSON path (``groups[3].aliases[2]``).
    """
    name = str(path) if path is not None else str(resource_path(GROUPS_RESOURCE))
    try:
        text = Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError.at(name, None, None, f"cannot read the file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError.at(name, None, None, "not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError.at(name, exc.lineno, None, f"invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise InputError.at(name, None, None, f"expected a JSON object, got {type(data).__name__}")
    top = ("_note", "version", "groups", "unmapped")
    for key in data:
        if key not in top:
            raise InputError.at(name, None, str(key), f"unknown field{did_you_mean(str(key), top)}")
    for key in ("_note", "version"):
        if key in data and not isinstance(data[key], str):
            raise InputError.at(name, None, key, f"expected a string, got {shown(data[key])}")
    entries = data.get("groups")
    if not isinstance(entries, list) or not entries:
        raise InputError.at(
            name, None, "groups", "missing field" if entries is None else "expected a non-empty list of groups"
        )
    groups = [_group(name, f"groups[{g}]", entry) for g, entry in enumerate(entries)]
    index, clashes = _index(groups)
    if clashes:
        g, k, message = clashes[0]
        where = f"groups[{g}]." + ("level2" if k < 0 else "name" if k == 0 else f"aliases[{k - 1}]")
        raise InputError.at(name, None, where, message)
    unmapped = data.get("unmapped", {})
    if not isinstance(unmapped, dict):
        raise InputError.at(name, None, "unmapped", f"expected an object of name → reason, got {shown(unmapped)}")
    for key, reason in unmapped.items():
        if not isinstance(reason, str) or not reason.strip():
            raise InputError.at(name, None, f"unmapped.{key}", "the reason must be a non-empty string")
        if _key(key) in index:
            raise InputError.at(name, None, f"unmapped.{key}", f"also names group {groups[index[_key(key)]].name!r}")
    return GroupTaxonomy(tuple(groups))
