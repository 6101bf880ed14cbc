"""Training the baseline model from VARM reference records, complete or partial.

**Partial records.** Each field learns from the records that carry it: the label from every
record with a label (a label-only data set trains it), the category from the *harmful* records
with a category (it is read as conditional on harmful), the stance from the *non-harmful*
records with a stance (conditional on non-harmful), target type and explicitness from the
records with them, the span scorer from the records whose target string is a candidate span of
their text, the implicit-target map from records with an implicit target written outside the
text. The record-level decoder enforces the codebook whatever the fields were trained on
(:func:`~verimod.models.baseline.fields.record_scores`). ``weights`` (one per record, default 1)
scale each record's loss in every classifier that learns from it.

:func:`train_baseline` is deterministic: the same references (in the same order), weights, seed
and configuration give the same model, byte for byte once saved. scikit-learn fits the
logistic regressions (liblinear with a fixed ``random_state`` for binary fields, lbfgs for the
others; one BLAS thread); the seed drives the obfuscated copies, the span scorer's negative
sampling, the cross-fitting folds and the sample of at most ``span_max_texts`` records from
which the span scorer learns.

**Pruning.** With ``max_features`` > 0, the text columns are ranked by how far their mean value
in each class of the label, category and stance training rows lies from their mean over those
rows (the largest such gap, each field's gaps scaled by its largest); the top ``max_features``
are kept, the rows renormalised over them, and every classifier is fitted on them. That keeps
a model trained on tens of thousands of comments to a few MB.

The training data's sha256 (:func:`training_data_sha256`) covers the text and the six fields of
every record, in order, and the weights when any differs from 1 — not ids, rationales or tags,
which do not change the model.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from verimod.models.baseline.augment import obfuscate
from verimod.models.baseline.features import CharNgramVectorizer, FeatureSpace
from verimod.models.baseline.fields import LinearSoftmax, fit_linear_softmax
from verimod.models.baseline.leakage import LeakageIndex
from verimod.models.baseline.model import BaselineConfig, BaselineModel, TrainingSummary, analyzer_of
from verimod.models.baseline.span_training import SpanTrainingSet, out_of_fold_spans
from verimod.models.baseline.target import ImplicitTargetMap, SpanScorer
from verimod.models.baseline.vectorizer import TextVectorizer
from verimod.tasks.varm.codebook import DISCRETE_FIELDS, FIELDS, NO_CLEAR_TARGET, VOCABULARY
from verimod.tasks.varm.schema import VarmReference

#: The fields that read the text columns only, and the records each learns from.
TEXT_FIELDS = ("label", "category", "stance")


def training_data_sha256(references: Sequence[VarmReference], weights: Sequence[float] | None = None) -> str:
    """sha256 of the training data: one canonical JSON line ``[text, six fields]`` per record
    (``[text, six fields, weight]`` when ``weights`` has a value other than 1)."""
    digest = hashlib.sha256()
    weighted = weights is not None and any(w != 1 for w in weights)
    for k, ref in enumerate(references):
        row: list[object] = [ref.text, *(getattr(ref, f) for f in FIELDS)]
        if weighted:
            assert weights is not None
            row.append(float(weights[k]))
        digest.update(json.dumps(row, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()


def learns(reference: VarmReference, field: str) -> bool:
    """True when ``reference`` trains ``field`` (module docstring)."""
    value = getattr(reference, field)
    if value is None:
        return False
    if field == "category":
        return reference.label == "harmful" and value != "non_attack"
    if field == "stance":
        return reference.label == "non_harmful"
    if field == "target":
        return value != NO_CLEAR_TARGET
    return True


def field_counts(references: Sequence[VarmReference]) -> dict[str, int]:
    """How many of ``references`` train each field (the six fields, in anchor order)."""
    return {f: sum(learns(r, f) for r in references) for f in FIELDS}


def train_baseline(
    references: Sequence[VarmReference],
    seed: int = 0,
    config: BaselineConfig | None = None,
    *,
    weights: Sequence[float] | None = None,
    leakage: LeakageIndex | None = None,
    sources: Sequence[dict[str, object]] = (),
) -> BaselineModel:
    """Train a baseline model on ``references`` (complete or partial; module docstring).

    ``weights``: one non-negative weight per reference. ``leakage``: the index of the training
    texts the model keeps (default: every text stored, see
    :mod:`~verimod.models.baseline.leakage`). ``sources``: a description of where the records
    came from, kept in ``model.json``. ``ValueError``
    when there is no record, a weight is negative or their number differs, or no record carries
    a label.
    """
    if not references:
        raise ValueError("no training records")
    if weights is not None and (len(weights) != len(references) or any(w < 0 for w in weights)):
        raise ValueError("weights: one non-negative number per training record")
    if not any(r.label is not None for r in references):
        raise ValueError("no training record carries a label")
    config = config or BaselineConfig()
    # One BLAS/OpenMP thread: the problems are small, and competing thread pools made lbfgs
    # ten times slower on a 2-core machine; one thread also keeps the arithmetic order fixed.
    index = leakage if leakage is not None else LeakageIndex.build([r.text for r in references], [])
    identity = (training_data_sha256(references, weights), index, tuple(sources))
    with threadpool_limits(limits=1):
        row_weights = np.asarray(weights if weights is not None else [1.0] * len(references), dtype=np.float64)
        return _train(references, row_weights, seed, config, identity)


def _augmented(references: Sequence[VarmReference], seed: int, config: BaselineConfig) -> list[tuple[int, str]]:
    """``(record index, obfuscated text)`` for ``augment_rate`` of the labelled records."""
    rng = random.Random(f"augment|{seed}")
    out = []
    for copy_number, (k, ref) in itertools.product(range(config.augment_copies), enumerate(references)):
        if ref.label is None or rng.random() >= config.augment_rate:
            continue
        protected = []
        if ref.target and ref.target != NO_CLEAR_TARGET:
            start = ref.text.find(ref.target)
            while start >= 0:
                protected.append((start, start + len(ref.target)))
                start = ref.text.find(ref.target, start + 1)
        kinds = (rng.choice(config.augment_kinds),) if config.augment_single_kind else config.augment_kinds
        key = f"{k}|{ref.text}" if copy_number == 0 else f"{k}|{copy_number}|{ref.text}"
        copy = obfuscate(ref.text, key, seed, config.augment_chars, kinds, protected)
        if copy != ref.text:
            out.append((k, copy))
    return out


def _importance(rows: sp.csr_matrix, y: Sequence[str]) -> np.ndarray:
    """Per column, the largest gap between a class's mean and the overall mean, scaled to max 1."""
    labels = np.asarray(y)
    overall = np.asarray(rows.mean(axis=0)).ravel()
    gap = np.zeros(rows.shape[1])
    for value in np.unique(labels):
        mask = labels == value
        gap = np.maximum(gap, np.abs(np.asarray(rows[mask].mean(axis=0)).ravel() - overall))
    top = gap.max() if gap.size else 0.0
    return gap / top if top > 0 else gap


