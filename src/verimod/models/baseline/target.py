"""Target extraction at prediction time: the span scorer and the implicit-target map.

**Candidates** are the substrings of the input of 1 to ``max_len`` characters made of
letters, digits and marks (``、`` and ``·`` allowed inside): no punctuation, whitespace or
symbol, so a target never contains a bracket. A candidate is *admissible* when the anchor
parser reads ``[T: span]`` back as exactly ``span`` (not a ``no_clear_target`` alias such as
``无`` or ``none``).

**Span scorer.** The score of ``text[i:j]`` is the sum of the weights of its binary features
(:class:`SpanFeatures`): its start (the two characters before it, its first character and
first two), its end (its last character and last two, the two characters after it), its
length, its characters, whether it is all ASCII, and — when it is a target string of the
training data — a lexicon indicator plus the string itself (or an indicator that it is part
of a known target). The probability of a span is the softmax of the scores over the text's
candidates (a conditional-logit model, trained in :mod:`~verimod.models.baseline.span_training`).
Every feature belongs to a start position, an end position, the length or the span string,
so scoring all candidates is a few numpy operations plus one dictionary lookup per candidate.

**Implicit targets** (``[T: implicit]`` and the target is not in the text — coded words,
homophones, descriptions): the training records of that kind are kept as L2-normalised TF-IDF
rows with their target strings. For an input decoded as implicit, the most similar one
(cosine similarity) gives the target when the similarity reaches ``threshold``; otherwise the
best span of the input is used. That is a learned mapping from cue n-grams (``蝈蝻``, ``井盖``,
``阿三``) to frequent implicit targets (``中国男性``, ``河南人``, ``印度人``).
"""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Final

import numpy as np
import scipy.sparse as sp

from verimod.models.baseline.features import normalize_chars
from verimod.tasks.varm.aliases import canonical_value

_INNER_ONLY: Final = frozenset("、·・")
_EDGE: Final = ("<", ">")
LENGTH_CAP: Final = 8
#: Position and character feature templates (``NAME=value``), looked up per template when scoring.
_TEMPLATES: Final = ("L1", "L2", "F1", "L1F1", "F2", "E1", "R1", "R2", "E1R1", "E2", "I")


@lru_cache(maxsize=1 << 16)
def is_word_char(ch: str) -> bool:
    """Letters, digits and combining marks (Unicode categories L*, N*, M*)."""
    return unicodedata.category(ch)[0] in "LNM"


def admissible_target(span: str) -> bool:
    """True when ``[T: span]`` parses back to exactly ``span`` (not blank, not a no-target alias)."""
    return bool(span) and canonical_value("target", f" {span}") == span


def candidate_spans(text: str, max_len: int) -> list[tuple[int, int]]:
    """``(start, end)`` of every candidate span (see the module docstring), in text order."""
    word = [is_word_char(ch) for ch in text]
    inner = [w or ch in _INNER_ONLY for w, ch in zip(word, text, strict=True)]
    size = len(text)
    spans: list[tuple[int, int]] = []
    for i in range(size):
        if not word[i]:
            continue
        for j in range(i + 1, min(size, i + max_len) + 1):
            if not inner[j - 1]:
                break
            if word[j - 1]:
                spans.append((i, j))
    return spans


def substrings(text: str, min_len: int = 2) -> set[str]:
    """Every substring of ``text`` of at least ``min_len`` characters (``text`` included)."""
    return {text[i:j] for i in range(len(text)) for j in range(i + min_len, len(text) + 1)}


class SpanFeatures:
    """Feature names of the start and end positions of one text (module docstring).

    ``start[i]``: features of a span starting at ``i``; ``start2[i]``: its first two
    characters (spans of two or more); ``end[j]`` / ``end2[j]``: the same for a span ending
    before ``j``; ``inner[c]``: the feature of character ``c`` inside a span.
    """

    __slots__ = ("end", "end2", "inner", "start", "start2")

    def __init__(self, text: str) -> None:
        norm = normalize_chars(text)
        size = len(norm)
        padded = [_EDGE[0], _EDGE[0], *norm, _EDGE[1], _EDGE[1]]
        self.start: list[tuple[str, ...]] = []
        self.start2: list[str] = []
        for i in range(size):
            left1, left2, first = padded[i + 1], padded[i] + padded[i + 1], padded[i + 2]
            self.start.append(("L1=" + left1, "L2=" + left2, "F1=" + first, "L1F1=" + left1 + first, f"B={min(i, 4)}"))
            self.start2.append("F2=" + first + padded[i + 3])
        self.end: list[tuple[str, ...]] = [()]
        self.end2: list[str] = [""]
        for j in range(1, size + 1):
            last, right1, right2 = padded[j + 1], padded[j + 2], padded[j + 2] + padded[j + 3]
            self.end.append(("E1=" + last, "R1=" + right1, "R2=" + right2, "E1R1=" + last + right1))
            self.end2.append("E2=" + padded[j] + last)
        self.inner = ["I=" + ch for ch in norm]


