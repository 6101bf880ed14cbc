"""Character n-gram TF-IDF features for Chinese text, computed with numpy alone.

Contract:

- :func:`normalize_chars` maps every character of the original text to its normalised form
  (Unicode NFKC, then lower-casing), one entry per original character, so that positions in
  the normalised text map back to the original text (for quoting evidence). The normalised
  text is the concatenation of the entries. Nothing is tokenised on whitespace.
- :class:`CharNgramVectorizer` turns texts into L2-normalised TF-IDF rows over character
  n-grams of the normalised text (``n`` in ``[ngram_min, ngram_max]``), optionally with the
  text boundaries ``\\x02``/``\\x03`` as extra characters. Weights: ``tf = 1 + ln(count)``
  (sublinear) or the raw count, ``idf = ln((1 + N) / (1 + df)) + 1`` (scikit-learn's smoothed
  idf), n-grams seen in fewer than ``min_df`` training texts are dropped. The vocabulary is
  sorted, so the same training texts always give the same columns. With ``quotes``, the
  n-grams around quoted passages are added (:func:`char_ngrams`), so that ``骂“…”`` and
  ``“…”这种话`` count whatever words are quoted. The result equals scikit-learn's
  ``TfidfVectorizer`` with :func:`char_ngrams` as analyser (tested).
- The vectoriser is fully described by its vocabulary (a list of strings) and its ``idf``
  array: its constructor rebuilds it exactly from what
  :mod:`verimod.models.baseline.persist` saves.
- :class:`FeatureSpace` adds, after the text columns, the columns that describe the best
  target span of each text.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Final, Protocol

import numpy as np
import scipy.sparse as sp

BOS: Final = "\x02"
EOS: Final = "\x03"


@lru_cache(maxsize=1 << 16)
def normalize_char(ch: str) -> str:
    """NFKC then lower case of one character (may be empty or longer than one character)."""
    return unicodedata.normalize("NFKC", ch).lower()


def normalize_chars(text: str) -> list[str]:
    """The normalised form of each character of ``text`` (same length as ``text``)."""
    return [normalize_char(ch) for ch in text]


def normalize_text(text: str) -> str:
    """The normalised text: the concatenation of :func:`normalize_chars`."""
    return "".join(normalize_chars(text))


_QUOTED: Final = re.compile(r"“[^“”]{1,60}”|「[^「」]{1,60}」|『[^『』]{1,60}』|\"[^\"]{1,60}\"|'[^']{1,60}'")
QUOTE_PREFIX: Final = "q:"
QUOTE_NGRAMS: Final = (2, 4)


def quoted_spans(normalized: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every quoted passage, quotation marks included."""
    return [m.span() for m in _QUOTED.finditer(normalized)]


def mask_quotes(normalized: str) -> str:
    """The text with every quoted passage replaced by ``“〃”``: what the author says *around*
    quotations (``骂…``, ``…这种话``), whatever words are quoted."""
    return _QUOTED.sub("“〃”", normalized)


def char_ngrams(normalized: str, ngram_min: int, ngram_max: int, bounds: bool, quotes: bool = False) -> list[str]:
    """All character n-grams of ``normalized`` (with boundary characters when ``bounds``); with
    ``quotes``, also the n-grams of :func:`mask_quotes` (``n`` in
    :data:`QUOTE_NGRAMS`) that contain the placeholder, prefixed :data:`QUOTE_PREFIX`: the
    words around a quotation (``骂“〃``, ``〃”这种话``)."""
    grams = _char_ngrams(normalized, ngram_min, ngram_max, bounds)
    if quotes:
        grams.extend(quote_ngrams(normalized, bounds))
    return grams


def quote_ngrams(normalized: str, bounds: bool = True) -> list[str]:
    """The ``q:`` n-grams of :func:`char_ngrams` alone (empty when nothing is quoted)."""
    masked = mask_quotes(normalized)
    if masked == normalized:
        return []
    low, high = QUOTE_NGRAMS
    return [QUOTE_PREFIX + g for g in _char_ngrams(masked, low, high, bounds) if "〃" in g]


def _char_ngrams(normalized: str, ngram_min: int, ngram_max: int, bounds: bool) -> list[str]:
    text = f"{BOS}{normalized}{EOS}" if bounds else normalized
    size = len(text)
    grams: list[str] = []
    for n in range(ngram_min, ngram_max + 1):
        grams.extend(text[i : i + n] for i in range(size - n + 1))
    if bounds and ngram_min == 1:  # the lone boundary characters carry no information
        grams = [g for g in grams if g not in (BOS, EOS)]
    return grams


