"""Obfuscated copies: what teaches the classifiers to trust the robust views, and what the
model's robustness is checked with during development.

:func:`obfuscate` rewrites a seeded share of a text's *content* Han characters (not the
grammatical ones of :data:`FUNCTION_CHARS`) the way abusive comments are disguised online, with
verimod's baseline tables only (:mod:`~verimod.models.baseline.charmap`: pypinyin, OpenCC,
pycorrector's similar-shape groups, cjk-decomp, CLDR emoji names) — never the SafeQA
transformation tables with which robustness is finally measured:

- ``homophone``: another common character with the same toneless pinyin (``傻`` → ``沙``);
- ``glyph``: another member of one of the character's similar-shape groups (``黑`` → ``墨``);
- ``pinyin``: the syllable in Latin letters, space-separated from Latin neighbours (``傻`` → ``sha``);
- ``initials``: a run of two or three characters written as their initial letters (``你妈`` → ``nm``);
- ``split``: the character written as its two components (``骗`` → ``马扁``);
- ``emoji``: a character or two-character word whose CLDR Chinese name it is, as that emoji
  (``猪`` → ``🐖``);
- ``separator``: a separator (``*``, ``/``, ``·``, ``-``, ``_``, ``|``, a zero-width space) after the
  character, inside a word;
- ``traditional``: a Traditional form of the character (``盖`` → ``蓋``);
- ``mixed``: the toneless syllable glued to its Chinese neighbours (``傻逼`` → ``sha逼``).

Each chosen character (``rate`` of the eligible ones, at least one) gets one rewrite whose kind
is drawn from ``kinds`` (a kind with no rewrite for that character leaves it as it is); the
generator is ``random.Random(f"{seed}|{key}")``, so a text's copy depends only on the seed and
its key. Characters inside ``protected`` spans (the reference target) are never changed.
Common characters are those of GB 2312 level 1 (3,755), the pool homophones are drawn from.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from verimod.models.baseline.charmap import default_charmap, gb2312_hanzi, is_han

KINDS: Final = ("homophone", "glyph", "pinyin", "initials", "split", "emoji", "separator", "traditional", "mixed")
#: Grammatical characters that obfuscation leaves alone (particles, pronouns, auxiliaries …).
FUNCTION_CHARS: Final = frozenset(
    "的了吗呢吧啊呀哦嘛么之也我你他她它们这那哪是在有和与或就都还要会能可以不没很更最得地着过来去把被对给让从向到于而但"
)
SEPARATORS: Final = ("*", "/", "·", "-", "_", "|", "\u200b")
_SPACES: Final = re.compile(" {2,}")


@lru_cache(maxsize=1)
def _common() -> frozenset[str]:
    return frozenset(gb2312_hanzi(1))


@lru_cache(maxsize=1)
def _homophones() -> dict[str, tuple[str, ...]]:
    table = default_charmap()
    common = _common()
    by_syllable: dict[str, list[str]] = {}
    for ch, syllable in table.pinyin.items():
        if ch in common:
            by_syllable.setdefault(syllable, []).append(ch)
    return {
        ch: tuple(c for c in by_syllable[s] if c != ch)
        for ch, s in table.pinyin.items()
        if ch in common and len(by_syllable[s]) > 1
    }


@lru_cache(maxsize=1)
def _glyph_alternatives() -> dict[str, tuple[str, ...]]:
    table = default_charmap()
    members: dict[int, list[str]] = {}
    for ch, groups in table.glyph.items():
        for gid in groups:
            members.setdefault(gid, []).append(ch)
    return {
        ch: tuple(sorted({c for gid in groups for c in members[gid] if c != ch})) for ch, groups in table.glyph.items()
    }


@lru_cache(maxsize=1)
def _splits() -> dict[str, str]:
    return {made: pair for pair, made in sorted(default_charmap().compose.items())}


@lru_cache(maxsize=1)
def _emoji_for() -> dict[str, str]:
    """Word (one or two characters) -> the first emoji (code point order) with that CLDR name."""
    out: dict[str, str] = {}
    for symbol, name in sorted(default_charmap().emoji.items()):
        if 1 <= len(name) <= 2 and all(is_han(c) for c in name):
            out.setdefault(name, symbol)
    return out


@lru_cache(maxsize=1)
def _traditional() -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for trad, simp in sorted(default_charmap().t2s.items()):
        out.setdefault(simp, []).append(trad)
    return {k: tuple(v) for k, v in out.items()}


def eligible_positions(text: str, blocked: frozenset[int] | set[int] = frozenset()) -> list[int]:
    """Offsets of the content Han characters of ``text`` that obfuscation may change."""
    return [i for i, ch in enumerate(text) if is_han(ch) and ch not in FUNCTION_CHARS and i not in blocked]


def obfuscate(
    text: str,
    key: str,
    seed: int = 0,
    rate: float = 0.5,
    kinds: Sequence[str] = KINDS,
    protected: Sequence[tuple[int, int]] = (),
) -> str:
    """An obfuscated copy of ``text`` (module docstring); ``text`` itself when no content Han
    character may change."""
    unknown = set(kinds) - set(KINDS)
    if unknown or not kinds:
        raise ValueError(f"kinds must be among {', '.join(KINDS)}")
    rng = random.Random(f"{seed}|{key}")
    blocked = {i for a, b in protected for i in range(a, b)}
    eligible = eligible_positions(text, blocked)
    if not eligible:
        return text
    chosen = sorted(rng.sample(eligible, max(1, round(rate * len(eligible)))))
    pinyin = default_charmap().pinyin
    homophones, glyphs, splits = _homophones(), _glyph_alternatives(), _splits()
    emoji, traditional = _emoji_for(), _traditional()
    out = list(text)
    skip_until = -1
    for i in chosen:
        if i < skip_until:
            continue
        ch = text[i]
        kind = rng.choice(list(kinds))
        pair = text[i : i + 2] if i + 1 < len(text) and i + 1 not in blocked else ""
        if kind == "homophone" and homophones.get(ch):
            out[i] = rng.choice(homophones[ch])
        elif kind == "glyph" and glyphs.get(ch):
            out[i] = rng.choice(glyphs[ch])
        elif kind == "pinyin" and ch in pinyin:
            out[i] = f" {pinyin[ch]} "
        elif kind == "mixed" and ch in pinyin:
            out[i] = pinyin[ch]
        elif kind == "initials" and ch in pinyin:
            run = 1
            while run < 3 and i + run < len(text) and text[i + run] in pinyin and i + run not in blocked:
                run += 1
            letters = "".join(pinyin[text[k]][0] for k in range(i, i + run))
            out[i] = letters.upper() if rng.random() < 0.5 else letters
            for k in range(i + 1, i + run):
                out[k] = ""
            skip_until = i + run
        elif kind == "split" and ch in splits:
            out[i] = splits[ch]
        elif kind == "emoji" and (pair in emoji or ch in emoji):
            if pair in emoji:
                out[i], out[i + 1] = emoji[pair], ""
                skip_until = i + 2
            else:
                out[i] = emoji[ch]
        elif kind == "separator" and i + 1 < len(text) and is_han(text[i + 1]):
            out[i] = ch + rng.choice(SEPARATORS)
        elif kind == "traditional" and traditional.get(ch):
            out[i] = rng.choice(traditional[ch])
    return _SPACES.sub(" ", "".join(out)).strip() or text
