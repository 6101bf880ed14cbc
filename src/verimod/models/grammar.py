"""A backend-neutral grammar for constrained decoding, and its renderings.

A :class:`TextGrammar` is a set of named, non-recursive rules built from six node kinds:

- :class:`Literal` — fixed text;
- :class:`OneOf` — one of several fixed texts;
- :class:`Chars` — a run of ``min_count`` to ``max_count`` characters, none of them in
  ``excluded`` (``max_count`` None: unbounded);
- :class:`Seq`, :class:`Alt` — concatenation, alternation;
- :class:`Repeat` — ``min_count`` to ``max_count`` repetitions of a node;
- :class:`Ref` — another rule, by name.

Without recursion the language is regular, which is what every constrained decoder accepts.
One definition renders to:

- :meth:`TextGrammar.regex` — a regular expression in the subset that Python ``re``, Rust
  ``regex`` (llguidance), xgrammar and outlines (vLLM, SGLang) read alike: literal characters
  with ASCII metacharacters backslash-escaped, ``[^...]`` classes, ``(?:...)`` groups, ``|``
  and ``{m,n}`` / ``?`` / ``*`` quantifiers; control characters as ``\\n``, ``\\r``, ``\\t``,
  ``\\xHH``;
- :meth:`TextGrammar.gbnf` — llama.cpp GBNF (the gguf backend, the llama.cpp server's
  ``grammar`` field), one GBNF rule per named rule, ``root`` first.

Both renderings denote the same set of strings (tests check both on the same accepted and
rejected texts, the GBNF inside llama.cpp itself). :meth:`TextGrammar.matches` checks a text
against the grammar (the compiled regex). Models are frozen and hashable, so a grammar can sit in
:class:`~verimod.models.base.GenerationParams` and enter cache keys and manifests as data.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated
from typing import Literal as TypingLiteral

from pydantic import BaseModel, ConfigDict, Field, model_validator

_FROZEN = ConfigDict(extra="forbid", frozen=True)
_RULE_NAME = re.compile(r"[a-z][a-z0-9-]*")  # GBNF rule names: letters, digits, hyphens
_REGEX_META = frozenset("\\.^$|?*+()[]{}")
_CLASS_META = frozenset("\\[]^-")
_NAMED_CONTROLS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


class Literal(BaseModel):
    """Fixed text."""

    model_config = _FROZEN
    kind: TypingLiteral["literal"] = "literal"
    text: str = Field(min_length=1)


class OneOf(BaseModel):
    """Exactly one of the given texts."""

    model_config = _FROZEN
    kind: TypingLiteral["one_of"] = "one_of"
    options: tuple[Annotated[str, Field(min_length=1)], ...] = Field(min_length=1)


class Chars(BaseModel):
    """``min_count``–``max_count`` characters, none of them in ``excluded``."""

    model_config = _FROZEN
    kind: TypingLiteral["chars"] = "chars"
    excluded: str = Field(min_length=1)
    min_count: int = Field(1, ge=0)
    max_count: int | None = Field(1, ge=1)

    @model_validator(mode="after")
    def _bounds(self) -> Chars:
        if self.max_count is not None and self.max_count < self.min_count:
            raise ValueError(f"max_count {self.max_count} < min_count {self.min_count}")
        return self


class Ref(BaseModel):
    """The rule called ``name``."""

    model_config = _FROZEN
    kind: TypingLiteral["ref"] = "ref"
    name: str


class Seq(BaseModel):
    """The items one after the other."""

    model_config = _FROZEN
    kind: TypingLiteral["seq"] = "seq"
    items: tuple[Node, ...] = Field(min_length=1)


class Alt(BaseModel):
    """Any one of the items."""

    model_config = _FROZEN
    kind: TypingLiteral["alt"] = "alt"
    items: tuple[Node, ...] = Field(min_length=1)


class Repeat(BaseModel):
    """``min_count``–``max_count`` repetitions of ``item`` (``max_count`` None: unbounded)."""

    model_config = _FROZEN
    kind: TypingLiteral["repeat"] = "repeat"
    item: Node
    min_count: int = Field(0, ge=0)
    max_count: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _bounds(self) -> Repeat:
        if self.max_count is not None and self.max_count < self.min_count:
            raise ValueError(f"max_count {self.max_count} < min_count {self.min_count}")
        return self


Node = Annotated[Literal | OneOf | Chars | Ref | Seq | Alt | Repeat, Field(discriminator="kind")]


class Rule(BaseModel):
    """A named rule."""

    model_config = _FROZEN
    name: str
    body: Node


class TextGrammar(BaseModel):
    """A regular grammar: named rules, ``root`` the start (see the module docstring).

    ``name`` identifies the grammar and its version (``varm-anchors/1``) in manifests and
    messages. Construction checks that rule names are GBNF-safe and unique, that ``root``
    exists, that every reference names a rule and that no rule refers to itself, directly or
    not (the grammar stays regular).
    """

    model_config = _FROZEN
    name: str = Field(min_length=1)
    rules: tuple[Rule, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _well_formed(self) -> TextGrammar:
        names = [rule.name for rule in self.rules]
        bad = [n for n in names if not _RULE_NAME.fullmatch(n)]
        if bad:
            raise ValueError(f"rule names must match [a-z][a-z0-9-]*: {bad}")
        if len(set(names)) != len(names):
            raise ValueError("rule names must be unique")
        if "root" not in names:
            raise ValueError("a grammar needs a rule named root")
        bodies = {rule.name: rule.body for rule in self.rules}
        for name in names:
            _check_refs(name, bodies, ())
        return self

    def rule(self, name: str) -> Node:
        """The body of rule ``name`` (KeyError if there is none)."""
        for rule in self.rules:
            if rule.name == name:
                return rule.body
        raise KeyError(name)

    def regex(self) -> str:
        """The grammar as one regular expression (rules inlined; see the module docstring)."""
        return _regex_of(self)

    def gbnf(self) -> str:
        """The grammar in llama.cpp GBNF, one line per rule, ``root`` first."""
        return _gbnf_of(self)

    def matches(self, text: str) -> bool:
        """True when ``text`` is in the grammar's language."""
        return _compiled(self).fullmatch(text) is not None