def length_feature(n: int) -> str:
    """The feature of a span of ``n`` characters."""
    return f"N={min(n, LENGTH_CAP)}"


class SpanScorer:
    """A trained linear span scorer (see the module docstring).

    ``features`` and ``weights`` are parallel; ``lexicon`` is the set of training targets.
    """

    def __init__(self, features: Sequence[str], weights: np.ndarray, lexicon: Sequence[str], max_len: int) -> None:
        if weights.ndim != 1 or len(features) != weights.shape[0]:
            raise ValueError("span feature names and weights differ in length")
        self.features: list[str] = list(features)
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self.lexicon: list[str] = sorted(set(lexicon))
        self.max_len = max_len
        self._w: dict[str, float] = dict(zip(self.features, self.weights.tolist(), strict=True))
        # Lexicon part of a span's score: a known target (LEX + its own W= weight), or a part of one.
        part = self._w.get("LEXPART", 0.0)
        lex = self._w.get("LEX", 0.0)
        self._lexical: dict[str, float] = {}
        for entry in self.lexicon:
            for piece in substrings(entry):
                self._lexical[piece] = part
        for entry in self.lexicon:
            self._lexical[entry] = lex + self._w.get("W=" + entry, 0.0)
        self._lengths = np.array([self._w.get(length_feature(n), 0.0) for n in range(max_len + 1)])
        self._buckets = [self._w.get(f"B={b}", 0.0) for b in range(5)]
        self._tables: dict[str, dict[str, float]] = {name: {} for name in _TEMPLATES}
        for feature, weight in self._w.items():
            name, sep, value = feature.partition("=")
            if sep and name in self._tables:
                self._tables[name][value] = weight
        self._batch: _BatchTables | None = None

    def scores(self, text: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """The score of every candidate span of ``text`` (the same sums as the features of
        :class:`SpanFeatures`, looked up per template without building feature names)."""
        t = self._tables
        l1, l2, f1, l1f1, f2 = t["L1"].get, t["L2"].get, t["F1"].get, t["L1F1"].get, t["F2"].get
        e1, r1, r2, e1r1, e2, ch_w = t["E1"].get, t["R1"].get, t["R2"].get, t["E1R1"].get, t["E2"].get, t["I"].get
        norm = normalize_chars(text)
        size = len(norm)
        p = [_EDGE[0], _EDGE[0], *norm, _EDGE[1], _EDGE[1]]
        pairs = [a + b for a, b in itertools.pairwise(p)]  # pairs[k] = p[k] + p[k + 1]
        buckets = self._buckets
        start = np.array(
            [
                l1(p[i + 1], 0.0) + l2(pairs[i], 0.0) + f1(p[i + 2], 0.0) + l1f1(pairs[i + 1], 0.0) + buckets[min(i, 4)]
                for i in range(size)
            ]
            + [0.0]
        )
        start2 = np.array([f2(pairs[i + 2], 0.0) for i in range(size)] + [0.0])
        end = np.array(
            [0.0]
            + [
                e1(p[j + 1], 0.0) + r1(p[j + 2], 0.0) + r2(pairs[j + 2], 0.0) + e1r1(pairs[j + 1], 0.0)
                for j in range(1, size + 1)
            ]
        )
        end2 = np.array([0.0] + [e2(pairs[j], 0.0) for j in range(1, size + 1)])
        inner = np.concatenate(([0.0], np.cumsum([ch_w(ch, 0.0) for ch in norm])))
        ascii_chars = np.concatenate(([0], np.cumsum([ch.isascii() for ch in text])))
        bounds = np.array(spans, dtype=np.int64).reshape(-1, 2)
        i, j = bounds[:, 0], bounds[:, 1]
        n = j - i
        total = start[i] + end[j] + self._lengths[n] + (inner[j] - inner[i])
        total += np.where(n >= 2, start2[i] + end2[j], 0.0)
        total += np.where(ascii_chars[j] - ascii_chars[i] == n, self._w.get("ASCII", 0.0), 0.0)
        lexical = self._lexical.get
        total += np.array([lexical(text[a:b], 0.0) for a, b in spans])
        return np.asarray(total, dtype=np.float64)

    def best_span(self, text: str) -> tuple[str, float] | None:
        """The best admissible candidate and its probability among the text's candidates, or
        None when there is none. Ties go to the earlier, then shorter, span."""
        return self.best_spans([text])[0]

    def best_spans(self, texts: Sequence[str]) -> list[tuple[str, float] | None]:
        """:meth:`best_span` of every text, scored for the whole batch at once in numpy (the
        same sums as :meth:`scores`; the lexicon part found through 64-bit polynomial hashes of
        the candidates, every hit checked against the string)."""
        if self._batch is None:
            self._batch = _BatchTables(self)
        return self._batch.best_spans(texts)


class ImplicitTargetMap:
    """Nearest-neighbour mapping from an input's TF-IDF row to a training implicit target."""

    def __init__(self, rows: sp.csr_matrix, targets: Sequence[str], threshold: float) -> None:
        if rows.shape[0] != len(targets):
            raise ValueError("implicit-target rows and strings differ in number")
        self.rows = sp.csr_matrix(rows, dtype=np.float64)
        self.targets: list[str] = list(targets)
        self.threshold = float(threshold)

    def lookup(self, features: sp.csr_matrix) -> list[tuple[str, float] | None]:
        """For each input row: ``(target, similarity)`` of the nearest training item if it
        reaches the threshold, else None (ties: the earlier item)."""
        if not self.targets:
            return [None] * features.shape[0]
        sims = np.asarray((features @ self.rows.T).todense())
        best = sims.argmax(axis=1)
        out: list[tuple[str, float] | None] = []
        for r, k in enumerate(best.tolist()):
            sim = float(sims[r, k])
            out.append((self.targets[k], sim) if sim >= self.threshold else None)
        return out


_HASH_BASE: Final = 1_000_003
_HASH_MASK: Final = (1 << 64) - 1


class _BatchTables:
    """The span scorer's weights as arrays over integer ids of normalised characters, for
    :meth:`SpanScorer.best_spans`. A normalised character (an entry of
    :func:`~verimod.models.baseline.features.normalize_chars`) has an id when some feature names
    it; pair features are looked up by the pair of ids (every split of a feature's value into
    two known entries is registered, so a pair is found whatever the entries' lengths)."""

    def __init__(self, scorer: SpanScorer) -> None:
        self.scorer = scorer
        tables = scorer._tables
        singles = ("L1", "F1", "E1", "R1", "I")
        alphabet = {_EDGE[0], _EDGE[1]}
        for name in singles:
            alphabet.update(tables[name])
        for name in ("L2", "L1F1", "F2", "E1R1", "E2", "R2"):
            for value in tables[name]:
                alphabet.update(value[:k] for k in range(1, len(value)))
                alphabet.update(value[k:] for k in range(1, len(value)))
        self.ids = {entry: k + 1 for k, entry in enumerate(sorted(alphabet))}
        size = len(self.ids) + 1
        self.size = size
        self.single = {name: np.zeros(size) for name in singles}
        for name in singles:
            for value, weight in tables[name].items():
                self.single[name][self.ids[value]] = weight
        self.pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in ("L2", "L1F1", "F2", "E1R1", "E2", "R2"):
            found: dict[int, float] = {}
            for value, weight in tables[name].items():
                for k in range(1, len(value)):
                    a, b = self.ids.get(value[:k]), self.ids.get(value[k:])
                    if a is not None and b is not None:
                        found[a * size + b] = weight
            keys = np.array(sorted(found), dtype=np.int64)
            self.pairs[name] = (keys, np.array([found[int(k)] for k in keys], dtype=np.float64))
        lexical = scorer._lexical
        hashes: dict[int, list[str]] = {}
        for piece in lexical:
            hashes.setdefault(_hash(piece), []).append(piece)
        self.lex_keys = np.array(sorted(hashes), dtype=np.uint64)
        self.lex_pieces = [hashes[int(k)] for k in self.lex_keys]
        self.lengths = scorer._lengths
        self.buckets = np.asarray(scorer._buckets, dtype=np.float64)
        self.ascii_weight = scorer._w.get("ASCII", 0.0)

    def _pair(self, name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        keys, weights = self.pairs[name]
        if not keys.size:
            return np.zeros(a.size)
        query = a * self.size + b
        position = np.minimum(np.searchsorted(keys, query), keys.size - 1)
        return np.where(keys[position] == query, weights[position], 0.0)

    def best_spans(self, texts: Sequence[str]) -> list[tuple[str, float] | None]:
        max_len = self.scorer.max_len
        out: list[tuple[str, float] | None] = [None] * len(texts)
        ids_get = self.ids.get
        left_edge, right_edge = self.ids[_EDGE[0]], self.ids[_EDGE[1]]
        # One stream: per text, two left pads, its characters, two right pads.
        streams, words, inners, codes, starts = [], [], [], [], []
        offset = 0
        for text in texts:
            norm = normalize_chars(text)
            streams.append([left_edge, left_edge, *(ids_get(e, 0) for e in norm), right_edge, right_edge])
            flags = [is_word_char(ch) for ch in text]
            words.append([False, False, *flags, False, False])
            inners.append(
                [False, False, *(w or ch in _INNER_ONLY for w, ch in zip(flags, text, strict=True)), False, False]
            )
            codes.append([0, 0, *map(ord, text), 0, 0])
            starts.append(offset + 2)
            offset += len(text) + 4
        if not offset:
            return out
        ids = np.fromiter((i for s in streams for i in s), dtype=np.int64, count=offset)
        word = np.fromiter((w for s in words for w in s), dtype=bool, count=offset)
        inner = np.fromiter((w for s in inners for w in s), dtype=bool, count=offset)
        code = np.fromiter((c for s in codes for c in s), dtype=np.int64, count=offset)
        text_of = np.repeat(np.arange(len(texts)), [len(t) + 4 for t in texts])
        first_of = np.asarray(starts, dtype=np.int64)[text_of]
        z = np.zeros(1, dtype=np.int64)
        prev1, prev2 = np.concatenate((z, ids[:-1])), np.concatenate((z, z, ids[:-2]))
        next1 = np.concatenate((ids[1:], z))
        single = self.single
        # start[p]: a span starting at stream position p; end[q]: a span ending before q.
        start = single["L1"][prev1] + self._pair("L2", prev2, prev1) + single["F1"][ids]
        start += self._pair("L1F1", prev1, ids) + self.buckets[np.minimum(np.arange(offset) - first_of, 4)]
        start2 = self._pair("F2", ids, next1)
        end = single["E1"][prev1] + single["R1"][ids] + self._pair("R2", ids, next1) + self._pair("E1R1", prev1, ids)
        end2 = self._pair("E2", prev2, prev1)
        inner_sum = np.concatenate(([0.0], np.cumsum(single["I"][ids])))
        ascii_sum = np.concatenate(([0], np.cumsum(code < 128)))
        # Candidates: start p (a word character), length n, all characters inner, last a word
        # character; h: the 64-bit polynomial hash of the span's characters.
        not_inner = np.concatenate(([0], np.cumsum(~inner)))
        cand_p, cand_n, cand_h = [], [], []
        positions = np.flatnonzero(word)
        rolling = np.zeros(offset, dtype=np.uint64)
        padded = np.concatenate((code, np.zeros(max_len, dtype=np.int64))).astype(np.uint64)
        for n in range(1, max_len + 1):
            rolling = rolling * _HASH_BASE + padded[n - 1 : n - 1 + offset]
            p = positions[positions + n <= offset]
            ok = (not_inner[p + n] - not_inner[p] == 0) & word[p + n - 1]
            cand_p.append(p[ok])
            cand_n.append(np.full(int(ok.sum()), n, dtype=np.int64))
            cand_h.append(rolling[p[ok]])
        p, n, h = np.concatenate(cand_p), np.concatenate(cand_n), np.concatenate(cand_h)
        q = p + n
        total = start[p] + end[q] + self.lengths[n] + (inner_sum[q] - inner_sum[p])
        total += np.where(n >= 2, start2[p] + end2[q], 0.0)
        total += np.where(ascii_sum[q] - ascii_sum[p] == n, self.ascii_weight, 0.0)
        if self.lex_keys.size:
            position = np.minimum(np.searchsorted(self.lex_keys, h), self.lex_keys.size - 1)
            for k in np.flatnonzero(self.lex_keys[position] == h).tolist():
                row = int(text_of[p[k]])
                i = int(p[k] - starts[row])
                piece = texts[row][i : i + int(n[k])]
                if piece in self.lex_pieces[int(position[k])]:
                    total[k] += self.scorer._lexical[piece]
        # Per text: candidates in text order (start, then length), best admissible by score.
        row_of = text_of[p]
        order = np.lexsort((n, p))
        p, n, total, row_of = p[order], n[order], total[order], row_of[order]
        bounds = np.searchsorted(row_of, np.arange(len(texts) + 1))
        for row in range(len(texts)):
            a, b = int(bounds[row]), int(bounds[row + 1])
            if a == b:
                continue
            scores = total[a:b]
            probabilities = np.exp(scores - scores.max())
            probabilities /= probabilities.sum()
            for k in np.argsort(-scores, kind="stable").tolist():
                i = int(p[a + k]) - starts[row]
                span = texts[row][i : i + int(n[a + k])]
                if admissible_target(span):
                    out[row] = (span, float(probabilities[k]))
                    break
        return out


def _hash(text: str) -> int:
    """The 64-bit polynomial hash of ``text``'s code points (wrapping, as numpy's uint64)."""
    value = 0
    for ch in text:
        value = (value * _HASH_BASE + ord(ch)) & _HASH_MASK
    return value
