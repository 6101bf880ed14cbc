"""Target extraction: candidates, the trained span scorer, cross-fitting, implicit targets."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from verimod.models.baseline.span_training import SpanTrainingSet, fit_span_scorer, out_of_fold_spans
from verimod.models.baseline.target import (
    ImplicitTargetMap,
    SpanFeatures,
    admissible_target,
    candidate_spans,
    length_feature,
)
from verimod.stats import char_f1
from verimod.tasks.varm.starter import load_starter


def test_candidates_never_contain_punctuation_space_or_brackets():
    text = "[L: harmful] 河南人，又来了！【T: 他】"
    spans = [text[i:j] for i, j in candidate_spans(text, 10)]
    assert "河南人" in spans and "harmful" in spans and "他" in spans
    assert all(not any(ch in s for ch in "[]【】 ，！:") for s in spans)
    assert all(len(s) <= 10 for s in spans)
    assert candidate_spans("。。。！！", 10) == [] and candidate_spans("", 10) == []


def test_admissible_rejects_no_target_aliases():
    assert admissible_target("河南人") and admissible_target("HR")
    assert not admissible_target("无") and not admissible_target("None") and not admissible_target("")


def _brute_force_score(scorer, w: dict[str, float], text: str, i: int, j: int) -> float:
    """The score as the plain sum of the span's feature weights (the training definition)."""
    pos = SpanFeatures(text)
    names = [*pos.start[i], *pos.end[j], *pos.inner[i:j], length_feature(j - i)]
    if j - i >= 2:
        names += [pos.start2[i], pos.end2[j]]
    span = text[i:j]
    if span.isascii():
        names.append("ASCII")
    if span in scorer.lexicon:
        names += ["LEX", "W=" + span]
    elif any(span in entry for entry in scorer.lexicon) and len(span) >= 2:
        names.append("LEXPART")
    return sum(w.get(n, 0.0) for n in names)


def test_scorer_on_held_out_texts_and_fast_scores_equal_feature_sums():
    train, dev = load_starter("train"), load_starter("dev")
    scorer = fit_span_scorer([r.text for r in train], [r.target for r in train])
    explicit = [r for r in dev if r.target_explicitness == "explicit"]
    found = [scorer.best_span(r.text) for r in explicit]
    assert all(f is not None and f[0] in r.text and 0 < f[1] <= 1 for f, r in zip(found, explicit, strict=True))
    t_f1 = np.mean([char_f1(f[0], r.target) for f, r in zip(found, explicit, strict=True) if f])
    assert t_f1 > 0.7  # measured 0.90 on the dev split's explicit targets
    w = dict(zip(scorer.features, scorer.weights.tolist(), strict=True))
    for r in dev[:10]:
        spans = candidate_spans(r.text, scorer.max_len)
        fast = scorer.scores(r.text, spans)
        slow = [_brute_force_score(scorer, w, r.text, i, j) for i, j in spans]
        np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-9)


def test_training_set_rows_and_cross_fitted_spans():
    train = load_starter("train")[:120]
    texts, targets = [r.text for r in train], [r.target for r in train]
    data = SpanTrainingSet(texts, targets, 10, 16, seed=0)
    assert data.bounds[0] == 0 and data.bounds[-1] == data.matrix.shape[0]
    for g in range(len(data.texts)):  # every group has a positive, listed first
        assert data.positive[data.bounds[g]]
    assert data.names == sorted(data.names)
    spans = out_of_fold_spans(texts, data, targets, folds=3, c=3.0, seed=0)
    assert len(spans) == len(texts) and all(s is None or s[0] in t for s, t in zip(spans, texts, strict=True))
    again = out_of_fold_spans(texts, data, targets, folds=3, c=3.0, seed=0)
    assert spans == again


def test_implicit_map_threshold_and_ties():
    rows = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0]]))
    mapping = ImplicitTargetMap(rows, ["河南人", "印度人"], threshold=0.5)
    query = sp.csr_matrix(np.array([[0.8, 0.6], [0.3, 0.4], [0.0, 0.0]]))
    assert mapping.lookup(query) == [("河南人", 0.8), None, None]
    assert ImplicitTargetMap(sp.csr_matrix((0, 2)), [], 0.5).lookup(query) == [None, None, None]


def _one_by_one(scorer, text: str) -> tuple[str, float] | None:
    """The best admissible span of one text from :meth:`SpanScorer.scores` (the reference path)."""
    spans = candidate_spans(text, scorer.max_len)
    if not spans:
        return None
    scores = scorer.scores(text, spans)
    probabilities = np.exp(scores - scores.max())
    probabilities /= probabilities.sum()
    for k in np.argsort(-scores, kind="stable").tolist():
        i, j = spans[k]
        if admissible_target(text[i:j]):
            return text[i:j], float(probabilities[k])
    return None


def test_batch_spans_equal_the_one_by_one_scores():
    train, dev = load_starter("train"), load_starter("dev")
    scorer = fit_span_scorer([r.text for r in train], [r.target for r in train])
    texts = [r.text for r in dev[:60]] + ["", "。。！", "无", "HR说河南人", "𠀀河南人😀", "a b c"]
    batch = scorer.best_spans(texts)
    for text, got in zip(texts, batch, strict=True):
        want = _one_by_one(scorer, text)
        assert (got is None) == (want is None), text
        if got is not None:
            assert got[0] == want[0] and abs(got[1] - want[1]) < 1e-9, text
