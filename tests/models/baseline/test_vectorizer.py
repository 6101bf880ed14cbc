"""The block TF-IDF of the text views equals a plain dictionary implementation over the
feature strings of :meth:`TextAnalyzer.features`."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from verimod.models.baseline.charmap import canonical_text
from verimod.models.baseline.vectorizer import TextVectorizer
from verimod.models.baseline.views import TEXT_BLOCKS, TextAnalyzer
from verimod.tasks.varm.starter import load_starter

MIN_DF = (2, 2, 1)
WEIGHTS = (1.0, 1.5, 0.5)


def _by_hand(analyzer: TextAnalyzer, train: list[str], texts: list[str]) -> tuple[list[dict[str, float]], set[str]]:
    """Rows as {feature string: value}, and the vocabulary, computed with dictionaries."""
    per_text = [analyzer.features(canonical_text(t)) for t in train]
    df: list[Counter[str]] = [Counter() for _ in TEXT_BLOCKS]
    for blocks in per_text:
        for b, feats in enumerate(blocks):
            df[b].update(set(feats))
    vocab = [{f for f, n in df[b].items() if n >= MIN_DF[b]} for b in range(len(TEXT_BLOCKS))]
    rows = []
    for text in texts:
        row: dict[str, float] = {}
        for b, feats in enumerate(analyzer.features(canonical_text(text))):
            counts = Counter(f for f in feats if f in vocab[b])
            values = {
                f: (1 + math.log(c)) * (math.log((1 + len(train)) / (1 + df[b][f])) + 1) for f, c in counts.items()
            }
            norm = math.sqrt(sum(v * v for v in values.values()))
            row.update({f: WEIGHTS[b] * v / norm for f, v in values.items()})
        rows.append(row)
    return rows, set().union(*vocab)


def test_rows_equal_the_dictionary_implementation():
    train = [r.text for r in load_starter("train")] + ["你是sb吧 nmsl，沙比 sha bi", "他说“你就是个傻逼”"]
    texts = [r.text for r in load_starter("dev")[:40]] + ["", "沙比 sha bi，女表子"]
    analyzer = TextAnalyzer(words=True, pinyin_ngram=(1, 3), initials_ngram=(2, 4))
    vectorizer, fitted, _ = TextVectorizer.fit_transform(analyzer, train, MIN_DF, WEIGHTS)
    expected, vocabulary = _by_hand(analyzer, train, texts)
    names = [vectorizer.feature_name(k) for k in range(vectorizer.n_features)]
    assert set(names) == vocabulary and len(names) == len(vocabulary)
    rows = vectorizer.transform(texts)
    for r, want in enumerate(expected):
        start, end = rows.indptr[r], rows.indptr[r + 1]
        got = {
            names[k]: v for k, v in zip(rows.indices[start:end].tolist(), rows.data[start:end].tolist(), strict=True)
        }
        assert got.keys() == want.keys()
        np.testing.assert_allclose([got[f] for f in want], [want[f] for f in want], rtol=1e-12)
    assert np.allclose(fitted.toarray(), vectorizer.transform(train).toarray())


def test_restricted_vectoriser_keeps_the_chosen_columns_in_order():
    train = [r.text for r in load_starter("train")]
    vectorizer, _, _ = TextVectorizer.fit_transform(TextAnalyzer(), train, (2, 2, 1), WEIGHTS)
    columns = np.arange(0, vectorizer.n_features, 3)
    smaller, remap = vectorizer.restrict(columns)
    assert smaller.n_features == columns.size
    assert [smaller.feature_name(int(remap[c])) for c in columns] == [vectorizer.feature_name(int(c)) for c in columns]
    assert np.all(remap[np.setdiff1d(np.arange(vectorizer.n_features), columns)] == -1)
