"""Character-level overlap F1 for Chinese referents (no whitespace tokenisation).

Normalisation (:func:`normalize_for_char_f1`): Unicode NFKC, lower-casing, then removal of
every whitespace character and every character whose Unicode general category is
punctuation (P*) or symbol (S*).

:func:`char_f1` on the normalised strings p and r, treated as character multisets:
    common = Σ_ch min(count_p(ch), count_r(ch))
    P = common / |p|,  R = common / |r|,  F1 = 2PR / (P + R)
Edge cases: both normalised strings empty → 1.0; exactly one empty → 0.0; common = 0 → 0.0.

>>> char_f1("小县城公务员", "县城公务员们")
0.8333333333333334
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from functools import lru_cache


@lru_cache(maxsize=1 << 16)
def normalize_for_char_f1(text: str) -> str:
    """NFKC, lower-case, drop whitespace and P*/S* characters (cached: referents repeat)."""
    lowered = unicodedata.normalize("NFKC", text).lower()
    return "".join(ch for ch in lowered if not ch.isspace() and unicodedata.category(ch)[0] not in "PS")


def char_f1(pred: str, ref: str) -> float:
    """Normalised character-multiset F1 of ``pred`` against ``ref`` (see the module docstring)."""
    p = normalize_for_char_f1(pred)
    r = normalize_for_char_f1(ref)
    if p == r:
        return 1.0
    if not p or not r:
        return 0.0
    common = sum((Counter(p) & Counter(r)).values())
    if common == 0:
        return 0.0
    precision = common / len(p)
    recall = common / len(r)
    return 2 * precision * recall / (precision + recall)
