"""Gram tokens, prefixes and count signatures of the near-duplicate join (private helper).

Input: distinct strings ranked by (length, first occurrence). Vectorised with numpy and done in
blocks of strings, so memory stays proportional to a block plus the prefixes.

Grams. A string of length m has T_q(m) = max(m − q + 1, 0) q-grams: its characters (q = 1) or
its bigrams (q = 2), each an *occurrence* at a text offset (the offset of its first character).
Two strings share Σ_g min(#_a g, #_b g) grams: their multiset overlap.

Global order. Character values are ranked by total frequency over all strings, rarest first
(ties by code point); bigram values are hashed into classes ranked by (bit length of their total
frequency, class): rarest first up to a factor of two, without sorting the bigrams.
Occurrences are ordered by (rank of the value, text offset). Any fixed ranking of values makes
the filters correct (:mod:`.neardup_bounds`, Lemma 5); rarest first makes prefixes selective.
Ordering the occurrences of one value by offset is what Lemma 5 needs: an alignment is
monotone, so the first preserved occurrence of a value in a is aligned with the first preserved
occurrence of that value in b.

Prefixes. The first p_long occurrences of each string (in global order) are indexed with their
position in that order and their text offset.

Count signatures. sig[s, h] = the number of grams of string s whose rank is h mod H. Merging
values into H buckets can only raise the overlap, so for every pair

    O(a, b) = Σ_g min(#_a g, #_b g) ≤ Σ_h min(sig[a, h], sig[b, h]),

and a pair whose bucket bound is below need_q(|a| + |b|) cannot qualify (Lemma 3).
Consecutive ranks fall in different buckets, so the rare grams that tell strings apart rarely
collide. The coarse signature merges buckets h ≡ h' (mod 16): a weaker bound, cheaper to test.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from verimod.data.neardup_bounds import prefix_lengths, token_counts

IntArray: TypeAlias = npt.NDArray[np.int64]
#: Integer arrays of any width (int32 for compact per-entry data).
Ints: TypeAlias = npt.NDArray[np.signedinteger[Any]]
Signatures: TypeAlias = npt.NDArray[np.unsignedinteger]

_CODE_SPACE = 0x110000  # every code point, lone surrogates included, is below this
#: Buckets of the count signature (H), and of the coarse signature (a divisor of H).
BUCKETS = 128
COARSE_BUCKETS = 16
#: A block holds at most this many characters and strings.
BLOCK_CHARS = 1 << 22
BLOCK_STRINGS = 1 << 15
#: Gram sizes the index supports.
GRAM_SIZES = (1, 2)


@dataclass(frozen=True)
class PrefixIndex:
    """Prefix entries sorted by ``key = rank·n_strings + string`` (gram value, then string rank),
    each with its 0-based ``position`` in its string's gram order and its text ``offset``;
    ``signature`` has ``n_strings`` rows."""

    n_strings: int
    key: IntArray
    string: Ints
    position: Ints
    offset: Ints
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


@dataclass(frozen=True)
class _Grams:
    """The q-grams of a block of strings in text order: ``owner`` (index in the block), ``value``
    (the character rank for q = 1; rank(x)·_CODE_SPACE + rank(y), or its class, for q = 2) and
    text ``offset``."""

    owner: IntArray
    value: Ints
    offset: IntArray


def _layout(lengths: IntArray, q: int) -> tuple[IntArray, IntArray, IntArray]:
    """Where the q-grams of a block are: (owner, offset) of each, and the index of its first
    character in the block's concatenated text."""
    owner = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    offset = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    if q == 1:
        return owner, offset, np.arange(len(owner), dtype=np.int64)
    start = np.flatnonzero(offset < np.repeat(lengths, lengths) - (q - 1))
    return owner[start], offset[start], start


def _grams(strings: Sequence[str], lengths: IntArray, char_rank: IntArray, q: int) -> _Grams:
    owner, offset, start = _layout(lengths, q)
    ranks = char_rank[codepoints(strings)]
    value = ranks if q == 1 else ranks[start] * _CODE_SPACE + ranks[start + 1]
    return _Grams(owner, value, offset)


@dataclass(frozen=True)
class _BigramClasses:
    """Bigram values hashed into 2^bits classes, and each class's frequency as its bit length
    (0 for none, 1 for one occurrence, 2 for two or three, …). A class stands for the values
    hashed to it (merging values only raises overlaps: Lemmas 3 and 5 still hold); its rank
    is (frequency bits, class), so the global order is rarest first up to a factor of two."""

    bits: int
    frequency_bits: npt.NDArray[np.uint8]

    def rank(self, cls: npt.NDArray[np.int32]) -> IntArray:
        """The rank of each class: (frequency bits) · 2^bits + class."""
        return (self.frequency_bits[cls].astype(np.int64) << self.bits) | cls


def _hash_classes(value: IntArray, bits: int) -> npt.NDArray[np.int32]:
    """The class of each bigram value (Fibonacci hashing: the top bits of value·φ·2^64)."""
    mixed = value.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return (mixed >> np.uint64(64 - bits)).astype(np.int32)


def _bigram_classes(
    strings: Sequence[str], lengths: IntArray, char_rank: IntArray, blocks: list[tuple[int, int]]
) -> tuple[_BigramClasses, list[npt.NDArray[np.int32]]]:
    """The classes of every bigram, block by block, and their frequencies (bits: about log2 of
    the number of bigrams, between 16 and 24, so that few distinct values share a class)."""
    total = int(np.maximum(lengths - 1, 0).sum())
    bits = min(max(total.bit_length(), 16), 24)
    classes = [
        _hash_classes(_grams(strings[start:stop], lengths[start:stop], char_rank, 2).value, bits)
        for start, stop in blocks
    ]
    counts = np.bincount(np.concatenate([np.zeros(0, dtype=np.int32), *classes]), minlength=1 << bits)
    return _BigramClasses(bits, np.frexp(counts.astype(np.float64))[1].astype(np.uint8)), classes


