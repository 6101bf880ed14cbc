"""The key characters and key words of a seed: where substitution methods may act.

Substitution methods change *key* characters only — those that carry the request's entity,
action and target — and never the function characters (如何、的、在、不、我…) or the wording of
the request (详细、说明、方法…) that hold the sentence together. Two sources, in this order:

1. ``query.meta["keywords"]`` — a list of strings the data set marks as the risky spans: every
   occurrence of each keyword (longest first, without overlap) is a key word and a risk term.
2. Otherwise, without a segmenter, a left-to-right longest match against the bundled lexicon
   (``resources/safeqa/lexicon.json``): an ``entities`` or ``actions`` entry is a key word and a
   *risk term* (炸药, 毒品, 洗钱, 制作); a ``stop_words`` entry (详细, 方法) is skipped. Between
   matches, Han characters that are not :data:`FUNCTION_CHARS` form runs that are cut into key
   words of two characters (a run of up to three stays whole; an odd run ends with three) —
   Chinese content words are mostly two characters long.

Key positions are the characters of the key words, in increasing order.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from verimod.resources import resource_path
from verimod.tasks.safeqa.schema import SafeQuery

HAN_RE = re.compile("[\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")

#: Function characters: pronouns, particles, question words, auxiliaries, prepositions, conjunctions,
#: locatives.
FUNCTION_CHARS = frozenset(
    "的了吗呢吧啊呀哦嘛么之乎者也我你他她它们咱您谁啥这那哪在是有和与或及就都还要会能可以如何怎样什为"
    "一个种把被对给让从向到于其而且但若果因所不没很更最得地着过来去些每该请想需应将并又再才已经自己等"
    "上下里内外中时"
)


def is_han(ch: str) -> bool:
    """True for a Han ideograph (any CJK block, 〇 included)."""
    return HAN_RE.fullmatch(ch) is not None


@dataclass(frozen=True, slots=True)
class Keys:
    """Key positions, key words and risk terms (``(start, end)`` spans) of one seed, and their source."""

    positions: tuple[int, ...]
    words: tuple[tuple[int, int], ...]
    risky: tuple[tuple[int, int], ...]  # the key words that are risk terms (lexicon or meta keywords)
    source: str  # "keywords" (from the seed's meta) or "lexicon"


@dataclass(frozen=True, slots=True)
class Lexicon:
    """The bundled lexicon: word → kind (entity | action | stop), one longest-first pattern, its version."""

    kinds: dict[str, str]
    pattern: re.Pattern[str]
    version: str


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The bundled lexicon (``resources/safeqa/lexicon.json``), read once."""
    data = json.loads(resource_path("safeqa/lexicon.json").read_text(encoding="utf-8"))
    kinds = {w: "stop" for w in data["stop_words"]}
    kinds.update({w: "entity" for w in data["entities"]})
    kinds.update({w: "action" for w in data["actions"]})
    # alternatives longest first: at each position the regex takes the longest entry, as FMM does
    pattern = re.compile("|".join(map(re.escape, sorted(kinds, key=lambda w: (-len(w), w)))))
    return Lexicon(kinds, pattern, str(data["version"]))


def find_keys(query: SafeQuery) -> Keys:
    """The seed's key characters, key words and risk terms (see the module docstring)."""
    keywords = (query.meta or {}).get("keywords")
    if isinstance(keywords, list) and keywords:
        clean = tuple(k for k in keywords if isinstance(k, str) and k)
        if clean:
            found = _declared_keys(query.text, clean)
            if found.words:
                return found
    return _lexicon_keys(query.text)


@lru_cache(maxsize=4096)
def _declared_keys(text: str, keywords: tuple[str, ...]) -> Keys:
    spans = _occurrences(text, list(keywords))
    positions = sorted({i for start, end in spans for i in range(start, end)})
    return Keys(tuple(positions), tuple(spans), tuple(spans), "keywords")


@lru_cache(maxsize=4096)
def _lexicon_keys(text: str) -> Keys:
    lex = lexicon()
    words: list[tuple[int, int]] = []
    risky: list[tuple[int, int]] = []
    cursor = 0
    for match in lex.pattern.finditer(text):
        words += _gap_words(text, cursor, match.start())
        if lex.kinds[match.group()] != "stop":
            words.append(match.span())
            risky.append(match.span())
        cursor = match.end()
    words += _gap_words(text, cursor, len(text))
    words.sort()
    positions = [p for start, end in words for p in range(start, end)]
    return Keys(tuple(positions), tuple(words), tuple(risky), "lexicon")


def _gap_words(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Key words of the text between two lexicon matches (see the module docstring)."""
    gap = [i for i in range(start, end) if is_han(text[i]) and text[i] not in FUNCTION_CHARS]
    return _chunk(_runs(gap))


def _occurrences(text: str, keywords: list[str]) -> list[tuple[int, int]]:
    """Non-overlapping occurrences of the keywords, longest keyword first at each position."""
    spans: list[tuple[int, int]] = []
    taken = [False] * len(text)
    for word in sorted(set(keywords), key=len, reverse=True):
        start = text.find(word)
        while start != -1:
            end = start + len(word)
            if not any(taken[start:end]):
                spans.append((start, end))
                for i in range(start, end):
                    taken[i] = True
            start = text.find(word, start + 1)
    return sorted(spans)


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for pos in positions:
        if runs and runs[-1][1] == pos:
            runs[-1] = (runs[-1][0], pos + 1)
        else:
            runs.append((pos, pos + 1))
    return runs


def _chunk(runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    words: list[tuple[int, int]] = []
    for start, end in runs:
        length = end - start
        if length <= 3:
            words.append((start, end))
            continue
        cuts = list(range(start, end, 2))
        if length % 2:
            cuts.pop()  # the odd run ends with a three-character word
        for i, cut in enumerate(cuts):
            words.append((cut, cuts[i + 1] if i + 1 < len(cuts) else end))
    return words
