"""Record filters of the normalisation pipeline: text length, symbol-only texts, spam, and the
key of exact-duplicate detection. Each is a pure function of the normalised text."""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from verimod.core.errors import InputError, shown
from verimod.data.normalize_chars import EMOJI_MOD, EMOJI_TAG, emoticon_pattern
from verimod.data.normalize_rules import PATTERNS_RESOURCE
from verimod.resources import resource_path

_CONTENT_RE = re.compile(r"[^\W_]")  # a letter or digit of any script, CJK included
_SPACE_RE = re.compile(r"\s+")
#: Code points that do not count towards length: whitespace, combining marks, joiners,
#: variation selectors, keycap, skin tones and flag tags (they belong to the preceding character).
_NOT_COUNTED_RE = re.compile(rf"[\s\u0300-\u036f\u1ab0-\u1aff\u20d0-\u20ff\u200d\ufe00-\ufe0f{EMOJI_MOD}{EMOJI_TAG}]")
_ONE_CHAR = "\x00"  # stands for a placeholder or emoticon while counting (controls are gone by then)


def has_content(text: str) -> bool:
    """True when ``text`` has at least one letter or digit of any script (CJK included)."""
    return _CONTENT_RE.search(text) is not None


def text_length(text: str, placeholders: tuple[str, ...] = ()) -> int:
    """Length of a normalised text as the ``min_length`` filter counts it: Unicode code points,
    except that whitespace, combining marks, ZWJ, variation selectors, keycap marks, skin tones
    and flag tags do not count (they belong to the character before), and each placeholder
    (``<手机号>``, ``@用户``) and each Weibo bracket emoticon (``[哈哈]``) counts as one character.
    An emoji ZWJ sequence counts one per pictograph (👨‍👩‍👧 = 3), a flag 2."""
    for placeholder in placeholders:
        if placeholder and placeholder in text:
            text = text.replace(placeholder, _ONE_CHAR)
    if "[" in text:
        text = emoticon_pattern().sub(_ONE_CHAR, text)
    return len(text) - len(_NOT_COUNTED_RE.findall(text))


