"""Threshold arithmetic of the exact near-duplicate join (private helper of :mod:`.neardup`).

Notation: strings a, b with m = |a| ≤ n = |b| code points, L = m + n, threshold t ∈ [0, 100].
RapidFuzz defines

    ratio(a, b) = 100 · (1 − d / L),    d = indel(a, b) = L − 2·LCS(a, b),    ratio("", "") = 100

and a pair is a near-duplicate when ratio ≥ t, i.e. when the integer d satisfies
d ≤ (1 − t/100)·L. We use the slightly looser integer bound

    D(L) = ⌊c·L + ε⌋,    c = (100 − t)/100 + ε,    ε = 1e-9,

which is never below the exact one and also covers the few ulps of rounding in RapidFuzz's
own floating-point comparison. A larger D can only admit more candidates (each is verified by
RapidFuzz itself), never lose a pair. D is nondecreasing and, for t ≥ :data:`MIN_FILTER_THRESHOLD`
(so c < 1), grows by at most 1 when L grows by 1.

Lemma 1 (length filter). LCS ≤ m, so d = L − 2·LCS ≥ n − m and a near-duplicate pair has
n − m ≤ D(m + n). Because n − m − D(m + n) is
nondecreasing in n, the partners of a string of length m have lengths ≤ hi(m), and the
partners of a string of length n have lengths ≥ lo(n), where

    hi(m) = max{n ≥ m : n − m ≤ D(m + n)} = ⌊(m(1 + c) + ε) / (1 − c)⌋,
    lo(n) = min{m ≤ n : n − m ≤ D(m + n)} = ⌈(n(1 − c) − ε) / (1 + c)⌉.

Lemma 2 (count filter). Write a and b as sets of *occurrence tokens* (x, k): the k-th
occurrence of character x. Their overlap O = |A ∩ B| = Σ_x min(#_a x, #_b x) bounds the LCS
(a common subsequence matches equal characters, at most min(#_a x, #_b x) of each x), so
d = L − 2·LCS ≥ L − 2·O and a near-duplicate pair has

    O ≥ need(L) = ⌈(L − D(L)) / 2⌉ ≥ 1    (for L ≥ 1 and t ≥ MIN_FILTER_THRESHOLD).

need is nondecreasing in L because L − D(L) is.

Lemma 3 (prefix filter). Fix one global total order of tokens. If |A ∩ B| ≥ o ≥ 1, the first
|A| − o + 1 tokens of A and the first |B| − o + 1 tokens of B (in that order) share a token.
Proof: let x be the smallest token of A ∩ B. All o' ≥ o common tokens are ≥ x and lie in A,
so at most |A| − o' tokens of A precede x and x is within A's first |A| − o + 1; same for B.

Corollary (the prefixes we index). For a pair with m ≤ n, o = need(m + n) ≥ need(2m) (as
n ≥ m) and o ≥ need(lo(n) + n) (as m ≥ lo(n) by Lemma 1), hence the shared token x lies in
the *short prefix* of a and in the *long prefix* of b:

    p_short(m) = m − need(2m) + 1,    p_long(n) = n − need(lo(n) + n) + 1    (p_short ≤ p_long).

Lemma 4 (positions). For a qualifying pair (m ≤ n), let x be the first common token in the
global order, at 0-based positions i in a's sorted token list and j in b's. All O ≥ need(m + n)
common tokens lie at positions ≥ i in a and ≥ j in b, so

    need(m + n) ≤ min(m − i, n − j).

Hence (x, i, j) satisfies i ≤ m − need(2m) < p_short(m) and j ≤ n − need(lo(n) + n) < p_long(n)
(the corollary), and more sharply the partner length is bounded by the probe's position:
n ≤ reach(m, i) = max{n : need(m + n) ≤ m − i}.

So every near-duplicate pair is found by scanning, for each token x and each string a holding x
at position i of its long prefix, the later strings b (in (length, id) order) holding x in their
long prefix at a position j, with |b| ≤ min(hi(|a|), reach(|a|, i)), and keeping those with
need(|a| + |b|) ≤ |b| − j. Below MIN_FILTER_THRESHOLD need(L) can be 0 (a pair with nothing in
common qualifies) and the caller compares every pair instead.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

IntArray: TypeAlias = npt.NDArray[np.int64]

#: Slack added to the distance bound; far above RapidFuzz's rounding (≈ 1e-16·L), far below 1.
EPSILON = 1e-9
#: Below this threshold the prefix filter is void (need(L) may be 0): compare every pair.
MIN_FILTER_THRESHOLD = 1e-6


def check_threshold(threshold: float) -> float:
    """``threshold`` as a float, or ValueError unless it is a finite number in [0, 100]."""
    value = float(threshold)
    if not 0.0 <= value <= 100.0:  # also rejects NaN
        raise ValueError(f"threshold must be a number in [0, 100], got {threshold!r}")
    return value


def slope(threshold: float) -> float:
    """c = (100 − t)/100 + ε, the slope of the distance bound D(L) = ⌊c·L + ε⌋."""
    return (100.0 - threshold) / 100.0 + EPSILON


def max_indel(total: IntArray, threshold: float) -> IntArray:
    """D(L) = ⌊c·L + ε⌋: no pair of total length L with a larger indel distance reaches t."""
    return np.floor(total * slope(threshold) + EPSILON).astype(np.int64)


def min_overlap(total: IntArray, threshold: float, q: int = 1) -> IntArray:
    """need_q(L) = ⌈(L − (2q − 1)·D(L))/2⌉ − (q − 1): the q-gram token overlap every qualifying
    pair of total length L has (Lemma 2 for q = 1, Lemma 5 for q ≥ 2; ≤ 0 means no guarantee)."""
    return (total - (2 * q - 1) * max_indel(total, threshold) + 1) // 2 - (q - 1)


def _fits(short: IntArray, long: IntArray, threshold: float) -> npt.NDArray[np.bool_]:
    """Lemma 1's test n − m ≤ D(m + n), elementwise."""
    return long - short <= max_indel(short + long, threshold)


