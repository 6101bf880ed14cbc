"""Mappings between toxic reasoning traits and categories of existing taxonomies, kept as data.

The mappings live in ``resources/toxirex/mappings.json`` (or a file of the same shape given
to :func:`load_mappings`): per taxonomy (``ihc`` — the Implicit Hate Corpus; ``trs0`` — the
ToxiREX pre-annotation categories; ``edos`` — the SemEval-2023 sexism vectors), per category,
a list of alternative *patterns*, each a list of *conditions* on annotation variables::

    {"var": "implCategory", "is": "Situation"}          equals
    {"var": "implCategory", "in": ["Quality", "Behavior"]}  one of
    {"var": "implTemporality", "has": "future"}         multi-label contains
    {"var": "authorIntent", "atLeast": "High"}          ordinal ≥ (Not applicable never satisfies)
    {"var": "expertBelief", "atMost": "Low"}            ordinal ≤

Both directions:

- trait pattern → category (bottom-up): :func:`categories_for` returns every category with a
  pattern whose conditions all hold. A condition holds only on a variable the annotation
  *reached* (:mod:`~verimod.tasks.toxirex.stopping`), so a comment without an implication maps
  to no implication-based category.
- category → required traits (top-down): :func:`required_traits` gives the patterns;
  :func:`check_category` says which conditions an annotation fails, alternative by
  alternative; :func:`describe_pattern` renders a pattern as a sentence to verify.

Categories whose ``patterns`` is ``null`` cannot be expressed in the schema (e.g. EDOS
"aggressive and emotive attacks": defined by how, not what); both directions say so
(:func:`required_traits` returns None; :func:`categories_for` never yields them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from verimod.core.errors import InputError, did_you_mean, shown
from verimod.resources import resource_path
from verimod.tasks.toxirex.schema import ATTITUDE_SCALE, Attitude, ToxicReasoning
from verimod.tasks.toxirex.stopping import VARIABLE_BY_NAME, reached_from_values, variable_values

Operator = Literal["is", "in", "has", "atLeast", "atMost"]
OPERATORS: tuple[str, ...] = ("is", "in", "has", "atLeast", "atMost")
_ALLOWED_OPS: dict[str, tuple[str, ...]] = {
    "binary": ("is",),
    "categorical": ("is", "in"),
    "multilabel": ("has",),
    "ordinal": ("is", "in", "atLeast", "atMost"),
}
_OP_TEXT = {"is": "is", "in": "is one of", "has": "includes", "atLeast": "is at least", "atMost": "is at most"}


@dataclass(frozen=True, slots=True)
class Condition:
    """One condition on one variable."""

    var: str
    op: Operator
    value: Any  # bool, str, or tuple[str, ...] for "in"

    def holds(self, values: Mapping[str, Any], reached: frozenset[str]) -> bool:
        """True when the variable is reached and its value satisfies the condition."""
        if self.var not in reached:
            return False
        actual = values[self.var]
        if actual is None:
            return False
        if self.op == "is":
            return bool(actual == self.value)
        if self.op == "in":
            return actual in self.value
        if self.op == "has":
            return self.value in actual
        if actual == Attitude.NOT_APPLICABLE:
            return False
        rank, bound = ATTITUDE_SCALE.index(Attitude(actual)), ATTITUDE_SCALE.index(Attitude(self.value))
        return rank >= bound if self.op == "atLeast" else rank <= bound

    def describe(self) -> str:
        """E.g. ``authorIntent is at least High``."""
        value = self.value
        if isinstance(value, bool):
            shown_value = "true" if value else "false"
        elif isinstance(value, tuple):
            shown_value = " or ".join(value)
        else:
            shown_value = str(value)
        return f"{self.var} {_OP_TEXT[self.op]} {shown_value}"


Pattern = tuple[Condition, ...]


@dataclass(frozen=True, slots=True)
class Category:
    """One category of a taxonomy and the patterns that map to it (None: not expressible)."""

    key: str
    label: str
    definition: str
    source: str
    patterns: tuple[Pattern, ...] | None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Taxonomy:
    """A taxonomy: its name and its categories in file order."""

    key: str
    name: str
    categories: tuple[Category, ...]

    def category(self, key: str) -> Category:
        """The category ``key`` (KeyError with a did-you-mean hint)."""
        for c in self.categories:
            if c.key == key:
                return c
        keys = [c.key for c in self.categories]
        raise KeyError(f"no category {key!r} in taxonomy {self.key!r}{did_you_mean(key, keys)}")


def _fail(path: str, field: str, message: str) -> InputError:
    return InputError.at(path, None, field, message)


def _condition(raw: Any, path: str, field: str) -> Condition:
    if not isinstance(raw, dict):
        raise _fail(path, field, f"a condition must be an object, got {shown(raw)}")
    var = raw.get("var")
    ops = [k for k in raw if k != "var"]
    if not isinstance(var, str) or var not in VARIABLE_BY_NAME:
        hint = did_you_mean(var, VARIABLE_BY_NAME) if isinstance(var, str) else ""
        raise _fail(path, f"{field}.var", f"unknown variable {shown(var)}{hint}")
    if len(ops) != 1 or ops[0] not in OPERATORS:
        raise _fail(path, field, f"a condition needs exactly one operator of {', '.join(OPERATORS)}, got {ops}")
    op = ops[0]
    variable = VARIABLE_BY_NAME[var]
    allowed = _ALLOWED_OPS.get(variable.kind, ())
    if op not in allowed:
        raise _fail(path, f"{field}.{op}", f"operator {op!r} does not apply to {variable.kind} variable {var}")
    value = raw[op]
    items = value if op == "in" else [value]
    if op == "in" and not (isinstance(value, list) and value):
        raise _fail(path, f"{field}.in", "'in' needs a non-empty list")
    for item in items:
        ok = isinstance(item, bool) if variable.kind == "binary" else item in variable.values
        if not ok:
            expected = "true or false" if variable.kind == "binary" else ", ".join(variable.values)
            hint = did_you_mean(item, variable.values) if isinstance(item, str) else ""
            raise _fail(path, f"{field}.{op}", f"value {shown(item)} is not one of {expected}{hint}")
    if op in ("atLeast", "atMost") and value == Attitude.NOT_APPLICABLE:
        raise _fail(path, f"{field}.{op}", "Not applicable is not on the ordinal scale")
    return Condition(var, op, tuple(value) if op == "in" else value)  # type: ignore[arg-type]


def _category(key: str, raw: Any, path: str, field: str) -> Category:
    if not isinstance(raw, dict):
        raise _fail(path, field, "a category must be an object")
    for name in ("label", "definition", "source"):
        if not isinstance(raw.get(name), str) or not raw[name].strip():
            raise _fail(path, f"{field}.{name}", "missing or empty")
    unknown = set(raw) - {"label", "definition", "source", "patterns", "note"}
    if unknown:
        raise _fail(path, f"{field}.{sorted(unknown)[0]}", "unknown field")
    if "patterns" not in raw:
        raise _fail(path, f"{field}.patterns", "missing (use null for a category the schema cannot express)")
    raw_patterns = raw["patterns"]
    patterns: tuple[Pattern, ...] | None = None
    if raw_patterns is not None:
        if not isinstance(raw_patterns, list) or not raw_patterns:
            raise _fail(path, f"{field}.patterns", "must be a non-empty list of patterns, or null")
        built = []
        for i, pattern in enumerate(raw_patterns):
            if not isinstance(pattern, list) or not pattern:
                raise _fail(path, f"{field}.patterns.{i}", "a pattern must be a non-empty list of conditions")
            built.append(tuple(_condition(c, path, f"{field}.patterns.{i}.{j}") for j, c in enumerate(pattern)))
        patterns = tuple(built)
    return Category(key, raw["label"], raw["definition"], raw["source"], patterns, raw.get("note"))


def parse_mappings(data: Any, path: str = "<mappings>") -> dict[str, Taxonomy]:
    """Validate a decoded mappings document; :class:`InputError` names the offending field."""
    if not isinstance(data, dict) or not isinstance(data.get("taxonomies"), dict):
        raise _fail(path, "taxonomies", "missing; expected an object of taxonomies")
    out = {}
    for key, raw in data["taxonomies"].items():
        field = f"taxonomies.{key}"
        if not isinstance(raw, dict) or not isinstance(raw.get("categories"), dict) or not raw["categories"]:
            raise _fail(path, f"{field}.categories", "missing; expected a non-empty object of categories")
        if not isinstance(raw.get("name"), str):
            raise _fail(path, f"{field}.name", "missing")
        categories = tuple(_category(ck, cv, path, f"{field}.categories.{ck}") for ck, cv in raw["categories"].items())
        out[key] = Taxonomy(key, raw["name"], categories)
    return out


def load_mappings(path: str | Path | None = None) -> dict[str, Taxonomy]:
    """The taxonomies of a mappings file (default: the bundled ``toxirex/mappings.json``)."""
    if path is None:
        return _bundled()
    name = str(path)
    try:
        text = Path(name).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError.at(name, None, None, "file not found") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError.at(name, exc.lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    return parse_mappings(data, name)


@cache
def _bundled() -> dict[str, Taxonomy]:
    path = resource_path("toxirex/mappings.json")
    return parse_mappings(json.loads(path.read_text(encoding="utf-8")), str(path))


def _taxonomy(taxonomy: str | Taxonomy) -> Taxonomy:
    if isinstance(taxonomy, Taxonomy):
        return taxonomy
    bundled = _bundled()
    if taxonomy not in bundled:
        raise KeyError(f"no taxonomy {taxonomy!r}{did_you_mean(taxonomy, bundled)}")
    return bundled[taxonomy]


def pattern_holds(pattern: Pattern, reasoning: ToxicReasoning) -> bool:
    """True when every condition of ``pattern`` holds on ``reasoning``."""
    values = variable_values(reasoning)
    reached = reached_from_values(values)
    return all(c.holds(values, reached) for c in pattern)


def categories_for(reasoning: ToxicReasoning, taxonomy: str | Taxonomy = "ihc") -> tuple[str, ...]:
    """Bottom-up: the keys of every category of ``taxonomy`` that ``reasoning`` maps to (file order)."""
    tax = _taxonomy(taxonomy)
    values = variable_values(reasoning)
    reached = reached_from_values(values)
    return tuple(
        c.key
        for c in tax.categories
        if c.patterns is not None and any(all(cond.holds(values, reached) for cond in p) for p in c.patterns)
    )


def required_traits(category: str, taxonomy: str | Taxonomy = "ihc") -> tuple[Pattern, ...] | None:
    """Top-down: the alternative patterns a ``category`` requires (None: not expressible)."""
    return _taxonomy(taxonomy).category(category).patterns


@dataclass(frozen=True, slots=True)
class CategoryCheck:
    """Whether an annotation satisfies a category, and what each alternative still lacks."""

    category: str
    expressible: bool
    matches: bool
    unmet: tuple[tuple[Condition, ...], ...]  # per alternative pattern, its failing conditions


def check_category(reasoning: ToxicReasoning, category: str, taxonomy: str | Taxonomy = "ihc") -> CategoryCheck:
    """Top-down verification: does ``reasoning`` carry the traits ``category`` requires?"""
    patterns = required_traits(category, taxonomy)
    if patterns is None:
        return CategoryCheck(category, False, False, ())
    values = variable_values(reasoning)
    reached = reached_from_values(values)
    unmet = tuple(tuple(c for c in p if not c.holds(values, reached)) for p in patterns)
    return CategoryCheck(category, True, any(not u for u in unmet), unmet)


def describe_pattern(pattern: Pattern) -> str:
    """A pattern as one line: ``implCategory is Situation and … and authorIntent is at least High``."""
    return " and ".join(c.describe() for c in pattern)
