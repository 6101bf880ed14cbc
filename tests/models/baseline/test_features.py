"""Character n-gram TF-IDF: equal to scikit-learn's TfidfVectorizer, Chinese-first."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from verimod.models.baseline.features import (
    BOS,
    EOS,
    CharNgramVectorizer,
    char_ngrams,
    mask_quotes,
    normalize_chars,
    normalize_text,
)
from verimod.tasks.varm.starter import load_starter


def test_normalisation_is_per_character_nfkc_lowercase():
    text = "ＡＢｃ，胖子ＨＲ"
    chars = normalize_chars(text)
    assert len(chars) == len(text)
    assert normalize_text(text) == "abc,胖子hr"


def test_ngrams_are_characters_never_whitespace_tokens():
    grams = char_ngrams("胖子 好", 1, 2, bounds=True)
    assert "胖" in grams and "胖子" in grams and "子 " in grams and " 好" in grams
    assert f"{BOS}胖" in grams and f"好{EOS}" in grams and BOS not in grams


def test_quote_view_masks_quoted_words():
    assert mask_quotes("有人骂“垃圾”，真过分") == "有人骂“〃”，真过分"
    grams = char_ngrams("骂“垃圾”", 1, 2, bounds=False, quotes=True)
    assert "q:骂“〃" in grams and "q:“〃”" in grams and not any(g.startswith("q:垃") for g in grams)


@pytest.mark.parametrize("sublinear", [True, False])
def test_equals_sklearn_tfidf(sublinear):
    texts = [r.text for r in load_starter("dev")]
    ours = CharNgramVectorizer.fit(texts, 1, 3, bounds=True, sublinear_tf=sublinear, quotes=True)

    def analyzer(text: str) -> list[str]:
        return char_ngrams(normalize_text(text), 1, 3, True, True)

    reference = TfidfVectorizer(analyzer=analyzer, sublinear_tf=sublinear, lowercase=False)
    expected = reference.fit_transform(texts)
    assert ours.vocabulary == list(reference.get_feature_names_out())
    np.testing.assert_allclose(ours.transform(texts).toarray(), expected.toarray(), rtol=1e-12, atol=1e-15)


def test_unknown_text_gives_zero_row_and_rebuild_from_arrays_is_exact():
    texts = [r.text for r in load_starter("dev")]
    fitted = CharNgramVectorizer.fit(texts, 1, 2, min_df=2)
    rebuilt = CharNgramVectorizer(fitted.vocabulary, fitted.idf.copy(), 1, 2)
    rows = rebuilt.transform(["", "𠀀𠀁", texts[0]])
    assert rows[0].nnz == 0 and rows[1].nnz == 0
    assert np.array_equal(rows[2].toarray(), fitted.transform([texts[0]]).toarray())
    assert all(g for g in fitted.vocabulary)