def _fit_text_fields(
    rows: sp.csr_matrix,
    targets: dict[str, tuple[np.ndarray, list[str]]],
    weights: np.ndarray,
    config: BaselineConfig,
    block_of: np.ndarray,
) -> dict[str, LinearSoftmax]:
    out = {}
    for f, (index, y) in targets.items():
        c = config.c_label if f == "label" else config.c
        scale = np.ones(rows.shape[1])
        if f == "label":  # per-block column scales, folded back into the weights
            scale = np.asarray(config.label_scale, dtype=np.float64)[block_of]
        clf = fit_linear_softmax(f, rows[index] @ sp.diags(scale), y, c, config.class_weight, weights[index])
        out[f] = LinearSoftmax(f, clf.weights * scale, clf.bias)
    return out


def _train(
    references: Sequence[VarmReference],
    weights: np.ndarray,
    seed: int,
    config: BaselineConfig,
    identity: tuple[str, LeakageIndex, tuple[dict[str, object], ...]],
) -> BaselineModel:
    texts = [r.text for r in references]
    copies = _augmented(references, seed, config)
    all_texts = texts + [text for _, text in copies]
    origin = np.concatenate([np.arange(len(texts)), np.array([k for k, _ in copies], dtype=np.int64)]).astype(np.int64)
    row_weights = weights[origin]
    analyzer = analyzer_of(config)
    vectorizer, text_rows, occurrences = TextVectorizer.fit_transform(
        analyzer, all_texts, config.min_df, config.block_weights
    )
    # The rows each text-only field learns from (augmented copies train label and category).
    targets: dict[str, tuple[np.ndarray, list[str]]] = {}
    for f in ("label", "category"):
        index = np.flatnonzero([learns(references[int(k)], f) for k in origin])
        targets[f] = (index, [str(getattr(references[int(origin[i])], f)) for i in index])
    stance_index = np.flatnonzero([learns(r, "stance") for r in references])
    targets["stance"] = (stance_index, [str(references[int(i)].stance) for i in stance_index])
    targets = {f: v for f, v in targets.items() if v[0].size}
    if config.max_features and vectorizer.n_features > config.max_features:
        importance = np.zeros(vectorizer.n_features)
        for index, y in targets.values():
            importance = np.maximum(importance, _importance(text_rows[index], y))
        order = np.lexsort((np.arange(importance.size), -importance))
        vectorizer, remap = vectorizer.restrict(np.sort(order[: config.max_features]))
        rows, columns, counts = occurrences[0], remap[occurrences[1]], occurrences[2]
        kept = columns >= 0
        text_rows = vectorizer.rows_of(rows[kept], columns[kept], len(all_texts), counts[kept])
    text_only = _fit_text_fields(text_rows, targets, row_weights, config, vectorizer.block_of)
    original_rows = text_rows[: len(texts)]

    # The span scorer learns from at most span_max_texts records with a target span.
    with_target = [k for k, r in enumerate(references) if learns(r, "target") and str(r.target) in r.text]
    if len(with_target) > config.span_max_texts:
        with_target = sorted(random.Random(seed).sample(with_target, config.span_max_texts))
    span_texts = [texts[k] for k in with_target]
    span_targets = [str(references[k].target) for k in with_target]
    span_data = SpanTrainingSet(span_texts, span_targets, config.span_max_len, config.span_negatives, seed)
    lexicon = [str(r.target) for r in references if learns(r, "target")]
    span_scorer = SpanScorer(span_data.names, span_data.fit(config.span_c), lexicon, config.span_max_len)
    cross_fitted = out_of_fold_spans(span_texts, span_data, span_targets, config.oof_folds, config.span_c, seed)
    oof = dict(zip(with_target, cross_fitted, strict=True))

    typed = [k for k, r in enumerate(references) if learns(r, "target_type") or learns(r, "target_explicitness")]
    unseen = [k for k in typed if k not in oof]
    spans = {**oof, **dict(zip(unseen, span_scorer.best_spans([texts[k] for k in unseen]), strict=True))}
    spans = {k: spans[k] for k in typed}
    target_vectorizer = CharNgramVectorizer.fit(
        [s[0] for s in spans.values() if s is not None], 1, config.target_ngram_max, True, True
    )
    space = FeatureSpace(vectorizer, target_vectorizer, config.target_weight)
    classifiers: dict[str, LinearSoftmax] = {}
    typed_features = space.build(original_rows[typed], [spans[k] for k in typed]) if typed else None
    position = {k: i for i, k in enumerate(typed)}
    for f in DISCRETE_FIELDS:
        columns = space.columns(config.blocks[f])
        if f in TEXT_FIELDS and set(config.blocks[f]) == {"text"}:
            clf = text_only.get(f)
            if clf is None:  # no record trains it: a uniform classifier
                size = len(VOCABULARY[f])
                clf = LinearSoftmax(f, np.zeros((size, vectorizer.n_features)), np.zeros(size))
        else:
            carriers = [k for k in typed if learns(references[k], f)] if f not in TEXT_FIELDS else []
            if not carriers:
                clf = LinearSoftmax(f, np.zeros((len(VOCABULARY[f]), len(columns))), np.zeros(len(VOCABULARY[f])))
            else:
                assert typed_features is not None
                rows = typed_features[[position[k] for k in carriers]][:, columns]
                y = [str(getattr(references[k], f)) for k in carriers]
                clf = fit_linear_softmax(f, rows, y, config.c, config.class_weight, weights[carriers])
        full = np.zeros((clf.weights.shape[0], space.n_features))
        full[:, columns] = clf.weights
        if config.half_precision:
            full = full.astype(np.float16).astype(np.float64)
        classifiers[f] = LinearSoftmax(f, full, clf.bias)

    implicit_rows = [
        k
        for k, r in enumerate(references)
        if r.target_explicitness == "implicit" and learns(r, "target") and str(r.target) not in texts[k]
    ]
    implicit_map = ImplicitTargetMap(
        sp.csr_matrix(original_rows[implicit_rows]),
        [str(references[k].target) for k in implicit_rows],
        config.implicit_threshold,
    )
    data_sha256, leakage, sources = identity
    summary = TrainingSummary(field_counts(references), len(copies), sources)
    return BaselineModel(
        config,
        vectorizer,
        space,
        classifiers,
        span_scorer,
        implicit_map,
        data_sha256,
        len(references),
        seed,
        summary,
        leakage,
    )
