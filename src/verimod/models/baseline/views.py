"""The text features of the baseline's field classifiers: several *views* of one comment.

:class:`TextAnalyzer` turns a text into feature strings, each in one of three blocks
(:data:`TEXT_BLOCKS`), which :class:`~verimod.models.baseline.features.TextVectorizer` weighs
and L2-normalises separately:

- ``surface``: character n-grams (``ngram_min``–``ngram_max``, with the text boundaries
  ``\\x02``/``\\x03``) of the canonical text (:func:`~verimod.models.baseline.charmap.canonical_chars`),
  with ``words`` the jieba words of two or more characters (``w:``), and, with ``quote_view``,
  the character 2–4-grams around quoted passages (``q:``; ``骂“〃”``, ``“〃”这种话``);
- ``robust``: what survives spelling obfuscation (:mod:`~verimod.models.baseline.grams`) —
  pinyin syllable n-grams (``p:sha bi``; so ``傻逼`` = ``沙比`` = ``sha bi``), initial-letter
  n-grams (``i:sb``; so ``你妈`` = ``nm``), and bigrams of adjacent Han characters with each
  character in a similar-shape group read as that group (``g:#17心``; so ``恶心`` ≈ ``垩心``);
- ``cues``: stance and lexicon cues (``s:``/``lex:``/``lexp:``): the families of the cue
  lexicons (by default the bundled ones of :mod:`verimod.tasks.varm.cue_lexicons`; a model
  stores the lists it was trained with) found in the text, found inside quotation marks, found
  by their pinyin (:class:`PhoneticCues`), and the stance words of
  ``resources/baseline/stance_cues.json`` — reporting verbs, negation, second-person address,
  denunciation, first person — alone (the denunciation and reporting words also one by one,
  ``s:denounce=歧视``) and next to an abuse or identity cue (a negation or reporting verb up to
  :data:`WINDOW` characters before it, a second-person word anywhere in the comment, a
  denunciation word anywhere; any kind in the same clause, ``s:clause:denounce+identity``), and
  an abuse or identity cue in a clause that ends with a question mark (``s:question+abuse``).

Every feature string is a pure function of the text and the bundled tables: the same text
always gives the same features, in the same order.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Final

from verimod.models.baseline.charmap import canonical_text
from verimod.models.baseline.features import quote_ngrams, quoted_spans
from verimod.models.baseline.grams import View, make_views, view_names, view_string
from verimod.resources import resource_path
from verimod.tasks.varm.cue_lexicons import CueMatcher, Lexicon, default_lexicons

#: Feature blocks of the text, in column order.
TEXT_BLOCKS: Final = ("surface", "robust", "cues")
STANCE_RESOURCE: Final = "baseline/stance_cues.json"
#: A stance word counts as next to a cue when it starts at most this many characters before it.
WINDOW: Final = 6
_ABUSE_FAMILIES: Final = frozenset({"general_abuse"})


@lru_cache(maxsize=1)
def tokenizer() -> Any:
    """jieba's tokenizer with its default dictionary, loaded once (quietly)."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer


def words(text: str) -> list[str]:
    """jieba's segmentation of ``text`` (dictionary words only, no HMM guessing): the tokens,
    whose concatenation is ``text``."""
    if not text:
        return []
    return list(tokenizer().cut(text, HMM=False))


def word_bounds(text: str) -> list[int]:
    """Offsets of the word boundaries of ``text`` (0 and ``len(text)`` included)."""
    bounds = [0]
    for token in words(text):
        bounds.append(bounds[-1] + len(token))
    return bounds


class StanceLexicon:
    """Stance word lists by kind (``resources/baseline/stance_cues.json``), matched longest first."""

    def __init__(self, version: str, kinds: dict[str, Sequence[str]]) -> None:
        self.version = version
        self.kinds: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in kinds.items()}
        self.kind_of: dict[str, str] = {}
        for kind, terms in self.kinds.items():
            for term in terms:
                self.kind_of.setdefault(term, kind)
        alternatives = sorted(self.kind_of, key=lambda t: (-len(t), t))
        self.pattern = re.compile("|".join(map(re.escape, alternatives))) if alternatives else re.compile(r"(?!)")

    def to_json(self) -> dict[str, Any]:
        """The lists, as stored in a model."""
        return {"version": self.version, "kinds": {k: list(v) for k, v in self.kinds.items()}}


@lru_cache(maxsize=1)
def default_stance_lexicon() -> StanceLexicon:
    """The bundled stance words."""
    data = json.loads(resource_path(STANCE_RESOURCE).read_text(encoding="utf-8"))
    return StanceLexicon(data["version"], {k: v for k, v in data.items() if not k.startswith("_") and k != "version"})


class PhoneticCues:
    """The cue-lexicon terms of two or more syllables, matched by their toneless pinyin: a
    homophone spelling (``沙比`` for ``傻逼``, ``sha bi``) still finds its family."""

    def __init__(self, lexicons: Sequence[Lexicon]) -> None:
        view = make_views((1, 1), (1, 1), (1, 1))[1]
        self.view = view
        family_of: dict[str, str] = {}
        for lexicon in lexicons:
            for term in lexicon.terms:
                tokens = view_string(view, canonical_text(term))
                if len(tokens) >= 2 and all(ord(c) >= 0xF0000 for c in tokens):
                    family_of.setdefault(tokens, lexicon.family)
        self.family_of = family_of
        ordered = sorted(family_of, key=lambda t: (-len(t), t))
        self.pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else re.compile(r"(?!)")

    def find(self, canonical: str) -> list[str]:
        """The family of every match, in text order."""
        return [self.family_of[m.group()] for m in self.pattern.finditer(view_string(self.view, canonical))]


