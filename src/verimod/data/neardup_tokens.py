"""Occurrence tokens, prefixes and count signatures of the near-duplicate join (private helper).

Input: distinct strings ranked by (length, first occurrence). Vectorised with numpy and done in
blocks of strings, so memory stays proportional to a block plus the (small) prefixes.

Occurrence tokens. A string is the set of its tokens (x, k): the k-th occurrence (k = 0, 1, …) of
character x. Two strings share Σ_x min(#_a x, #_b x) tokens: their multiset overlap.

Global order. Characters are ranked by total frequency over all strings, rarest first (ties by
code point); tokens are ordered by (rank of x, k). Any fixed total order makes the prefix filter
correct (:mod:`.neardup_bounds`, Lemma 3); a rarest-first one makes prefixes selective. Sorting
each string's code points by (rank, code point) lists its tokens in that order, k counting the
repeats of a character.

Prefixes. The first p_long(m) tokens of each string are indexed with their positions.

Count signatures. sig[s, h] = the number of characters x of string s with rank(x) mod H = h.
Merging characters into H buckets can only raise the overlap, so for every pair

    O(a, b) = Σ_x min(#_a x, #_b x) ≤ Σ_h min(sig[a, h], sig[b, h]),

and a pair whose bucket bound is below need(|a| + |b|) cannot qualify (Lemma 2). Consecutive
ranks fall in different buckets, so the rare characters that tell strings apart rarely collide.
The coarse signature merges buckets h ≡ h' (mod 16): a weaker bound, cheaper to evaluate.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from verimod.data.neardup_bounds import prefix_lengths

IntArray: TypeAlias = npt.NDArray[np.int64]
Signatures: TypeAlias = npt.NDArray[np.unsignedinteger]

_CODE_SPACE = 0x110000  # every code point, lone surrogates included, is below this
_RANK_BITS = 21
_RANK_MASK = (1 << _RANK_BITS) - 1
#: Buckets of the count signature (H), and of the coarse signature (a divisor of H).
BUCKETS = 128
COARSE_BUCKETS = 16
#: A block holds at most this many characters and strings.
BLOCK_CHARS = 1 << 22
BLOCK_STRINGS = 1 << 15


@dataclass(frozen=True)
class PrefixIndex:
    """Prefix entries sorted by ``key = token·n_strings + string`` (token, then string rank), with
    the token's 0-based ``position`` in its string's token list; ``signature`` has a row per string."""

    key: IntArray
    string: IntArray
    position: IntArray
    signature: Signatures
    coarse: Signatures


def codepoints(strings: Sequence[str]) -> npt.NDArray[np.uint32]:
    """All code points of all strings, concatenated (lone surrogates kept as code points)."""
    data = "".join(strings).encode("utf-32-le", "surrogatepass")
    return np.frombuffer(data, dtype="<u4")


def _blocks(lengths: IntArray) -> Iterator[tuple[int, int]]:
    """Consecutive rank ranges [start, stop) of ≤ BLOCK_STRINGS strings and about ≤ BLOCK_CHARS
    characters (a longer string gets a block of its own)."""
    ends = np.cumsum(lengths)
    start = 0
    while start < len(lengths):
        base = int(ends[start - 1]) if start else 0
        stop = int(np.searchsorted(ends, base + BLOCK_CHARS, side="right"))
        stop = min(max(stop, start + 1), start + BLOCK_STRINGS)
        yield start, stop
        start = stop


def _char_ranks(strings: Sequence[str], blocks: list[tuple[int, int]]) -> IntArray:
    """rank[code point]: characters by total frequency, rarest first, ties by code point."""
    frequency = np.zeros(_CODE_SPACE, dtype=np.int64)
    for start, stop in blocks:
        frequency += np.bincount(codepoints(strings[start:stop]), minlength=_CODE_SPACE)
    present = np.flatnonzero(frequency)
    rank = np.zeros(_CODE_SPACE, dtype=np.int64)
    rank[present[np.argsort(frequency[present], kind="stable")]] = np.arange(len(present), dtype=np.int64)
    return rank


def _sorted_tokens(strings: Sequence[str], lengths: IntArray, rank: IntArray) -> tuple[IntArray, ...]:
    """Per character occurrence, each string's tokens in global order: arrays (owner, character
    rank, occurrence k, position in the string's token list)."""
    total = int(lengths.sum())
    owner = np.repeat(np.arange(len(strings), dtype=np.int64), lengths)
    key = owner << _RANK_BITS
    key |= rank[codepoints(strings)]
    key.sort()  # within each string's block, as the owner is the high part
    char = key & _RANK_MASK
    first = np.empty(total, dtype=np.bool_)
    first[:1] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    run_start = np.flatnonzero(first)
    run_length = np.diff(np.append(run_start, total))
    index = np.arange(total, dtype=np.int64)
    occurrence = index - np.repeat(run_start, run_length)
    position = index - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return owner, char, occurrence, position


def _count_dtype(lengths: IntArray) -> type[np.unsignedinteger]:
    """The smallest unsigned type holding any bucket count (≤ the longest length)."""
    longest = int(lengths.max()) if len(lengths) else 0
    for dtype in (np.uint8, np.uint16, np.uint32):
        if longest <= np.iinfo(dtype).max:
            return dtype
    return np.uint64


def _bucket_counts(owner: IntArray, char: IntArray, n_strings: int) -> IntArray:
    """sig rows of one block: counts of characters per bucket (rank mod BUCKETS)."""
    flat = np.bincount(owner * BUCKETS + char % BUCKETS, minlength=n_strings * BUCKETS)
    return flat.reshape(n_strings, BUCKETS)


def build_prefix_index(strings: Sequence[str], lengths: IntArray, threshold: float) -> PrefixIndex:
    """The long-prefix entries of every string and the count signatures; ``lengths`` ascending,
    ``threshold`` at least MIN_FILTER_THRESHOLD."""
    count = len(strings)
    p_long = prefix_lengths(lengths, threshold)[1]
    blocks = list(_blocks(lengths))
    rank = _char_ranks(strings, blocks)
    signature = np.zeros((count, BUCKETS), dtype=_count_dtype(lengths))
    owners, tokens, positions = [], [], []
    for start, stop in blocks:
        owner, char, occurrence, position = _sorted_tokens(strings[start:stop], lengths[start:stop], rank)
        signature[start:stop] = _bucket_counts(owner, char, stop - start)
        owner += start
        keep = position < p_long[owner]
        owners.append(owner[keep])
        tokens.append((char[keep] << 32) | occurrence[keep])
        positions.append(position[keep])
    string = np.concatenate(owners) if owners else np.zeros(0, dtype=np.int64)
    raw = np.concatenate(tokens) if tokens else np.zeros(0, dtype=np.int64)
    position = np.concatenate(positions) if positions else np.zeros(0, dtype=np.int64)
    token = np.unique(raw, return_inverse=True)[1].astype(np.int64).reshape(-1)
    key = token * count + string
    order = np.argsort(key)
    coarse = signature.reshape(count, BUCKETS // COARSE_BUCKETS, COARSE_BUCKETS).sum(axis=1, dtype=signature.dtype)
    return PrefixIndex(
        key=key[order], string=string[order], position=position[order], signature=signature, coarse=coarse
    )