def max_partner_length(lengths: IntArray, threshold: float, cap: int) -> IntArray:
    """min(hi(m), cap) for each m: the longest partner length Lemma 1 allows, capped."""
    c = slope(threshold)
    m = lengths.astype(np.int64)
    guess = np.floor(np.minimum((m * (1 + c) + EPSILON) / (1 - c), float(cap)))
    hi = np.maximum(guess.astype(np.int64), m)
    while True:  # floating-point estimate: correct it against the exact integer test
        over = (hi > m) & ~_fits(m, hi, threshold)
        if not over.any():
            break
        hi[over] -= 1
    while True:
        under = (hi < cap) & _fits(m, hi + 1, threshold)
        if not under.any():
            break
        hi[under] += 1
    return np.minimum(hi, cap)


def min_partner_length(lengths: IntArray, threshold: float) -> IntArray:
    """lo(n) for each n: the shortest partner length Lemma 1 allows."""
    c = slope(threshold)
    n = lengths.astype(np.int64)
    guess = np.ceil((n * (1 - c) - EPSILON) / (1 + c))
    lo = np.clip(guess.astype(np.int64), 0, n)
    while True:
        over = (lo < n) & ~_fits(lo, n, threshold)
        if not over.any():
            break
        lo[over] += 1
    while True:
        under = (lo > 0) & _fits(lo - 1, n, threshold)
        if not under.any():
            break
        lo[under] -= 1
    return lo


def token_counts(lengths: IntArray, q: int = 1) -> IntArray:
    """T_q(m) = max(m − q + 1, 0): the number of q-gram tokens of a string of length m."""
    return np.maximum(lengths.astype(np.int64) - (q - 1), 0)


def overlap_table(longest: int, threshold: float, q: int = 1) -> IntArray:
    """need*_q(L) for L = 0, 1, …, 2·longest: the nondecreasing lower envelope
    min{need_q(L') : L ≤ L' ≤ 2·longest} (Lemma 6; equal to need_q itself for q = 1)."""
    need = min_overlap(np.arange(2 * longest + 1, dtype=np.int64), threshold, q)
    return np.minimum.accumulate(need[::-1])[::-1]


def first_guaranteed_total(table: IntArray) -> int:
    """L_q = the smallest total length whose pairs must share a q-gram token (table[L] ≥ 1);
    ``len(table)`` when there is none."""
    return int(np.searchsorted(table, 1, side="left"))


def prefix_lengths(
    lengths: IntArray, threshold: float, q: int = 1, table: IntArray | None = None
) -> tuple[IntArray, IntArray]:
    """(p_short, p_long) for each length, clipped to [0, T_q(length)] (see the module docstring).

    ``table`` is :func:`overlap_table` for ``q`` up to at least twice the longest length."""
    m = lengths.astype(np.int64)
    if table is None:
        table = overlap_table(int(m.max()) if len(m) else 0, threshold, q)
    tokens = token_counts(m, q)
    short = tokens - np.maximum(table[2 * m], 1) + 1
    long = tokens - np.maximum(table[min_partner_length(m, threshold) + m], 1) + 1
    return np.clip(short, 0, tokens), np.clip(long, 0, tokens)


def max_total(table: IntArray, budget: IntArray) -> IntArray:
    """The largest total length L in ``table`` with need(L) ≤ budget (−1 when there is none)."""
    return np.searchsorted(table, budget, side="right").astype(np.int64) - 1