def text_key(text: str) -> bytes:
    """The exact-duplicate key of a normalised text: a 128-bit BLAKE2b digest of its UTF-8
    bytes (lone surrogates included), so the seen-set costs a fixed size per text."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass(frozen=True)
class SpamPattern:
    """One named advertisement/spam pattern and its weight. ``first`` is the set of characters a
    match can start with (None when unknown): a text containing none of them is not searched."""

    name: str
    weight: int
    regex: re.Pattern[str]
    first: frozenset[str] | None = None


@dataclass(frozen=True)
class SpamPatterns:
    """The spam patterns and the weight of a contact signal (see ``normalize_patterns.json``)."""

    patterns: tuple[SpamPattern, ...]
    contact_weight: int

    def match(self, text: str, contact: bool) -> tuple[int, list[str]]:
        """``(score, names)``: the summed weights of the distinct patterns found in ``text``
        (whitespace removed, case ignored) plus ``contact_weight`` when ``contact`` and at least
        one pattern matched; ``names`` lists the matched patterns (and ``contact``). A text with
        no pattern scores 0 whatever its contacts."""
        squeezed = _SPACE_RE.sub("", text)
        present = set(squeezed)
        names = [
            p.name
            for p in self.patterns
            if (p.first is None or not p.first.isdisjoint(present)) and p.regex.search(squeezed)
        ]
        if not names:
            return 0, []
        score = sum(p.weight for p in self.patterns if p.name in names)
        if contact:
            score += self.contact_weight
            names.append("contact")
        return score, names


@lru_cache(maxsize=8)
def load_spam_patterns(path: Path | None = None) -> SpamPatterns:
    """The ``spam`` list and ``contact_weight`` of ``path`` (default: the bundled
    ``normalize_patterns.json``). A bad file raises :class:`InputError` naming the entry."""
    source = resource_path(PATTERNS_RESOURCE) if path is None else Path(path)
    name = str(source)
    try:
        data = json.loads(source.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise InputError.at(name, None, None, "file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError.at(name, None, None, f"cannot read spam patterns: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("spam"), list):
        raise InputError.at(name, None, "spam", "expected a JSON object with a 'spam' list")
    contact = data.get("contact_weight", 1)
    if not isinstance(contact, int) or isinstance(contact, bool) or contact < 0:
        raise InputError.at(name, None, "contact_weight", f"expected an integer >= 0, got {shown(contact)}")
    patterns = tuple(_spam_entry(name, i, entry) for i, entry in enumerate(data["spam"]))
    names = [p.name for p in patterns]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InputError.at(name, None, "spam", f"pattern names used twice: {', '.join(duplicated)}")
    return SpamPatterns(patterns, contact)


def _spam_entry(path: str, index: int, entry: object) -> SpamPattern:
    where = f"spam[{index}]"
    if not isinstance(entry, dict):
        raise InputError.at(path, None, where, "expected an object with name, weight and pattern")
    name, weight, pattern = entry.get("name"), entry.get("weight"), entry.get("pattern")
    if not isinstance(name, str) or not name:
        raise InputError.at(path, None, f"{where}.name", f"expected a non-empty string, got {shown(name)}")
    if not isinstance(weight, int) or isinstance(weight, bool) or weight < 1:
        raise InputError.at(path, None, f"{where}.weight", f"expected an integer >= 1, got {shown(weight)}")
    if not isinstance(pattern, str) or not pattern:
        raise InputError.at(path, None, f"{where}.pattern", f"expected a non-empty string, got {shown(pattern)}")
    try:
        regex = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise InputError.at(path, None, f"{where}.pattern", f"not a valid regular expression: {exc}") from None
    return SpamPattern(name, weight, regex, first_characters(pattern, ignore_case=True))


_MAX_FIRST = 200  # a wider first-character set saves nothing


def first_characters(pattern: str, ignore_case: bool = False) -> frozenset[str] | None:
    """The characters a match of ``pattern`` can start with, or None when that cannot be told
    (a class like ``\\d`` or ``.``, a pattern that can match the empty string, or a parser
    this version of Python does not have). Only an optimisation: None means "always search"."""
    try:
        parser: Any = importlib.import_module("re._parser")
        found, nullable = _first_of(list(parser.parse(pattern)))
    except (ImportError, AttributeError, TypeError, ValueError, re.error):
        return None
    if found is None or nullable or len(found) > _MAX_FIRST:
        return None
    if ignore_case:
        found = {variant for ch in found for variant in (ch, ch.lower(), ch.upper())}
    return frozenset(found)


def _first_of(items: list[Any]) -> tuple[set[str] | None, bool]:
    """``(first characters, can match empty)`` of a sequence of parsed regular-expression items."""
    result: set[str] = set()
    for op, arg in items:
        found, nullable = _first_of_item(str(op), arg)
        if found is None:
            return None, False
        result |= found
        if not nullable:
            return result, False
    return result, True


def _first_of_item(op: str, arg: Any) -> tuple[set[str] | None, bool]:
    if op == "LITERAL":
        return {chr(arg)}, False
    if op == "IN":
        chars: set[str] = set()
        for kind, value in arg:
            if str(kind) == "LITERAL":
                chars.add(chr(value))
            elif str(kind) == "RANGE" and value[1] - value[0] < _MAX_FIRST:
                chars.update(chr(c) for c in range(value[0], value[1] + 1))
            else:
                return None, False
        return chars, False
    if op == "BRANCH":
        union: set[str] = set()
        any_nullable = False
        for branch in arg[1]:
            found, nullable = _first_of(list(branch))
            if found is None:
                return None, False
            union |= found
            any_nullable = any_nullable or nullable
        return union, any_nullable
    if op == "SUBPATTERN":
        return _first_of(list(arg[-1]))
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        found, nullable = _first_of(list(arg[2]))
        return found, nullable or arg[0] == 0
    if op in ("AT", "ASSERT", "ASSERT_NOT"):
        return set(), True  # zero-width: the match starts with what follows
    return None, False
