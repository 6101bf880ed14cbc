"""Repeated sentence frames: the character n-grams of text skeletons that many texts share.

Method (the definition every number of ``verimod data profile`` under "frames" follows):

1. Each text becomes its *skeleton* (:func:`verimod.data.profile_text.skeleton`): NFKC,
   case-folded, emoji and emoticon codes removed, its own reference target → ``Ⓣ``, digit runs →
   ``Ⓝ``, Latin-letter runs → ``Ⓛ``, whitespace removed. Content words are not masked (Chinese
   has no spaces to find them by): frames are literal characters around the masked slots, so a
   template such as "[target]就是…" shows up as ``Ⓣ就是``.
2. The *document frequency* df(g) of a character n-gram g (``min_n`` ≤ |g| ≤ ``max_n``, default
   3–6) is the number of skeletons containing g at least once.
3. A *frame* is an n-gram with df ≥ ``min_texts`` (default 2: repeated across texts) that holds
   at least one Han character and is *closed*: no n-gram one character longer that contains it
   has the same df (so "Ⓣ就是" and "Ⓣ就是个" are both listed only when the longer one does not
   cover every text of the shorter). Counting is exact; longer n-grams are counted only when both
   their (n−1)-gram prefix and suffix are repeated (a-priori pruning loses nothing: an n-gram's
   df is at most that of its parts).
4. Frames are ranked by df (descending), then length (longer first), then code points.

:func:`frame_share` gives the share of another collection's skeletons containing a frame, so
frames can be compared side by side across files.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from verimod.data.profile_text import has_han


@dataclass(frozen=True)
class Frame:
    """One repeated frame: the n-gram and the number of texts (skeletons) containing it."""

    frame: str
    texts: int


def _grams(skeleton: str, n: int) -> set[str]:
    return {skeleton[i : i + n] for i in range(len(skeleton) - n + 1)}


def document_frequencies(
    skeletons: Sequence[str], min_n: int = 3, max_n: int = 6, min_texts: int = 2
) -> dict[str, int]:
    """df of every n-gram (``min_n`` ≤ n ≤ ``max_n``) found in at least ``min_texts`` skeletons
    (the a-priori counting of the module docstring)."""
    if not 1 <= min_n <= max_n:
        raise ValueError(f"need 1 ≤ min_n ≤ max_n, got {min_n}, {max_n}")
    if min_texts < 1:
        raise ValueError(f"min_texts must be at least 1, got {min_texts}")
    counts: Counter[str] = Counter()
    for text in skeletons:
        counts.update(_grams(text, min_n))
    repeated = {g: c for g, c in counts.items() if c >= min_texts}
    frequent = dict(repeated)
    for n in range(min_n + 1, max_n + 1):
        if not repeated:
            break
        counts = Counter()
        for text in skeletons:
            counts.update(g for g in _grams(text, n) if g[:-1] in repeated and g[1:] in repeated)
        repeated = {g: c for g, c in counts.items() if c >= min_texts}
        frequent.update(repeated)
    return frequent


def repeated_frames(
    skeletons: Sequence[str],
    top: int = 10,
    min_n: int = 3,
    max_n: int = 6,
    min_texts: int = 2,
    containing: str | None = None,
) -> list[Frame]:
    """The ``top`` closed frames holding a Han character (and ``containing``, when given, e.g.
    the target slot ``Ⓣ``), ranked as in the module docstring."""
    frequent = document_frequencies(skeletons, min_n, max_n, min_texts)
    closed = set(frequent)
    for gram, count in frequent.items():
        if len(gram) > min_n:
            for part in (gram[:-1], gram[1:]):
                if frequent.get(part) == count:
                    closed.discard(part)
    wanted = (g for g in closed if has_han(g) and (containing is None or containing in g))
    ranked = sorted(wanted, key=lambda g: (-frequent[g], -len(g), g))
    return [Frame(g, frequent[g]) for g in ranked[:top]]


def frame_share(frame: str, skeletons: Sequence[str]) -> tuple[int, int]:
    """``(texts containing frame, texts)`` over ``skeletons``."""
    return sum(1 for s in skeletons if frame in s), len(skeletons)