def _in_global_order(grams: _Grams, rank: IntArray, tokens: IntArray) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """Each string's grams in global order: arrays (owner, rank, offset, position in the string's
    order), from the grams of a block in text order (``tokens`` grams per string)."""
    position = np.arange(len(rank), dtype=np.int64) - np.repeat(np.cumsum(tokens) - tokens, tokens)
    if not len(rank):
        return grams.owner, rank, grams.offset, position
    rank_bits = max(int(rank.max()).bit_length(), 1)
    offset_bits = max(int(grams.offset.max()).bit_length(), 1)
    if int(grams.owner[-1]).bit_length() + rank_bits + offset_bits <= 63:  # one key: sort, then decode
        key = (((grams.owner << rank_bits) | rank) << offset_bits) | grams.offset
        key.sort()
        offset = key & ((1 << offset_bits) - 1)
        key >>= offset_bits
        return key >> rank_bits, key & ((1 << rank_bits) - 1), offset, position
    order = np.argsort((grams.owner << rank_bits) | rank, kind="stable")  # stable: offsets stay ascending
    return grams.owner[order], rank[order], grams.offset[order], position


def _count_dtype(lengths: IntArray) -> type[np.unsignedinteger]:
    """The smallest unsigned type holding any bucket count (≤ the longest length)."""
    longest = int(lengths.max()) if len(lengths) else 0
    for dtype in (np.uint8, np.uint16, np.uint32):
        if longest <= np.iinfo(dtype).max:
            return dtype
    return np.uint64


def _bucket_counts(owner: IntArray, rank: IntArray, n_strings: int) -> IntArray:
    """sig rows of one block: counts of grams per bucket (rank mod BUCKETS)."""
    flat = np.bincount(owner * BUCKETS + rank % BUCKETS, minlength=n_strings * BUCKETS)
    return flat.reshape(n_strings, BUCKETS)


def build_prefix_index(
    strings: Sequence[str], lengths: IntArray, threshold: float, q: int = 1, table: IntArray | None = None
) -> PrefixIndex:
    """The long-prefix entries of every string over its q-grams (q = 1: characters, q = 2:
    bigrams) and its count signatures; ``lengths`` ascending, ``threshold`` at least
    MIN_FILTER_THRESHOLD, ``table`` the :func:`~.neardup_bounds.overlap_table` for ``q``."""
    if q not in GRAM_SIZES:
        raise ValueError(f"q must be one of {GRAM_SIZES}, got {q}")
    count = len(strings)
    tokens = token_counts(lengths, q)
    p_long = prefix_lengths(lengths, threshold, q, table)[1]
    blocks = list(_blocks(lengths))
    char_rank = _char_ranks(strings, blocks)
    bigrams, classes = _bigram_classes(strings, lengths, char_rank, blocks) if q == 2 else (None, [])
    signature = np.zeros((count, BUCKETS), dtype=_count_dtype(lengths))
    owners, ranks, positions, offsets = [], [], [], []
    for number, (start, stop) in enumerate(blocks):
        if bigrams is None:
            grams = _grams(strings[start:stop], lengths[start:stop], char_rank, q)
            rank = grams.value
        else:
            owner, offset, _ = _layout(lengths[start:stop], q)
            grams = _Grams(owner, classes[number], offset)
            rank = bigrams.rank(classes[number])
            classes[number] = classes[number][:0]  # free it
        owner, rank, offset, position = _in_global_order(grams, rank, tokens[start:stop])
        signature[start:stop] = _bucket_counts(owner, rank, stop - start)
        owner += start
        keep = position < p_long[owner]
        owners.append(owner[keep].astype(np.int32))  # ranks are below 2^21 (q = 1) or 2^29 (q = 2),
        ranks.append(rank[keep].astype(np.int32))  # positions and offsets below the longest length
        positions.append(position[keep].astype(np.int32))
        offsets.append(offset[keep].astype(np.int32))
    empty = np.zeros(0, dtype=np.int32)
    string = np.concatenate([empty, *owners])
    key = np.concatenate([empty, *ranks]).astype(np.int64) * count + string
    order = np.argsort(key)
    position = np.concatenate([empty, *positions])
    offset = np.concatenate([empty, *offsets])
    return PrefixIndex(
        n_strings=count,
        key=key[order],
        string=string[order],
        position=position[order],
        offset=offset[order],
        signature=signature,
        coarse=coarsen(signature),
    )


def coarsen(signature: Signatures) -> Signatures:
    """The coarse signature: buckets h ≡ h' (mod COARSE_BUCKETS) merged."""
    rows = len(signature)
    return signature.reshape(rows, BUCKETS // COARSE_BUCKETS, COARSE_BUCKETS).sum(axis=1, dtype=signature.dtype)


def char_signatures(strings: Sequence[str], lengths: IntArray) -> Signatures:
    """The character (q = 1) count signature of every string (rows in rank order)."""
    blocks = list(_blocks(lengths))
    char_rank = _char_ranks(strings, blocks)
    signature = np.zeros((len(strings), BUCKETS), dtype=_count_dtype(lengths))
    for start, stop in blocks:
        grams = _grams(strings[start:stop], lengths[start:stop], char_rank, 1)
        signature[start:stop] = _bucket_counts(grams.owner, grams.value, stop - start)
    return signature