class CharNgramVectorizer:
    """TF-IDF over character n-grams; see the module docstring for the exact weighting."""

    def __init__(
        self,
        vocabulary: Sequence[str],
        idf: np.ndarray,
        ngram_min: int = 1,
        ngram_max: int = 3,
        bounds: bool = True,
        sublinear_tf: bool = True,
        quotes: bool = False,
    ) -> None:
        if len(vocabulary) != idf.shape[0] or idf.ndim != 1:
            raise ValueError("vocabulary and idf lengths differ")
        if not 1 <= ngram_min <= ngram_max:
            raise ValueError("need 1 <= ngram_min <= ngram_max")
        self.vocabulary: list[str] = list(vocabulary)
        self.index: dict[str, int] = {g: i for i, g in enumerate(self.vocabulary)}
        self.idf = np.ascontiguousarray(idf, dtype=np.float64)
        self.ngram_min = ngram_min
        self.ngram_max = ngram_max
        self.bounds = bounds
        self.sublinear_tf = sublinear_tf
        self.quotes = quotes

    @classmethod
    def fit(
        cls,
        texts: Iterable[str],
        ngram_min: int = 1,
        ngram_max: int = 3,
        bounds: bool = True,
        sublinear_tf: bool = True,
        min_df: int = 1,
        quotes: bool = False,
    ) -> CharNgramVectorizer:
        """Learn the vocabulary and idf from raw (not yet normalised) training texts."""
        df: Counter[str] = Counter()
        n_docs = 0
        for text in texts:
            df.update(set(char_ngrams(normalize_text(text), ngram_min, ngram_max, bounds, quotes)))
            n_docs += 1
        vocabulary = sorted(g for g, count in df.items() if count >= min_df)
        counts = np.array([df[g] for g in vocabulary], dtype=np.float64)
        idf = np.log((1.0 + n_docs) / (1.0 + counts)) + 1.0
        return cls(vocabulary, idf, ngram_min, ngram_max, bounds, sublinear_tf, quotes)

    @property
    def n_features(self) -> int:
        """Number of columns."""
        return len(self.vocabulary)

    def transform_normalized(self, normalized: Sequence[str]) -> sp.csr_matrix:
        """TF-IDF rows (CSR, float64, L2-normalised; all-zero rows stay zero) of normalised texts."""
        index = self.index
        indptr = [0]
        indices: list[int] = []
        values: list[float] = []
        sublinear = self.sublinear_tf
        for text in normalized:
            counts = Counter(
                i
                for i in map(index.get, char_ngrams(text, self.ngram_min, self.ngram_max, self.bounds, self.quotes))
                if i is not None
            )
            ids = sorted(counts)
            indices.extend(ids)
            if sublinear:
                values.extend(1.0 + math.log(counts[i]) for i in ids)
            else:
                values.extend(float(counts[i]) for i in ids)
            indptr.append(len(indices))
        idx = np.asarray(indices, dtype=np.int64)
        data = np.asarray(values, dtype=np.float64) * self.idf[idx]
        ptr = np.asarray(indptr, dtype=np.int64)
        # Row-wise L2 normalisation (all-zero rows stay zero).
        lengths = np.diff(ptr)
        rows = np.repeat(np.arange(len(normalized), dtype=np.int64), lengths)
        norms = np.sqrt(np.bincount(rows, weights=data * data, minlength=len(normalized)))
        data = data / np.where(norms > 0, norms, 1.0)[rows]
        return sp.csr_matrix((data, idx, ptr), shape=(len(normalized), self.n_features))

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        """TF-IDF rows of raw texts (normalised first)."""
        return self.transform_normalized([normalize_text(t) for t in texts])


class Columns(Protocol):
    """Anything that makes a known number of feature columns (the text vectoriser)."""

    @property
    def n_features(self) -> int: ...


#: Indicator columns describing the best target span: none, or its probability bin.
SPAN_BINS: Final = (0.25, 0.5, 0.75)
META_NAMES: Final = ("span:none", "span:p<0.25", "span:p<0.5", "span:p<0.75", "span:p>=0.75")
#: Blocks of the feature space, in column order.
BLOCKS: Final = ("text", "target", "span")


def _meta_column(probability: float | None) -> int:
    if probability is None:
        return 0
    return 1 + sum(probability >= b for b in SPAN_BINS)


class FeatureSpace:
    """The columns the field classifiers read, in three blocks (:data:`BLOCKS`):

    ``[text TF-IDF | target_weight · TF-IDF of the best target span | span indicators]``

    The target block describes the span the target extractor picked (its characters say
    much about the type: ``他`` vs ``程序员们``); the span indicators say whether there was a
    span and how sure the extractor was (evidence on explicitness and no_clear_target). Each
    field's classifier reads a subset of the blocks (:meth:`columns`); its weights on the
    other columns are zero.
    """

    def __init__(self, text: Columns, target: CharNgramVectorizer, target_weight: float) -> None:
        self.text = text
        self.target = target
        self.target_weight = float(target_weight)
        self.sizes = (text.n_features, target.n_features, len(META_NAMES))

    @property
    def n_features(self) -> int:
        """Total number of columns."""
        return sum(self.sizes)

    def columns(self, blocks: Sequence[str]) -> np.ndarray:
        """Column indices of the given blocks, in column order."""
        offsets = np.cumsum((0, *self.sizes))
        parts = [np.arange(offsets[k], offsets[k + 1]) for k, name in enumerate(BLOCKS) if name in blocks]
        return np.concatenate(parts).astype(np.int64)

    def build(self, text_rows: sp.csr_matrix, spans: Sequence[tuple[str, float] | None]) -> sp.csr_matrix:
        """All columns, from the text block and each text's best span (or None)."""
        target_rows = self.target.transform([s[0] if s is not None else "" for s in spans]) * self.target_weight
        meta = sp.csr_matrix(
            (
                np.ones(len(spans)),
                np.array([_meta_column(None if s is None else s[1]) for s in spans], dtype=np.int64),
                np.arange(len(spans) + 1, dtype=np.int64),
            ),
            shape=(len(spans), len(META_NAMES)),
        )
        return sp.hstack([text_rows, target_rows, meta], format="csr", dtype=np.float64)
