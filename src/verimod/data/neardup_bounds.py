"""Threshold arithmetic of the exact near-duplicate join, and why its filters lose no pair.

Notation: strings a, b with m = |a| ≤ n = |b| code points, L = m + n, Δ = n − m, threshold
t ∈ [0, 100]. RapidFuzz defines

    ratio(a, b) = 100 · (1 − d / L),    d = indel(a, b) = L − 2·LCS(a, b),    ratio("", "") = 100

and a pair is a near-duplicate when ratio ≥ t, i.e. when the integer d satisfies
d ≤ (1 − t/100)·L. We use the slightly looser integer bound

    D(L) = ⌊c·L + ε⌋,    c = (100 − t)/100 + ε,    ε = 1e-9,

which is never below the exact one and also covers the few ulps of rounding in RapidFuzz's
own floating-point comparison. A larger D can only admit more candidates (each is verified by
RapidFuzz itself), never lose a pair. D is nondecreasing and, for t ≥ :data:`MIN_FILTER_THRESHOLD`
(so c < 1), grows by at most 1 when L grows by 1.

Lemma 1 (length filter). LCS ≤ m, so d ≥ Δ and a near-duplicate pair has Δ ≤ D(m + n). As
n − m − D(m + n) is nondecreasing in n, the partners of a string of length m have lengths
≤ hi(m), and those of a string of length n have lengths ≥ lo(n), where

    hi(m) = max{n ≥ m : n − m ≤ D(m + n)} = ⌊(m(1 + c) + ε) / (1 − c)⌋,
    lo(n) = min{m ≤ n : n − m ≤ D(m + n)} = ⌈(n(1 − c) − ε) / (1 + c)⌉.

Lemma 2 (alignment, preserved and ruined grams). Fix an optimal alignment: an LCS as pairs of
matched positions, increasing in both strings. x = m − LCS characters of a and y = n − LCS of b
are unmatched, so d = x + y, y − x = Δ, x = (d − Δ)/2, y = (d + Δ)/2. For q ≥ 1, a string of
length m has T_q(m) = max(m − q + 1, 0) q-grams, each an occurrence at a text offset. The q-gram
of a at offset s is *preserved* when its q characters are matched to q consecutive characters
of b — which form a q-gram of b with the same value at an offset s'. Preserved grams of a and b
correspond one to one by an increasing map, and s' − s = (unmatched b characters before s') −
(unmatched a characters before s) ∈ [−x, y]. A gram of a that is not preserved (*ruined*)
contains an unmatched character of a — each of the x lies in at most q grams — or two adjacent
matched characters with b characters inserted between their images — at most y such places,
each inside at most q − 1 grams. So at most R_a = q·x + (q − 1)·y grams of a, and (the same
argument from b's side) R_b = q·y + (q − 1)·x grams of b, are ruined; and

    T_q(m) − R_a = T_q(n) − R_b = (L − (2q − 1)·d)/2 − (q − 1).

Lemma 3 (count filter). The preserved grams of a map to grams of b of the same value, so the
multiset overlap O_q = Σ_g min(#_a g, #_b g) ≥ T_q(m) − R_a, and with d ≤ D(L)

    O_q ≥ need_q(L) = ⌈(L − (2q − 1)·D(L)) / 2⌉ − (q − 1)

(for q = 1 the LCS bound ⌈(L − D(L))/2⌉, which is ≥ 1 for L ≥ 1 and t ≥ MIN_FILTER_THRESHOLD).
Merging values into classes (hashing, signature buckets) can only raise the overlap: the bound
holds for class overlaps too. For q ≥ 2, need_q is not monotone in L (it drops when D steps up),
so the filters use its lower envelope need*_q(L) = min{need_q(L') : L ≤ L' ≤ 2·longest}, which
is nondecreasing and never above need_q; for q = 1 they are equal.

Lemma 4 (the two parts). Let L_2 = min{L : need*_2(L) ≥ 1} (none when t < 200/3, where
1 − 3c ≤ 0). A pair with L ≥ L_2 has at least one preserved bigram; a pair with L < L_2 has
both lengths below L_2. So the character part (q = 1) joins the strings shorter than L_2 for
totals below L_2 — every pair of total L ≥ 1 has a preserved character — and the bigram part
(q = 2) joins all strings for totals from L_2 on: every qualifying pair lies in exactly one
part. Below t = 200/3 the character part covers everything.

Lemma 5 (first preserved gram: positions and offsets). Order the gram occurrences of every
string by (rank of the value, offset), one global rank per value (or per class of values) —
any ranking works; rarest first makes prefixes selective. For a qualifying pair with a
preserved gram, let g be the smallest value with a preserved occurrence in a, o_a its first
preserved occurrence in a (by offset) and o_b the image of o_a in b. Everything before o_a in
a's order is ruined: smaller values have no preserved occurrence, earlier occurrences of g were
not chosen. Everything before o_b in b's order is ruined too: a preserved occurrence in b of a
smaller value would be the image of one in a, and a preserved occurrence of g before o_b the
image of one in a before o_a (the map is increasing). Hence o_a has position i ≤ R_a in a's
order and o_b position j ≤ R_b in b's, that is, by Lemmas 2 and 3,

    need*_q(L) ≤ T_q(m) − i,    need*_q(L) ≤ T_q(n) − j,    Δ − D(L) ≤ 2·(s' − s) ≤ Δ + D(L).

Corollary (the prefixes indexed). As need*_q is nondecreasing, n ≥ m and m ≥ lo(n) (Lemma 1),
i < p_short(m) = T_q(m) − max(need*_q(2m), 1) + 1 and j < p_long(n) = T_q(n) −
max(need*_q(lo(n) + n), 1) + 1 (need*_q ≥ 1 in the part that uses q); and the partner length is
bounded by the probe's position: n ≤ reach(m, i) = max{n : need*_q(m + n) ≤ T_q(m) − i}.

So every near-duplicate pair is found by scanning, in its part, for each gram value g and each
occurrence of g at position i of a string a's long prefix, the occurrences of g at positions j
in the long prefixes of later strings b (in (length, id) order) with |b| ≤ min(hi(|a|),
reach(|a|, i)), and keeping those that pass the three tests of Lemma 5 and lie in the part's
range of totals. Below MIN_FILTER_THRESHOLD need_1(L) can be 0 (a pair with nothing in common
qualifies) and the caller compares every pair instead.
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
    """need_q(L) = ⌈(L − (2q − 1)·D(L))/2⌉ − (q − 1): the q-gram overlap every qualifying pair of
    total length L has (Lemma 3; ≤ 0 means no guarantee)."""
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
    min{need_q(L') : L ≤ L' ≤ 2·longest} (Lemma 3; equal to need_q itself for q = 1)."""
    need = min_overlap(np.arange(2 * longest + 1, dtype=np.int64), threshold, q)
    return np.minimum.accumulate(need[::-1])[::-1]


def first_guaranteed_total(table: IntArray) -> int:
    """L_q = the smallest total length whose pairs must have a preserved q-gram (table[L] ≥ 1,
    Lemma 4); ``len(table)`` when there is none."""
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
