"""TF-IDF over the feature blocks of :mod:`~verimod.models.baseline.views`, in numpy alone.

Contract of :class:`TextVectorizer`:

- columns: one vocabulary per block (:data:`~verimod.models.baseline.views.TEXT_BLOCKS`), each
  sorted, blocks in that order; a feature seen in fewer than ``min_df[block]`` training texts is
  dropped (the vocabulary is then fully described by the lists of strings and the ``idf`` array
  that :mod:`~verimod.models.baseline.persist` saves);
- weights: ``tf = 1 + ln(count)``, ``idf = ln((1 + N) / (1 + df)) + 1`` (scikit-learn's smoothed
  idf); each block of a row is L2-normalised on its own and multiplied by ``block_weights[block]``
  (an all-zero block stays zero), so that, e.g., four stance cues are not drowned by three
  hundred n-grams;
- :meth:`TextVectorizer.fit_transform` computes each text's features once: a first pass gives
  every distinct feature a provisional id and keeps each text's ids as an ``int32`` array; the
  document frequencies, the vocabulary and the matrix then come from those arrays. The first
  pass may run in several processes over chunks of texts (:func:`analyze_chunk`); provisional
  ids never reach the result (the vocabulary is sorted), so the model is the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Any

import numpy as np
import scipy.sparse as sp

from verimod.models.baseline.charmap import canonical_text
from verimod.models.baseline.views import TEXT_BLOCKS, TextAnalyzer


class TextVectorizer:
    """Block-wise TF-IDF rows of texts (see the module docstring)."""

    def __init__(
        self,
        analyzer: TextAnalyzer,
        vocabularies: Sequence[Sequence[str]],
        idf: np.ndarray,
        block_weights: Sequence[float],
    ) -> None:
        if len(vocabularies) != len(TEXT_BLOCKS) or len(block_weights) != len(TEXT_BLOCKS):
            raise ValueError(f"one vocabulary and one weight per block ({', '.join(TEXT_BLOCKS)})")
        sizes = [len(v) for v in vocabularies]
        if idf.ndim != 1 or idf.shape[0] != sum(sizes):
            raise ValueError("vocabulary and idf lengths differ")
        self.analyzer = analyzer
        self.vocabularies: list[list[str]] = [list(v) for v in vocabularies]
        self.idf = np.ascontiguousarray(idf, dtype=np.float64)
        self.block_weights = tuple(float(w) for w in block_weights)
        self.offsets = np.cumsum([0, *sizes]).astype(np.int64)
        self.indices: list[dict[str, int]] = [
            {g: int(self.offsets[b]) + i for i, g in enumerate(v)} for b, v in enumerate(self.vocabularies)
        ]
        self.block_of = np.repeat(np.arange(len(TEXT_BLOCKS), dtype=np.int64), sizes)

    @property
    def n_features(self) -> int:
        """Number of columns."""
        return int(self.offsets[-1])

    def feature_name(self, column: int) -> str:
        """The feature string of a column."""
        block = int(self.block_of[column])
        return self.vocabularies[block][column - int(self.offsets[block])]

    @classmethod
    def fit_transform(
        cls,
        analyzer: TextAnalyzer,
        texts: Sequence[str],
        min_df: Sequence[int],
        block_weights: Sequence[float],
        workers: int = 1,
    ) -> tuple[TextVectorizer, sp.csr_matrix, list[np.ndarray]]:
        """Learn the vocabulary and idf from raw training texts; return it, the texts' rows and
        each text's column occurrences (for :meth:`rows_of` after :meth:`restrict`). With
        ``workers`` > 1 the texts are analysed by that many processes (same result)."""
        provisional: list[dict[str, int]] = [{} for _ in TEXT_BLOCKS]
        per_text: list[list[np.ndarray[Any, Any]]] = []
        for local_vocabularies, local_ids in _analyze(analyzer, texts, workers):
            to_global = []
            for block, local_names in enumerate(local_vocabularies):
                table = provisional[block]
                setdefault = table.setdefault
                size = len(local_names)
                to_global.append(np.fromiter((setdefault(n, len(table)) for n in local_names), np.int32, count=size))
            per_text.extend([to_global[b][ids[b]] for b in range(len(TEXT_BLOCKS))] for ids in local_ids)
        vocabularies: list[list[str]] = []
        remaps: list[np.ndarray] = []
        idf_parts: list[np.ndarray] = []
        n_docs = len(texts)
        offset = 0
        for block, table in enumerate(provisional):
            df = np.zeros(len(table), dtype=np.int64)
            for ids in per_text:
                if ids[block].size:
                    df[np.unique(ids[block])] += 1
            strings = np.empty(len(table), dtype=object)
            for name, k in table.items():
                strings[k] = name
            keep = np.flatnonzero(df >= min_df[block])
            order = keep[np.argsort(strings[keep].astype(str), kind="stable")] if keep.size else keep
            remap = np.full(len(table), -1, dtype=np.int64)
            remap[order] = offset + np.arange(order.size)
            vocabularies.append([str(n) for n in strings[order]])
            remaps.append(remap)
            idf_parts.append(np.log((1.0 + n_docs) / (1.0 + df[order].astype(np.float64))) + 1.0)
            offset += order.size
        vectorizer = cls(analyzer, vocabularies, np.concatenate(idf_parts), block_weights)
        rows = [np.concatenate([remaps[b][ids[b]] for b in range(len(TEXT_BLOCKS))]) for ids in per_text]
        rows = [r[r >= 0] for r in rows]
        return vectorizer, vectorizer.rows_of(rows), rows

    def column_ids(self, blocks: Sequence[Sequence[str]]) -> np.ndarray:
        """The columns of every feature occurrence (repeats kept) of one text's feature blocks."""
        parts = []
        for block, feats in enumerate(blocks):
            found = np.fromiter(map(self.indices[block].get, feats, repeat(-1)), dtype=np.int64, count=len(feats))
            parts.append(found[found >= 0])
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def transform_canonical(self, canonicals: Sequence[str]) -> tuple[sp.csr_matrix, list[list[str]]]:
        """Rows of canonical texts, and each text's jieba tokens."""
        rows, tokens = [], []
        for text in canonicals:
            blocks, words = self.analyzer.features(text)
            rows.append(self.column_ids(blocks))
            tokens.append(words)
        return self.rows_of(rows), tokens

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        """Rows of raw texts (CSR, float64; see the module docstring)."""
        return self.transform_canonical([canonical_text(t) for t in texts])[0]

    def restrict(self, columns: np.ndarray) -> tuple[TextVectorizer, np.ndarray]:
        """A vectoriser with only ``columns`` (sorted column indices) and the map from old to new
        columns (-1 for the dropped ones). Rows it makes are *not* the old rows restricted: each
        block is normalised over the features it still has."""
        keep = np.zeros(self.n_features, dtype=bool)
        keep[columns] = True
        vocabularies = [
            [g for i, g in enumerate(v) if keep[int(self.offsets[b]) + i]] for b, v in enumerate(self.vocabularies)
        ]
        remap = np.full(self.n_features, -1, dtype=np.int64)
        remap[keep] = np.arange(int(keep.sum()))
        return TextVectorizer(self.analyzer, vocabularies, self.idf[keep], self.block_weights), remap

    def rows_of(self, rows: Sequence[np.ndarray]) -> sp.csr_matrix:
        """The weighted, block-normalised rows from each text's column occurrences."""
        indptr = [0]
        indices: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        for ids in rows:
            if ids.size:
                unique, count = np.unique(ids, return_counts=True)
            else:
                unique, count = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
            indices.append(unique)
            counts.append(count)
            indptr.append(indptr[-1] + unique.size)
        idx = np.concatenate(indices).astype(np.int64) if indices else np.empty(0, dtype=np.int64)
        tf = 1.0 + np.log(np.concatenate(counts).astype(np.float64)) if counts else np.empty(0)
        data = tf * self.idf[idx]
        ptr = np.asarray(indptr, dtype=np.int64)
        n_rows = len(rows)
        n_blocks = len(TEXT_BLOCKS)
        row_of = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(ptr))
        cell = row_of * n_blocks + self.block_of[idx]
        norms = np.sqrt(np.bincount(cell, weights=data * data, minlength=n_rows * n_blocks))
        scale = np.asarray(self.block_weights)[self.block_of[idx]] / np.where(norms[cell] > 0, norms[cell], 1.0)
        return sp.csr_matrix((data * scale, idx, ptr), shape=(n_rows, self.n_features))