def _children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Seq | Alt):
        return node.items
    if isinstance(node, Repeat):
        return (node.item,)
    return ()


def _check_refs(name: str, bodies: dict[str, Node], path: tuple[str, ...]) -> None:
    if name in path:
        raise ValueError(f"rule {name} refers to itself ({' → '.join((*path, name))}): the grammar must be regular")
    stack = [bodies[name]]
    while stack:
        node = stack.pop()
        if isinstance(node, Ref):
            if node.name not in bodies:
                raise ValueError(f"rule {name} refers to an unknown rule {node.name!r}")
            _check_refs(node.name, bodies, (*path, name))
        stack.extend(_children(node))


# -- regular expression ---------------------------------------------------------------------------


def _regex_char(char: str, in_class: bool) -> str:
    if char in _NAMED_CONTROLS:
        return _NAMED_CONTROLS[char]
    if ord(char) < 0x20 or ord(char) == 0x7F:
        return f"\\x{ord(char):02X}"
    if char in (_CLASS_META if in_class else _REGEX_META):
        return "\\" + char
    return char


def _quantifier(low: int, high: int | None) -> str:
    if (low, high) == (1, 1):
        return ""
    if (low, high) == (0, 1):
        return "?"
    if high is None:
        return "*" if low == 0 else "+" if low == 1 else f"{{{low},}}"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _regex_node(node: Node, bodies: dict[str, Node]) -> tuple[str, bool]:
    """(regex, is_atom): an atom can take a quantifier without a group."""
    if isinstance(node, Literal):
        text = "".join(_regex_char(c, False) for c in node.text)
        return text, len(node.text) == 1
    if isinstance(node, OneOf):
        return "(?:" + "|".join("".join(_regex_char(c, False) for c in o) for o in node.options) + ")", True
    if isinstance(node, Chars):
        char_class = "[^" + "".join(_regex_char(c, True) for c in sorted(set(node.excluded))) + "]"
        quantifier = _quantifier(node.min_count, node.max_count)
        return char_class + quantifier, not quantifier
    if isinstance(node, Ref):
        return _regex_node(bodies[node.name], bodies)
    if isinstance(node, Seq):  # an Alt renders as a group, so plain concatenation is safe
        parts = [_regex_node(item, bodies) for item in node.items]
        return "".join(text for text, _ in parts), len(parts) == 1 and parts[0][1]
    if isinstance(node, Alt):
        return "(?:" + "|".join(_regex_node(item, bodies)[0] for item in node.items) + ")", True
    text = _grouped(_regex_node(node.item, bodies))
    return text + _quantifier(node.min_count, node.max_count), False


def _grouped(rendered: tuple[str, bool]) -> str:
    text, atom = rendered
    return text if atom else f"(?:{text})"


@lru_cache(maxsize=64)
def _regex_of(grammar: TextGrammar) -> str:
    bodies = {rule.name: rule.body for rule in grammar.rules}
    return _regex_node(bodies["root"], bodies)[0]


@lru_cache(maxsize=64)
def _compiled(grammar: TextGrammar) -> re.Pattern[str]:
    return re.compile(_regex_of(grammar))


# -- GBNF -----------------------------------------------------------------------------------------


def _gbnf_char(char: str, in_class: bool) -> str:
    if char in _NAMED_CONTROLS:
        return _NAMED_CONTROLS[char]
    if char in '\\"' or (in_class and char in "[]"):
        return "\\" + char
    if ord(char) < 0x20 or ord(char) == 0x7F or (in_class and char in "-^"):
        return f"\\x{ord(char):02X}"
    return char


def _gbnf_literal(text: str) -> str:
    return '"' + "".join(_gbnf_char(c, False) for c in text) + '"'


def _gbnf_node(node: Node) -> str:
    if isinstance(node, Literal):
        return _gbnf_literal(node.text)
    if isinstance(node, OneOf):
        return "(" + " | ".join(_gbnf_literal(o) for o in node.options) + ")"
    if isinstance(node, Chars):
        char_class = "[^" + "".join(_gbnf_char(c, True) for c in sorted(set(node.excluded))) + "]"
        return char_class + _quantifier(node.min_count, node.max_count)
    if isinstance(node, Ref):
        return node.name
    if isinstance(node, Seq):
        return " ".join(_gbnf_node(item) for item in node.items)  # an Alt renders parenthesised
    if isinstance(node, Alt):
        return "(" + " | ".join(_gbnf_node(item) for item in node.items) + ")"
    inner = node.item
    one_char = isinstance(inner, Chars) and inner.min_count == 1 == inner.max_count
    single = one_char or isinstance(inner, Ref | OneOf | Alt | Literal)
    body = _gbnf_node(inner) if single else f"({_gbnf_node(inner)})"
    return body + _quantifier(node.min_count, node.max_count)


@lru_cache(maxsize=64)
def _gbnf_of(grammar: TextGrammar) -> str:
    ordered = sorted(grammar.rules, key=lambda rule: rule.name != "root")
    return "".join(f"{rule.name} ::= {_gbnf_node(rule.body)}\n" for rule in ordered)


Seq.model_rebuild()
Alt.model_rebuild()
Repeat.model_rebuild()
Rule.model_rebuild()
TextGrammar.model_rebuild()
