"""Training the baseline model from VARM reference records.

:func:`train_baseline` is deterministic: the same references (in the same order), seed and
configuration give the same model, byte for byte once saved. scikit-learn is used only
here, to fit the logistic regressions (lbfgs, which draws no random numbers; one BLAS
thread); the seed drives the span scorer's negative sampling, the cross-fitting folds and
the sample of at most ``span_max_texts`` records from which the span scorer and the
target-aware classifiers (type, explicitness) learn. Stance, label and category read the
text alone and learn from every record.

The training data's sha256 (:func:`training_data_sha256`) covers the text and the six fields
of every record, in order — not ids, rationales or tags, which do not change the model.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from verimod.models.baseline.features import CharNgramVectorizer, FeatureSpace, normalize_text
from verimod.models.baseline.fields import LinearSoftmax, fit_linear_softmax
from verimod.models.baseline.model import BaselineConfig, BaselineModel
from verimod.models.baseline.span_training import SpanTrainingSet, out_of_fold_spans
from verimod.models.baseline.target import ImplicitTargetMap, SpanScorer
from verimod.tasks.varm.codebook import DISCRETE_FIELDS, FIELDS, NO_CLEAR_TARGET
from verimod.tasks.varm.schema import VarmReference


def training_data_sha256(references: Sequence[VarmReference]) -> str:
    """sha256 of the training data: one canonical JSON line ``[text, six fields]`` per record."""
    digest = hashlib.sha256()
    for ref in references:
        row = [ref.text, *(getattr(ref, f) for f in FIELDS)]
        digest.update(json.dumps(row, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()


#: ``on_stage(done, total, name)``: called as each training stage begins (``done`` finished of ``total``)
StageCallback = Callable[[int, int, str], None]
#: the training stages, in order (one classifier per discrete field in between)
STAGES = ("character n-grams", "target spans", "out-of-fold target spans", "implicit targets")


def train_baseline(
    references: Sequence[VarmReference],
    seed: int = 0,
    config: BaselineConfig | None = None,
    on_stage: StageCallback | None = None,
) -> BaselineModel:
    """Train a baseline model on ``references`` (at least one record; ``ValueError`` if none).
    ``on_stage`` is told each stage as it begins (progress only; it cannot change the model)."""
    if not references:
        raise ValueError("no training records")
    partial = [r.id for r in references if not r.is_complete]
    if partial:
        raise ValueError(
            f"the baseline trains on complete records; {len(partial)} reference(s) are partial (first: {partial[0]})"
        )
    # One BLAS/OpenMP thread: the problems are small, and competing thread pools made lbfgs
    # ten times slower on a 2-core machine; one thread also keeps the arithmetic order fixed.
    with threadpool_limits(limits=1):
        return _train(references, seed, config or BaselineConfig(), on_stage or (lambda done, total, name: None))


def _train(
    references: Sequence[VarmReference], seed: int, config: BaselineConfig, on_stage: StageCallback
) -> BaselineModel:
    total = len(STAGES) + len(DISCRETE_FIELDS)
    on_stage(0, total, STAGES[0])
    texts = [r.text for r in references]
    records = [r.record() for r in references]  # complete: checked by train_baseline
    targets = [r.target for r in records]
    vectorizer = CharNgramVectorizer.fit(
        texts, config.ngram_min, config.ngram_max, config.bounds, config.sublinear_tf, config.min_df, config.quote_view
    )
    text_rows = vectorizer.transform_normalized([normalize_text(t) for t in texts])
    # The span scorer and the target-aware classifiers learn from at most span_max_texts
    # records (a seeded sample): each needs candidate rows and a cross-fitted span.
    sample = list(range(len(texts)))
    if len(sample) > config.span_max_texts:
        sample = sorted(random.Random(seed).sample(sample, config.span_max_texts))
    sample_texts, sample_targets = [texts[k] for k in sample], [targets[k] for k in sample]
    on_stage(1, total, STAGES[1])
    span_data = SpanTrainingSet(sample_texts, sample_targets, config.span_max_len, config.span_negatives, seed)
    span_scorer = SpanScorer(span_data.names, span_data.fit(config.span_c), targets, config.span_max_len)
    on_stage(2, total, STAGES[2])
    spans = out_of_fold_spans(sample_texts, span_data, sample_targets, config.oof_folds, config.span_c, seed)
    target_vectorizer = CharNgramVectorizer.fit(
        [s[0] for s in spans if s is not None], 1, config.target_ngram_max, True, config.sublinear_tf
    )
    space = FeatureSpace(vectorizer, target_vectorizer, config.target_weight)
    sample_features = space.build(text_rows[sample], spans)
    classifiers = {}
    for done, f in enumerate(DISCRETE_FIELDS, 3):
        on_stage(done, total, f"{f} classifier")
        columns = space.columns(config.blocks[f])
        if set(config.blocks[f]) == {"text"}:  # text columns only: every record
            rows, y = text_rows, [getattr(r, f) for r in records]
        else:
            rows, y = sample_features[:, columns], [getattr(records[k], f) for k in sample]
        clf = fit_linear_softmax(f, rows, y, config.c, config.class_weight)
        weights = np.zeros((clf.weights.shape[0], space.n_features))
        weights[:, columns] = clf.weights
        classifiers[f] = LinearSoftmax(f, weights, clf.bias)
    on_stage(total - 1, total, STAGES[3])
    implicit_rows = [
        k
        for k, r in enumerate(records)
        if r.target_explicitness == "implicit" and r.target != NO_CLEAR_TARGET and r.target not in texts[k]
    ]
    implicit_map = ImplicitTargetMap(
        sp.csr_matrix(text_rows[implicit_rows]),
        [records[k].target for k in implicit_rows],
        config.implicit_threshold,
    )
    return BaselineModel(
        config,
        space,
        classifiers,
        span_scorer,
        implicit_map,
        training_data_sha256(references),
        len(references),
        seed,
    )
