"""Target-group taxonomy of SoftHateBench: target phrases → groups (Level-1 domain, Level-2 group).

Level 1 follows UK equality guidance and Level 2 US census definitions (the paper); the
bundled mappings are verimod's: ``resources/softhate/groups.json`` (English-language data
sets) and ``resources/softhate/groups_zh.json`` (Chinese: regional groups — provinces, the
Northeast, north/south, non-locals, rural origin —, ethnicity and nationality, gender, sexual
orientation and gender identity, religion, disability, occupation, class and ideology).

**Resolution** (:meth:`GroupTaxonomy.match`), first rule that finds a group wins:

1. ``exact`` — key(p) = p after NFKC, case folding, whitespace runs collapsed to one space and
   stripping, with one leading ``the`` removed, equals the key of a group's name, alias or
   display name;
2. ``rewrite`` — the key after removing quantifiers and demonstratives in front (这些, 那些,
   一些, 部分, 所有, 很多 …; ``all``, ``some``, ``these`` …) and collective suffixes (们,
   群体, 人群, 同胞; ``people``, ``persons``), then that core + ``people``, that core + 人
   (日本 → 日本人), and ``X省``, ``X省人``, ``X省的人``, ``X地区的人``, ``X的人`` rewritten to
   ``X人``, equals a key;
3. ``demonym`` — a Chinese phrase ending in a regional demonym suffix (佬, 仔, 籍, 籍人士,
   人士, 老乡, 土著, 银) whose stem + ``人`` (after rule 2) is a key: 河南佬 → 河南人;
   ``compound`` — a place or nation followed by a gendered or age noun (女人, 男人, 女生, 姑娘,
   小伙, 大妈 …) whose stem + ``人`` is a key resolves to that place's group: 河南女人 → 河南人
   (the marked attribute of such a phrase is its origin; the plain gendered nouns and
   national compounds that mean a gender, 中国女性 or 国男, are aliases of the gender groups);
4. ``fuzzy`` — :func:`rapidfuzz.fuzz.ratio` of the rewritten key against every key reaches
   ``fuzzy_cutoff`` (default 85; None turns the rule off), or at least 90 for a phrase with a
   Han character (Chinese group names are short: one added character to a three-character
   name scores 85.7, as 中国女人 against 中国人 would); the best score wins, and a tie between
   keys of two different groups resolves to nothing (ambiguous).

A phrase listed in the file's ``unmapped`` table (a word that names no group, such as 地域黑)
resolves to nothing with method ``unmapped`` and its reason; anything else unmatched has
method ``unresolved``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from rapidfuzz import fuzz, process

from verimod.core.errors import InputError, did_you_mean, shown
from verimod.resources import resource_path
from verimod.tasks.softhate.schema import Language, Level1Domain, TargetGroup, has_han
from verimod.tasks.softhate.scoring import normalise_text

GROUPS_RESOURCE: Final = "softhate/groups.json"
GROUPS_RESOURCES: Final[dict[str, str]] = {"en": GROUPS_RESOURCE, "zh": "softhate/groups_zh.json"}
DEFAULT_FUZZY_CUTOFF: Final = 85.0
HAN_FUZZY_CUTOFF: Final = 90.0
Method = Literal["exact", "rewrite", "demonym", "compound", "fuzzy", "unmapped", "unresolved"]
METHODS: Final[tuple[str, ...]] = ("exact", "rewrite", "demonym", "compound", "fuzzy", "unmapped", "unresolved")

_ZH_PREFIX = re.compile(
    r"^(?:这些|那些|这帮|那帮|这群|那群|这类|那类|这种|那种|一些|有些|某些|部分|很多|许多|不少|大多数|大部分|"
    r"所有|全体|一群|一帮|个别|广大|全部|大量|少数|多数|一部分|某|该)+"
)
_ZH_SUFFIX = re.compile(r"(?:们|群体|人群|同胞|这些人|那些人|群众)+$")
_ZH_PLACE = re.compile(r"^(.+?)(?:省的人|省人|地区的人|地区人|地方的人|的人|省)$")
_ZH_DEMONYM = re.compile(r"^(.+?)(?:籍人士|人士|老乡|土著|佬|仔|籍|银)$")
_ZH_COMPOUND = re.compile(
    r"^(.+?)(?:女人|男人|女生|男生|女孩子|女孩|男孩|姑娘|小伙子|小伙|妹子|女性|男性|大妈|大爷|老太太|老头|小哥)$"
)
_EN_PREFIX = re.compile(r"^(?:(?:all|some|many|most|these|those|certain|the)\s+)+")
_EN_SUFFIX = re.compile(r"\s+(?:people|persons|folks|individuals|community|communities|population)$")


def _key(phrase: str) -> str:
    key = normalise_text(phrase)
    return key[4:] if key.startswith("the ") else key


def slug(text: str) -> str:
    """NFKC, case-folded, runs of characters other than letters, digits and ``_`` as ``-``."""
    return re.sub(r"\W+", "-", unicodedata.normalize("NFKC", text).casefold()).strip("-")


def core(key: str) -> str:
    """``key`` without the quantifiers, demonstratives and collective suffixes of rule 2."""
    stripped = _ZH_SUFFIX.sub("", _ZH_PREFIX.sub("", key)).strip() or key
    return _EN_SUFFIX.sub("", _EN_PREFIX.sub("", stripped)).strip() or stripped


def rewrites(key: str) -> list[str]:
    """The keys rule 2 of the module docstring tries for ``key`` (already a key), in order."""
    out: list[str] = []
    core_ = core(key)
    for candidate in (core_, f"{core_} people", f"{core_}人" if has_han(core_) else core_):
        if candidate != key and candidate not in out:
            out.append(candidate)
    place = _ZH_PLACE.match(core_)
    if place is not None and f"{place.group(1)}人" not in out:
        out.append(f"{place.group(1)}人")
    return out


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
        for form in group.names.values():  # display names: keys too, unless another group has them
            key = _key(form)
            if key and index.setdefault(key, g) != g:
                clashes.append((g, -1, f"display name {form!r} already names group {groups[index[key]].name!r}"))
    return index, clashes


@dataclass(frozen=True)
class Resolution:
    """How a phrase resolved: the group (None when none), the rule, the name or alias matched,
    the fuzzy score (rule ``fuzzy`` only) and why it names no group (rule ``unmapped``)."""

    phrase: str
    group: TargetGroup | None
    method: Method
    form: str | None = None
    score: float | None = None
    reason: str | None = None


@dataclass(frozen=True)
class GroupTaxonomy:
    """Target groups with their names and aliases; :meth:`match` maps a phrase to one."""

    groups: tuple[TargetGroup, ...]
    unmapped: dict[str, str] = field(default_factory=dict, compare=False)
    fuzzy_cutoff: float | None = DEFAULT_FUZZY_CUTOFF
    _index: dict[str, int] = field(init=False, repr=False, compare=False)
    _forms: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        groups = tuple(self.groups)
        index, clashes = _index(groups)
        if clashes:
            g, _, message = clashes[0]
            raise ValueError(f"group {groups[g].name!r}: {message}")
        forms = {_key(form): form for group in groups for form in (*group.names.values(), group.name, *group.aliases)}
        object.__setattr__(self, "groups", groups)
        object.__setattr__(self, "unmapped", {_key(k): v for k, v in self.unmapped.items()})
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_forms", forms)

    def _found(self, phrase: str, key: str, method: Method, score: float | None = None) -> Resolution:
        return Resolution(phrase, self.groups[self._index[key]], method, self._forms[key], score)

    def match(self, phrase: str) -> Resolution:
        """How ``phrase`` resolves (rules in the module docstring)."""
        key = _key(phrase)
        if key in self._index:
            return self._found(phrase, key, "exact")
        if key in self.unmapped:
            return Resolution(phrase, None, "unmapped", reason=self.unmapped[key])
        candidates = rewrites(key)
        for candidate in candidates:
            if candidate in self._index:
                return self._found(phrase, candidate, "rewrite")
        for method, pattern in (("demonym", _ZH_DEMONYM), ("compound", _ZH_COMPOUND)):
            for candidate in (key, *candidates):
                found = pattern.match(candidate)
                if found is not None:
                    stem = f"{found.group(1)}人"
                    for option in (stem, *rewrites(stem)):
                        if option in self._index:
                            return self._found(phrase, option, method)  # type: ignore[arg-type]
        if self.fuzzy_cutoff is not None and key:
            return self._fuzzy(phrase, core(key))
        return Resolution(phrase, None, "unresolved")

    def _fuzzy(self, phrase: str, query: str) -> Resolution:
        assert self.fuzzy_cutoff is not None
        cutoff = max(self.fuzzy_cutoff, HAN_FUZZY_CUTOFF) if has_han(query) else self.fuzzy_cutoff
        found = process.extract(query, list(self._index), scorer=fuzz.ratio, score_cutoff=cutoff, limit=8)
        if not found:
            return Resolution(phrase, None, "unresolved")
        best = found[0][1]
        owners = {self._index[k] for k, score, _ in found if score == best}
        if len(owners) > 1:
            return Resolution(phrase, None, "unresolved", reason=f"ambiguous: ties at {best:.1f}")
        return self._found(phrase, found[0][0], "fuzzy", float(best))

    def resolve(self, phrase: str | None) -> TargetGroup | None:
        """The group ``phrase`` resolves to (:meth:`match`), else None."""
        return None if phrase is None else self.match(phrase).group

    def without_names(self, language: Language) -> list[TargetGroup]:
        """The groups with no display name in ``language`` (prompts of it cannot name them)."""
        return [g for g in self.groups if g.display_name(language) is None]


def _group(path: str, where: str, entry: object) -> TargetGroup:
    if not isinstance(entry, dict):
        raise InputError.at(path, None, where, f"expected an object, got {shown(entry)}")
    allowed = ("name", "level1", "level2", "aliases", "names")
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
    names = entry.get("names", {})
    if not isinstance(names, dict):
        raise InputError.at(path, None, f"{where}.names", f"expected an object of language → name, got {shown(names)}")
    for language, value in names.items():
        if language not in GROUPS_RESOURCES:
            raise InputError.at(path, None, f"{where}.names.{language}", "the language must be en or zh")
        if not isinstance(value, str) or not value.strip():
            raise InputError.at(path, None, f"{where}.names.{language}", "must be a non-empty string")
    return TargetGroup(
        name=entry["name"], level1=Level1Domain(level1), level2=entry["level2"], aliases=tuple(aliases), names=names
    )


def load_group_taxonomy(
    path: str | Path | None = None, language: Language = "en", fuzzy_cutoff: float | None = DEFAULT_FUZZY_CUTOFF
) -> GroupTaxonomy:
    """Read a taxonomy file (default: the bundled one of ``language``, module docstring).

    The file is a JSON object: ``groups`` — a list of ``{"name", "level1", "level2",
    "aliases", "names"}`` (``level1`` one of :class:`~verimod.tasks.softhate.schema.Level1Domain`;
    ``names`` optional display names per language, ``{"en": …, "zh": …}``);
    optional ``_note`` and ``version`` (strings) and ``unmapped`` (target name → reason: names
    deliberately left out, which must not resolve). Every name and alias key (module docstring)
    must be unique across the file, and so must the standpoint ids of the ``level2`` values.
    Problems raise a one-line :class:`~verimod.core.errors.InputError` naming the file and
    the JSON path (``groups[3].aliases[2]``).
    """
    if path is None and language not in GROUPS_RESOURCES:
        raise ValueError(f"no bundled taxonomy for language {language!r}")
    name = str(path) if path is not None else str(resource_path(GROUPS_RESOURCES[language]))
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
    return GroupTaxonomy(tuple(groups), dict(unmapped), fuzzy_cutoff)
