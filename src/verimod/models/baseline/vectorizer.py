"""TF-IDF over the feature blocks of :mod:`~verimod.models.baseline.views`, in numpy alone.

Contract of :class:`TextVectorizer`:

- columns: the blocks of :data:`~verimod.models.baseline.views.TEXT_BLOCKS` in that order; a
  block is made of *parts* (:data:`PARTS`), each with its own sorted vocabulary: the integer
  keys of an n-gram view (:mod:`~verimod.models.baseline.grams`) or a sorted list of feature
  strings (jieba words and quote n-grams of the surface block; the cues). A feature seen in
  fewer than ``min_df[block]`` training texts is dropped; the vectoriser is fully described by
  its vocabularies and the ``idf`` array (:mod:`~verimod.models.baseline.persist` saves them);
- weights: ``tf = 1 + ln(count)``, ``idf = ln((1 + N) / (1 + df)) + 1`` (scikit-learn's smoothed
  idf); each block of a row is L2-normalised on its own and multiplied by ``block_weights[block]``
  (an all-zero block stays zero), so that, e.g., four stance cues are not drowned by three
  hundred n-grams;
- everything is computed for the whole batch at once: the n-gram keys of every text, then one
  ``searchsorted`` per view, one ``unique`` over ``(row, column)`` pairs for the counts; only
  the string features are looked up text by text.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Final

import numpy as np
import scipy.sparse as sp

from verimod.models.baseline.charmap import canonical_text
from verimod.models.baseline.grams import batch_keys, key_name
from verimod.models.baseline.views import TEXT_BLOCKS, TextAnalyzer

#: The parts of the columns, in order: (name, block, kind); ``keys`` parts are n-gram views.
PARTS: Final = (
    ("chars", "surface", "keys"),
    ("surface_strings", "surface", "strings"),
    ("pinyin", "robust", "keys"),
    ("initials", "robust", "keys"),
    ("glyph", "robust", "keys"),
    ("cues", "cues", "strings"),
)
Vocabulary = np.ndarray | list[str]


class TextVectorizer:
    """Block-wise TF-IDF rows of texts (see the module docstring)."""

    def __init__(
        self,
        analyzer: TextAnalyzer,
        vocabularies: dict[str, Vocabulary],
        idf: np.ndarray,
        block_weights: Sequence[float],
    ) -> None:
        if set(vocabularies) != {p[0] for p in PARTS} or len(block_weights) != len(TEXT_BLOCKS):
            raise ValueError(f"one vocabulary per part ({', '.join(p[0] for p in PARTS)}) and one weight per block")
        self.analyzer = analyzer
        self.vocabularies: dict[str, Vocabulary] = {}
        for name, _, kind in PARTS:
            vocab = vocabularies[name]
            if kind == "keys":
                keys = np.ascontiguousarray(vocab, dtype=np.int64)
                if keys.ndim != 1 or (keys.size > 1 and not np.all(keys[1:] > keys[:-1])):
                    raise ValueError(f"the {name} keys must be a strictly increasing list of integers")
                self.vocabularies[name] = keys
            else:
                self.vocabularies[name] = [str(v) for v in vocab]
        sizes = [len(self.vocabularies[p[0]]) for p in PARTS]
        if idf.ndim != 1 or idf.shape[0] != sum(sizes):
            raise ValueError("vocabulary and idf lengths differ")
        self.idf = np.ascontiguousarray(idf, dtype=np.float64)
        self.block_weights = tuple(float(w) for w in block_weights)
        self.offsets = dict(zip((p[0] for p in PARTS), np.cumsum([0, *sizes[:-1]]).tolist(), strict=True))
        self.part_bounds = np.cumsum([0, *sizes]).astype(np.int64)
        self._bounds_list: list[int] = self.part_bounds.tolist()
        block_index = [TEXT_BLOCKS.index(p[1]) for p in PARTS]
        self.block_of = np.repeat(np.asarray(block_index, dtype=np.int64), sizes)
        self.string_index = {
            name: {g: self.offsets[name] + i for i, g in enumerate(self.vocabularies[name])}
            for name, _, kind in PARTS
            if kind == "strings"
        }
        self.views = {v.name: v for v in analyzer.views}

    @property
    def n_features(self) -> int:
        """Number of columns."""
        return int(self.part_bounds[-1])

    def feature_name(self, column: int) -> str:
        """The feature string of a column."""
        part = bisect.bisect_right(self._bounds_list, column) - 1
        name, _, kind = PARTS[part]
        value = self.vocabularies[name][column - self._bounds_list[part]]
        return str(value) if kind == "strings" else key_name(self.views[name], int(value))

    # ------------------------------------------------------------------ occurrences

    def occurrences(self, canonicals: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, columns)`` of every known feature occurrence (repeats kept)."""
        rows, cols = [], []
        for name, _, kind in PARTS:
            if kind != "keys" or name not in self.views:
                continue
            r, keys = batch_keys(self.views[name], canonicals)
            vocab = self.vocabularies[name]
            assert isinstance(vocab, np.ndarray)
            if not vocab.size or not keys.size:
                continue
            position = np.minimum(np.searchsorted(vocab, keys), vocab.size - 1)
            found = vocab[position] == keys
            rows.append(r[found])
            cols.append(position[found] + self.offsets[name])
        surface_index, cue_index = self.string_index["surface_strings"], self.string_index["cues"]
        string_rows: list[int] = []
        string_cols: list[int] = []
        for row, text in enumerate(canonicals):
            surface, cues = self.analyzer.string_features(text)
            for feats, index in ((surface, surface_index), (cues, cue_index)):
                for f in feats:
                    column = index.get(f)
                    if column is not None:
                        string_rows.append(row)
                        string_cols.append(column)
        rows.append(np.asarray(string_rows, dtype=np.int64))
        cols.append(np.asarray(string_cols, dtype=np.int64))
        return np.concatenate(rows), np.concatenate(cols)

    def transform_canonical(self, canonicals: Sequence[str]) -> sp.csr_matrix:
        """Rows of canonical texts."""
        rows, cols = self.occurrences(canonicals)
        return self.rows_of(rows, cols, len(canonicals))

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        """Rows of raw texts (CSR, float64; see the module docstring)."""
        return self.transform_canonical([canonical_text(t) for t in texts])

    def rows_of(
        self, rows: np.ndarray, cols: np.ndarray, n_rows: int, counts: np.ndarray | None = None
    ) -> sp.csr_matrix:
        """The weighted, block-normalised rows from feature occurrences ``(rows, cols)``
        (repeats counted), or from distinct cells ``(rows, cols)`` and their ``counts``."""
        n_cols = self.n_features
        if counts is None:
            cells, counts = np.unique(rows * n_cols + cols, return_counts=True)
            rows, cols = np.divmod(cells, n_cols) if n_cols else (cells, cells)
        data = (1.0 + np.log(counts.astype(np.float64))) * self.idf[cols]
        n_blocks = len(TEXT_BLOCKS)
        cell = rows * n_blocks + self.block_of[cols]
        norms = np.sqrt(np.bincount(cell, weights=data * data, minlength=n_rows * n_blocks))
        scale = np.asarray(self.block_weights)[self.block_of[cols]] / np.where(norms[cell] > 0, norms[cell], 1.0)
        matrix = sp.csr_matrix((data * scale, (rows, cols)), shape=(n_rows, n_cols))
        matrix.sort_indices()
        return matrix

    # ------------------------------------------------------------------ fitting

    @classmethod
    def fit_transform(
        cls,
        analyzer: TextAnalyzer,
        texts: Sequence[str],
        min_df: Sequence[int],
        block_weights: Sequence[float],
    ) -> tuple[TextVectorizer, sp.csr_matrix, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Learn the vocabularies and idf from raw training texts; return the vectoriser, the
        texts' rows and their distinct cells ``(rows, columns, counts)`` (for :meth:`restrict`)."""
        canonicals = [canonical_text(t) for t in texts]
        n_docs = len(canonicals)
        views = {v.name: v for v in analyzer.views}
        raw: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # part -> rows, ids, values
        for name, _, kind in PARTS:
            if kind == "keys":
                if name in views:
                    rows, keys = batch_keys(views[name], canonicals)
                    values, ids = np.unique(keys, return_inverse=True)
                else:
                    rows, ids, values = (np.empty(0, dtype=np.int64),) * 3
                raw[name] = (rows, ids.astype(np.int64), values)
        strings: dict[str, dict[str, int]] = {"surface_strings": {}, "cues": {}}
        string_occ: dict[str, tuple[list[int], list[int]]] = {"surface_strings": ([], []), "cues": ([], [])}
        for row, text in enumerate(canonicals):
            for name, feats in zip(("surface_strings", "cues"), analyzer.string_features(text), strict=True):
                table, (r, i) = strings[name], string_occ[name]
                for f in feats:
                    r.append(row)
                    i.append(table.setdefault(f, len(table)))
        for name, table in strings.items():
            r, i = string_occ[name]
            names = np.empty(len(table), dtype=object)
            for f, k in table.items():
                names[k] = f
            raw[name] = (np.asarray(r, dtype=np.int64), np.asarray(i, dtype=np.int64), names)
        vocabularies: dict[str, Vocabulary] = {}
        idf_parts: list[np.ndarray] = []
        occ_rows, occ_cols, occ_counts = [], [], []
        offset = 0
        for name, block, kind in PARTS:
            rows, ids, values = raw[name]
            n_values = max(len(values), 1)
            cells, counts = np.unique(rows * n_values + ids, return_counts=True)
            rows, ids = np.divmod(cells, n_values)
            df = np.bincount(ids, minlength=len(values))
            keep = np.flatnonzero(df >= min_df[TEXT_BLOCKS.index(block)])
            if kind == "strings":
                order = keep[np.argsort(values[keep].astype(str), kind="stable")] if keep.size else keep
                vocabularies[name] = [str(v) for v in values[order]]
            else:
                order = keep  # np.unique sorted the keys
                vocabularies[name] = values[order].astype(np.int64)
            remap = np.full(n_values, -1, dtype=np.int64)
            remap[order] = offset + np.arange(order.size)
            idf_parts.append(np.log((1.0 + n_docs) / (1.0 + df[order].astype(np.float64))) + 1.0)
            mapped = remap[ids]
            occ_rows.append(rows[mapped >= 0])
            occ_cols.append(mapped[mapped >= 0])
            occ_counts.append(counts[mapped >= 0])
            offset += order.size
        vectorizer = cls(analyzer, vocabularies, np.concatenate(idf_parts), block_weights)
        cells = (np.concatenate(occ_rows), np.concatenate(occ_cols), np.concatenate(occ_counts))
        return vectorizer, vectorizer.rows_of(cells[0], cells[1], n_docs, cells[2]), cells

    def restrict(self, columns: np.ndarray) -> tuple[TextVectorizer, np.ndarray]:
        """A vectoriser with only ``columns`` (sorted column indices) and the map from old to new
        columns (-1 for the dropped ones). Rows it makes are *not* the old rows restricted: each
        block is normalised over the features it still has."""
        keep = np.zeros(self.n_features, dtype=bool)
        keep[columns] = True
        vocabularies: dict[str, Vocabulary] = {}
        for part, (name, _, kind) in enumerate(PARTS):
            mask = keep[self.part_bounds[part] : self.part_bounds[part + 1]]
            vocab = self.vocabularies[name]
            if kind == "keys":
                assert isinstance(vocab, np.ndarray)
                vocabularies[name] = vocab[mask]
            else:
                vocabularies[name] = [g for g, k in zip(vocab, mask.tolist(), strict=True) if k]
        remap = np.full(self.n_features, -1, dtype=np.int64)
        remap[keep] = np.arange(int(keep.sum()))
        return TextVectorizer(self.analyzer, vocabularies, self.idf[keep], self.block_weights), remap


def counts_by_block(vectorizer: TextVectorizer) -> dict[str, int]:
    """Vocabulary size of each block."""
    return {block: int(np.count_nonzero(vectorizer.block_of == k)) for k, block in enumerate(TEXT_BLOCKS)}
