"""Cue lexicons and the cue matcher (see :mod:`verimod.tasks.varm.cues` for the whole picture).

**Lexicons.** One JSON file per cue family, ``{"family", "version", "description", "terms"}``
and optionally ``"exclude"`` (:class:`Lexicon`, ``extra="forbid"``); :func:`default_lexicons`
loads the four bundled ones (``resources/lexicons/``), :func:`load_lexicon` a user's file.

**Matching rule** (:class:`CueMatcher`): terms and texts normalised with
:func:`normalize_cue_text` (NFKC, lower-case); a term occurs when it is a substring of the
text, except that an ASCII letter/digit end of the term must not touch another ASCII
letter/digit; occurrences inside one of the family's ``exclude`` phrases do not count. One
Aho–Corasick automaton finds every occurrence in time linear in the text plus the occurrences.
"""

from __future__ import annotations

import json
import unicodedata
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from verimod.core.errors import InputError, shown
from verimod.core.validation import validation_problems
from verimod.resources import resource_path

if TYPE_CHECKING:
    pass

#: The bundled cue families, in report order.
DEFAULT_FAMILIES: Final = ("demographic_identity", "social_status", "body_health", "general_abuse")
LEXICON_DIR: Final = "lexicons"


# ----------------------------------------------------------------------------------- lexicons


def normalize_cue_text(text: str) -> str:
    """The normalisation applied to terms and texts before matching: NFKC, then lower-case."""
    return unicodedata.normalize("NFKC", text).lower()


def _check_term(term: str) -> str:
    key = normalize_cue_text(term)
    if not key.strip():
        raise ValueError("must not be blank")
    if key != key.strip():
        raise ValueError(f"{shown(term)} must not start or end with whitespace")
    return term