Chunk = tuple[list[list[str]], list[list[np.ndarray]]]
#: Texts per task when several processes analyse the training texts.
CHUNK_SIZE = 2000


def analyze_chunk(analyzer: TextAnalyzer, texts: Sequence[str]) -> Chunk:
    """The feature blocks of ``texts`` as local ids: per block, the distinct feature strings in
    first-seen order, and per text and block the ids of its feature occurrences."""
    local: list[dict[str, int]] = [{} for _ in TEXT_BLOCKS]
    out: list[list[np.ndarray]] = []
    for text in texts:
        blocks, _ = analyzer.features(canonical_text(text))
        ids = []
        for block, feats in enumerate(blocks):
            table = local[block]
            found = list(map(table.get, feats))  # most features are known after the first texts
            for k, value in enumerate(found):
                if value is None:
                    found[k] = table.setdefault(feats[k], len(table))
            ids.append(np.array(found, dtype=np.int32))
        out.append(ids)
    return [list(table) for table in local], out


def _analyze(analyzer: TextAnalyzer, texts: Sequence[str], workers: int) -> list[Chunk]:
    """:func:`analyze_chunk` over chunks of ``texts``, in order, by ``workers`` processes."""
    if workers <= 1 or len(texts) <= CHUNK_SIZE:
        return [analyze_chunk(analyzer, texts)]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    chunks = [list(texts[k : k + CHUNK_SIZE]) for k in range(0, len(texts), CHUNK_SIZE)]
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(pool.map(partial(analyze_chunk, analyzer), chunks))


def counts_by_block(vectorizer: TextVectorizer) -> dict[str, int]:
    """Vocabulary size of each block."""
    return dict(zip(TEXT_BLOCKS, map(len, vectorizer.vocabularies), strict=True))
