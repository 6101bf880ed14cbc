"""Obfuscated training copies: what teaches the label classifier to trust the robust views.

:func:`obfuscate` rewrites a seeded share of a text's Han characters the way abusive comments
are disguised online, with the bundled tables of :mod:`~verimod.models.baseline.charmap` only
(never the SafeQA transformation tables with which robustness is measured):

- ``homophone``: another common character with the same toneless pinyin (``傻`` → ``沙``);
- ``glyph``: another member of one of the character's similar-shape groups (``黑`` → ``墨``);
- ``pinyin``: the syllable in Latin letters, space-separated from Latin neighbours (``傻`` → ``sha``);
- ``initials``: a run of two or three characters written as their initial letters (``你妈`` → ``nm``).

Each chosen character (``rate`` of the eligible ones, at least one) gets one rewrite whose kind
is drawn from ``kinds``; the generator is ``random.Random(f"{seed}|{key}")``, so a text's copy
depends only on the seed and its key. Characters inside ``protected`` spans (the reference
target) are never changed. Common characters are those of GB 2312 level 1 (3,755), the pool
from which homophones are drawn.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from verimod.models.baseline.charmap import default_charmap, is_han

KINDS: Final = ("homophone", "glyph", "pinyin", "initials")
_SPACES: Final = re.compile(" {2,}")


@lru_cache(maxsize=1)
def _common() -> frozenset[str]:
    chars = []
    for high in range(0xB0, 0xD8):
        for low in range(0xA1, 0xFF):
            try:
                chars.append(bytes((high, low)).decode("gb2312"))
            except UnicodeDecodeError:
                continue
    return frozenset(chars)


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


def obfuscate(
    text: str,
    key: str,
    seed: int = 0,
    rate: float = 0.5,
    kinds: Sequence[str] = KINDS,
    protected: Sequence[tuple[int, int]] = (),
) -> str:
    """An obfuscated copy of ``text`` (module docstring); ``text`` itself when no Han
    character may change."""
    rng = random.Random(f"{seed}|{key}")
    blocked = {i for a, b in protected for i in range(a, b)}
    eligible = [i for i, ch in enumerate(text) if is_han(ch) and i not in blocked]
    if not eligible:
        return text
    chosen = sorted(rng.sample(eligible, max(1, round(rate * len(eligible)))))
    pinyin = default_charmap().pinyin
    homophones, glyphs = _homophones(), _glyph_alternatives()
    out = list(text)
    skip_until = -1
    for i in chosen:
        if i < skip_until:
            continue
        ch = text[i]
        kind = rng.choice(list(kinds))
        if kind == "homophone" and homophones.get(ch):
            out[i] = rng.choice(homophones[ch])
        elif kind == "glyph" and glyphs.get(ch):
            out[i] = rng.choice(glyphs[ch])
        elif kind == "pinyin" and ch in pinyin:
            out[i] = f" {pinyin[ch]} "
        elif kind == "initials" and ch in pinyin:
            run = 1
            while run < 3 and i + run < len(text) and text[i + run] in pinyin and i + run not in blocked:
                run += 1
            out[i] = "".join(pinyin[text[k]][0] for k in range(i, i + run))
            for k in range(i + 1, i + run):
                out[k] = ""
            skip_until = i + run
    return _SPACES.sub(" ", "".join(out)).strip() or text