class Lexicon(BaseModel):
    """One cue family's lexicon. ``family`` is a snake_case name; ``terms`` are unique after
    :func:`normalize_cue_text`; each ``exclude`` phrase contains at least one term (see the
    module docstring for the matching rule)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    family: str = Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)
    version: str = Field(min_length=1)
    description: str = Field(min_length=1)
    terms: tuple[Annotated[str, AfterValidator(_check_term)], ...] = Field(min_length=1)
    exclude: tuple[Annotated[str, AfterValidator(_check_term)], ...] = ()

    @field_validator("terms", "exclude")
    @classmethod
    def _unique(cls, phrases: tuple[str, ...]) -> tuple[str, ...]:
        first: dict[str, int] = {}
        for index, phrase in enumerate(phrases):
            key = normalize_cue_text(phrase)
            if key in first:
                other = first[key]
                raise ValueError(
                    f"entry {index} {shown(phrase)} duplicates entry {other} {shown(phrases[other])} "
                    "after NFKC + lower-case"
                )
            first[key] = index
        return phrases

    @field_validator("exclude")
    @classmethod
    def _exclusions_contain_terms(cls, phrases: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        keys = [normalize_cue_text(term) for term in info.data.get("terms", ())]
        for index, phrase in enumerate(phrases):
            if keys and not any(key in normalize_cue_text(phrase) for key in keys):
                raise ValueError(f"entry {index} {shown(phrase)} contains none of the terms (it would exclude nothing)")
        return phrases


def load_lexicon(path: str | Path) -> Lexicon:
    """Read and validate one lexicon file (UTF-8 JSON, BOM allowed).

    Raises :class:`InputError` (one line naming the file and, where there is one, the field:
    ``lex.json: field 'terms.3': must not be blank``) on any bad input."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError.at(name, None, None, "file not found") from None
    except OSError as exc:
        raise InputError.at(name, None, None, f"cannot read the file: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise InputError.at(name, None, None, "not UTF-8 (lexicon files must be UTF-8 JSON)") from None
    except json.JSONDecodeError as exc:
        raise InputError.at(name, exc.lineno, None, f"not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise InputError.at(name, None, None, 'a lexicon file must hold one JSON object {"family", "version", …}')
    try:
        return Lexicon.model_validate(data)
    except ValidationError as exc:
        problem = validation_problems(exc, Lexicon, name, 0)[0]
        raise InputError(replace(problem, line=None)) from None


def load_lexicons(paths: Iterable[str | Path]) -> list[Lexicon]:
    """:func:`load_lexicon` for each path; two files of one family are an :class:`InputError`."""
    lexicons: list[Lexicon] = []
    seen: dict[str, str] = {}
    for path in paths:
        lexicon = load_lexicon(path)
        if lexicon.family in seen:
            message = f"family {lexicon.family!r} is already defined by {seen[lexicon.family]}"
            raise InputError.at(str(path), None, "family", message)
        seen[lexicon.family] = str(path)
        lexicons.append(lexicon)
    return lexicons


@cache
def default_lexicons() -> tuple[Lexicon, ...]:
    """The four bundled lexicons, in :data:`DEFAULT_FAMILIES` order."""
    return tuple(load_lexicon(resource_path(f"{LEXICON_DIR}/{family}.json")) for family in DEFAULT_FAMILIES)


# ----------------------------------------------------------------------------------- matching


@dataclass(frozen=True, slots=True)
class CueHit:
    """One occurrence of a term; ``start``/``end`` index the *normalised* text."""

    family: str
    term: str  # as written in the lexicon
    start: int
    end: int


def _ascii_alnum(char: str) -> bool:
    return char < "\x80" and char.isalnum()


def _automaton(keys: Sequence[str]) -> tuple[list[dict[str, int]], list[int], list[tuple[int, ...]]]:
    """Aho–Corasick goto, failure and output (key indices ending at each state) tables."""
    goto: list[dict[str, int]] = [{}]
    out: list[list[int]] = [[]]
    for index, key in enumerate(keys):
        state = 0
        for char in key:
            nxt = goto[state].get(char)
            if nxt is None:
                nxt = len(goto)
                goto.append({})
                out.append([])
                goto[state][char] = nxt
            state = nxt
        out[state].append(index)
    fail = [0] * len(goto)
    queue = deque(goto[0].values())
    while queue:  # breadth first: a failure target is shallower, so its outputs are complete
        state = queue.popleft()
        for char, nxt in goto[state].items():
            queue.append(nxt)
            back = fail[state]
            while back and char not in goto[back]:
                back = fail[back]
            fail[nxt] = goto[back].get(char, 0)
            out[nxt].extend(out[fail[nxt]])
    return goto, fail, [tuple(o) for o in out]


class CueMatcher:
    """Finds the terms of several lexicons in a text (the rule is in the module docstring).

    Family names must be distinct (``ValueError``). Immutable after construction; build it once
    and reuse it for every text."""

    def __init__(self, lexicons: Iterable[Lexicon]) -> None:
        self.lexicons: tuple[Lexicon, ...] = tuple(lexicons)
        families = [lexicon.family for lexicon in self.lexicons]
        duplicates = sorted({f for f in families if families.count(f) > 1})
        if duplicates:
            raise ValueError(f"two lexicons of one family: {', '.join(duplicates)}")
        self.families: tuple[str, ...] = tuple(families)
        self.versions: dict[str, str] = {lexicon.family: lexicon.version for lexicon in self.lexicons}
        keys: list[str] = []
        # (family, term, length, ASCII left end, ASCII right end, is an exclude phrase)
        patterns: list[tuple[str, str, int, bool, bool, bool]] = []
        for lexicon in self.lexicons:
            for phrases, excluding in ((lexicon.terms, False), (lexicon.exclude, True)):
                for phrase in phrases:
                    key = normalize_cue_text(phrase)
                    keys.append(key)
                    left, right = _ascii_alnum(key[0]), _ascii_alnum(key[-1])
                    patterns.append((lexicon.family, phrase, len(key), left, right, excluding))
        self._patterns = tuple(patterns)
        self._goto, self._fail, self._out = _automaton(keys)

    def find(self, text: str) -> list[CueHit]:
        """Every occurrence of every term (boundary and exclude rules applied), ordered by start,
        longer first, then lexicon order."""
        norm = normalize_cue_text(text)
        goto, fail, out, patterns = self._goto, self._fail, self._out, self._patterns
        found: list[tuple[int, int, int]] = []
        excluded: dict[str, list[tuple[int, int]]] = {}
        state = 0
        for position, char in enumerate(norm):
            while state and char not in goto[state]:
                state = fail[state]
            state = goto[state].get(char, 0)
            for index in out[state]:
                family, _, length, left, right, excluding = patterns[index]
                start, end = position + 1 - length, position + 1
                if left and start > 0 and _ascii_alnum(norm[start - 1]):
                    continue
                if right and end < len(norm) and _ascii_alnum(norm[end]):
                    continue
                if excluding:
                    excluded.setdefault(family, []).append((start, end))
                else:
                    found.append((start, -length, index))
        found.sort()
        hits = []
        for start, negative_length, index in found:
            family, term = patterns[index][0], patterns[index][1]
            end = start - negative_length
            if any(a <= start and end <= b for a, b in excluded.get(family, ())):
                continue
            hits.append(CueHit(family, term, start, end))
        return hits

    def match(self, text: str) -> dict[str, tuple[str, ...]]:
        """Family → the distinct terms occurring in ``text`` (in order of first occurrence), for
        the families with at least one; keys follow the matcher's family order."""
        terms: dict[str, dict[str, None]] = {}
        for hit in self.find(text):
            terms.setdefault(hit.family, {})[hit.term] = None
        return {family: tuple(terms[family]) for family in self.families if family in terms}


def matcher_of(lexicons: Iterable[Lexicon] | CueMatcher) -> CueMatcher:
    """A matcher for ``lexicons`` (an existing matcher is returned as is)."""
    return lexicons if isinstance(lexicons, CueMatcher) else CueMatcher(lexicons)