_CLAUSE_END: Final = re.compile(r"[，。！？；!?;,\n…]+")


def cue_features(
    canonical: str, matcher: CueMatcher, stance: StanceLexicon, phonetic: PhoneticCues | None = None
) -> list[str]:
    """The ``cues`` block of a canonical text (module docstring)."""
    hits = matcher.find(canonical)
    quotes = quoted_spans(canonical)
    out: list[str] = []
    cue_starts: list[tuple[int, bool]] = []  # (start, is an abuse cue)
    for hit in hits:
        family = hit.family
        out.append(f"lex:{family}")
        inside = any(a <= hit.start < b for a, b in quotes)
        if inside:
            out.append(f"lex:{family}:quoted")
        cue_starts.append((hit.start, family in _ABUSE_FAMILIES))
    if phonetic is not None:
        out.extend(f"lexp:{family}" for family in phonetic.find(canonical))
    found: dict[str, list[int]] = {}
    for match in stance.pattern.finditer(canonical):
        kind = stance.kind_of[match.group()]
        found.setdefault(kind, []).append(match.start())
        if kind in ("denounce", "report"):
            out.append(f"s:{kind}={match.group()}")
    clause_of = _clause_index(canonical)
    for kind, starts in found.items():
        out.append(f"s:{kind}")
        for start, abusive in cue_starts:
            what = "abuse" if abusive else "identity"
            if kind in ("report", "negation") and any(0 <= start - s <= WINDOW for s in starts):
                out.append(f"s:{kind}>{what}")
            elif kind in ("second_person", "denounce", "self"):
                out.append(f"s:{kind}+{what}")
            if any(clause_of[s] == clause_of[start] for s in starts):
                out.append(f"s:clause:{kind}+{what}")
    for start, abusive in cue_starts:
        clause_end = _CLAUSE_END.search(canonical, start)
        if clause_end is not None and ("？" in clause_end.group() or "?" in clause_end.group()):
            out.append(f"s:question+{'abuse' if abusive else 'identity'}")
    if quotes:
        out.append("s:quotation")
    return out


def _clause_index(canonical: str) -> list[int]:
    """For each character, the number of clause ends (``，。！？；…``) before it."""
    out, clause = [], 0
    for ch in canonical:
        out.append(clause)
        if _CLAUSE_END.match(ch):
            clause += 1
    return out


class TextAnalyzer:
    """Feature views of a text, by block (module docstring): the n-gram views of
    :mod:`~verimod.models.baseline.grams` (:attr:`views`) and the string features
    (:meth:`string_features`)."""

    def __init__(
        self,
        ngram_min: int = 1,
        ngram_max: int = 3,
        bounds: bool = True,
        words: bool = True,
        quote_view: bool = True,
        robust: bool = True,
        cues: bool = True,
        lexicons: Sequence[Lexicon] | None = None,
        stance: StanceLexicon | None = None,
        pinyin_ngram: tuple[int, int] = (2, 3),
        initials_ngram: tuple[int, int] = (2, 3),
    ) -> None:
        if not 1 <= ngram_min <= ngram_max <= 3:
            raise ValueError("need 1 <= ngram_min <= ngram_max <= 3")
        if not bounds:
            raise ValueError("character n-grams always read the text boundaries")
        self.ngram_min = ngram_min
        self.ngram_max = ngram_max
        self.bounds = bounds
        self.use_words = words
        self.quote_view = quote_view
        self.robust = robust
        self.cues = cues
        self.pinyin_ngram = pinyin_ngram
        self.initials_ngram = initials_ngram
        self.lexicons: tuple[Lexicon, ...] = tuple(default_lexicons() if lexicons is None else lexicons)
        self.stance = default_stance_lexicon() if stance is None else stance
        self.matcher = CueMatcher(self.lexicons)
        self.phonetic = PhoneticCues(self.lexicons)
        views = make_views((ngram_min, ngram_max), pinyin_ngram, initials_ngram)
        self.views: tuple[View, ...] = tuple(v for v in views if v.block == "surface" or robust)

    def string_features(self, canonical: str) -> tuple[list[str], list[str]]:
        """``(surface, cues)``: the jieba words (``w:``) and quote n-grams (``q:``) of a canonical
        text, and its stance and lexicon cues."""
        surface = quote_ngrams(canonical) if self.quote_view else []
        if self.use_words:
            surface.extend("w:" + w for w in words(canonical) if len(w) >= 2 and not w.isspace())
        cues = cue_features(canonical, self.matcher, self.stance, self.phonetic) if self.cues else []
        return surface, cues

    def features(self, canonical: str) -> tuple[list[str], list[str], list[str]]:
        """Every feature of a canonical text as a string, by block (surface, robust, cues)."""
        surface_strings, cues = self.string_features(canonical)
        by_block: dict[str, list[str]] = {"surface": [], "robust": []}
        for view in self.views:
            by_block[view.block].extend(view_names(view, canonical))
        return by_block["surface"] + surface_strings, by_block["robust"], cues


def robust_features(canonical: str) -> list[str]:
    """The ``robust`` block of a canonical text with the default n-gram ranges, as strings."""
    return TextAnalyzer(words=False, quote_view=False, cues=False).features(canonical)[1]
