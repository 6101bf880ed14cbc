"""The embedded baseline model: configuration, prediction, saving and loading.

:meth:`BaselineModel.predict` (numpy only, no scikit-learn object):

1. TF-IDF rows over character n-grams (:mod:`~verimod.models.baseline.features`) and the
   best target span of the input (:mod:`~verimod.models.baseline.target`);
2. per-field probabilities from five linear softmax classifiers (``probabilities`` of each
   :class:`BaselinePrediction` are these *marginal* field probabilities); type and
   explicitness also read the best span's characters and probability;
3. for inputs that may have an implicit target, the nearest training implicit target;
4. exact joint decoding of (type, explicitness, stance, label, category) under the codebook
   (:func:`~verimod.models.baseline.fields.joint_decode`); ``explicit`` needs a candidate
   span in the text, ``implicit`` a span or an implicit-map hit, ``no_clear_target`` is always
   possible; the target is ``no_clear_target`` exactly when the type is;
5. the anchored rationale quoting the input's cues (:mod:`~verimod.models.baseline.rationale`).
   Every rationale is parsed back before it is returned; should it ever not reproduce the
   record, a rationale without quotes is written instead (it always does).

Saving and loading go through :mod:`~verimod.models.baseline.persist` (JSON + ``.npz``); the
same model always gives the same bytes, and a loaded model predicts bit-identically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
import scipy.sparse as sp
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from verimod.core.errors import InputError
from verimod.models.baseline import persist
from verimod.models.baseline.features import BLOCKS, CharNgramVectorizer, FeatureSpace, normalize_chars
from verimod.models.baseline.fields import COMBOS, LinearSoftmax, joint_decode
from verimod.models.baseline.rationale import EvidenceLocator, sanitize, write_rationale
from verimod.models.baseline.target import ImplicitTargetMap, SpanScorer, admissible_target
from verimod.tasks.varm.codebook import DISCRETE_FIELDS, NO_CLEAR_TARGET, VOCABULARY
from verimod.tasks.varm.parser import parse_rationale
from verimod.tasks.varm.schema import VarmRecord

FORMAT_NAME: Final = "verimod-baseline"
FORMAT_VERSION: Final = 1
MODEL_VERSION: Final = "verimod-baseline/1"

_TYPE, _EXPL = 0, 1  # columns of COMBOS
_EXPLICIT = VOCABULARY["target_explicitness"].index("explicit")
_NCT_TYPE = VOCABULARY["target_type"].index(NO_CLEAR_TARGET)


#: Which feature blocks (:data:`~verimod.models.baseline.features.BLOCKS`) each field reads.
DEFAULT_BLOCKS: Final = {
    "target_type": ("text", "target", "span"),
    "target_explicitness": ("text", "target", "span"),
    "stance": ("text",),
    "label": ("text",),
    "category": ("text",),
}


class BaselineConfig(BaseModel):
    """Training configuration (all of it enters the model's cache key and ``model.json``).

    Text features: character n-grams ``ngram_min``–``ngram_max`` (with text boundaries when
    ``bounds``; sublinear tf; n-grams in at least ``min_df`` texts; plus the quotation view
    when ``quote_view``). Field classifiers: L2 logistic regression with inverse strength
    ``c`` and ``class_weight``; ``blocks`` says which feature blocks each field reads, the
    target block (``target_ngram_max``, scaled by ``target_weight``) describing the span the
    extractor picked, cross-fitted over ``oof_folds`` folds for training. Span scorer: spans
    up to ``span_max_len`` characters, ``span_c``, ``span_negatives`` random negatives per
    text, at most ``span_max_texts`` training records (a seeded sample; the target-aware
    classifiers train on the same sample). Implicit targets: cosine ``implicit_threshold``.
    The defaults were chosen on the starter dev split and 5-fold cross-validation on its
    train split.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    ngram_min: int = Field(1, ge=1, le=8)
    ngram_max: int = Field(2, ge=1, le=8)
    bounds: bool = True
    sublinear_tf: bool = True
    min_df: int = Field(1, ge=1)
    quote_view: bool = True
    c: float = Field(1.0, gt=0)
    class_weight: Literal["balanced"] | None = "balanced"
    target_ngram_max: int = Field(2, ge=1, le=8)
    target_weight: float = Field(0.7, gt=0)
    blocks: dict[str, tuple[str, ...]] = Field(default_factory=lambda: dict(DEFAULT_BLOCKS))
    oof_folds: int = Field(5, ge=2)
    span_max_len: int = Field(10, ge=1, le=32)
    span_c: float = Field(3.0, gt=0)
    span_negatives: int = Field(200, ge=0)
    span_max_texts: int = Field(4000, ge=1)
    implicit_threshold: float = Field(0.3, ge=0.0)

    @field_validator("blocks")
    @classmethod
    def _known_blocks(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        if set(value) != set(DISCRETE_FIELDS):
            raise ValueError(f"blocks needs exactly the fields {', '.join(DISCRETE_FIELDS)}")
        for field_name, blocks in value.items():
            if "text" not in blocks or not set(blocks) <= set(BLOCKS):
                raise ValueError(f"blocks of {field_name}: 'text' and then any of {', '.join(BLOCKS)}")
        return value


class _Meta(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["verimod-baseline"]
    format_version: int
    model_version: str
    config: BaselineConfig
    data_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    n_train: int = Field(ge=1)
    seed: int
    fields: dict[str, list[str]]


@dataclass(frozen=True)
class BaselinePrediction:
    """One prediction: the record, its anchored rationale, and how it was reached.

    ``probabilities[field][value]`` are the field classifiers' marginal probabilities (the
    record is the most probable *consistent* combination, so it need not take every field's
    argmax). ``target_source`` is ``"span"`` (a substring of the input), ``"implicit_map"``
    (a training implicit target) or ``"none"`` (no_clear_target); ``target_score`` is the
    span's probability among the input's candidates, or the implicit-map cosine similarity
    (None for no_clear_target). ``cues`` are the quoted pieces of the input cited for each
    field.
    """

    record: VarmRecord
    rationale: str
    probabilities: dict[str, dict[str, float]]
    target_source: Literal["span", "implicit_map", "none"]
    target_score: float | None
    cues: dict[str, list[str]] = field(default_factory=dict)


class BaselineModel:
    """A trained baseline model (see the module docstring). Build it with
    :func:`verimod.models.baseline.training.train_baseline` or :meth:`load`."""

    def __init__(
        self,
        config: BaselineConfig,
        space: FeatureSpace,
        classifiers: dict[str, LinearSoftmax],
        span_scorer: SpanScorer,
        implicit_map: ImplicitTargetMap,
        data_sha256: str,
        n_train: int,
        seed: int,
    ) -> None:
        if set(classifiers) != set(DISCRETE_FIELDS):
            raise ValueError("one classifier per discrete field is needed")
        self.config = config
        self.space = space
        self.vectorizer = space.text
        self.classifiers = classifiers
        self.span_scorer = span_scorer
        self.implicit_map = implicit_map
        self.data_sha256 = data_sha256
        self.n_train = n_train
        self.seed = seed
        self._files: dict[str, bytes] | None = None

    # ------------------------------------------------------------------ prediction

    def predict(self, texts: Sequence[str]) -> list[BaselinePrediction]:
        """Predict a record and write a rationale for each text (deterministic)."""
        norms = [normalize_chars(t) for t in texts]
        text_rows = self.vectorizer.transform_normalized(["".join(n) for n in norms])
        spans = [self.span_scorer.best_span(t) for t in texts]
        features = self.space.build(text_rows, spans)
        log_probs = [self.classifiers[f].log_proba(features) for f in DISCRETE_FIELDS]
        implicit = self.implicit_map.lookup(text_rows)
        allowed = np.ones((len(texts), len(COMBOS)), dtype=bool)
        needs_target = COMBOS[:, _TYPE] != _NCT_TYPE
        for row, (span, hit) in enumerate(zip(spans, implicit, strict=True)):
            if span is None:
                allowed[row] &= ~(needs_target & (COMBOS[:, _EXPL] == _EXPLICIT))
                if hit is None:
                    allowed[row] &= ~needs_target
        choice = COMBOS[joint_decode(log_probs, allowed)]
        out = []
        for row, text in enumerate(texts):
            values = {f: VOCABULARY[f][choice[row, k]] for k, f in enumerate(DISCRETE_FIELDS)}
            target, source, score = self._target(values, spans[row], implicit[row])
            record = VarmRecord(target=target, **values)
            cues = self._cues(text_rows, row, choice[row], text, norms[row])
            rationale = write_rationale(record, cues)
            if parse_rationale(rationale).values != tuple(record.model_dump().values()):  # pragma: no cover
                cues, rationale = {}, write_rationale(record, {})
            probabilities = {
                f: dict(zip(VOCABULARY[f], np.exp(log_probs[k][row]).tolist(), strict=True))
                for k, f in enumerate(DISCRETE_FIELDS)
            }
            out.append(BaselinePrediction(record, rationale, probabilities, source, score, cues))
        return out

    @staticmethod
    def _target(
        values: dict[str, str], span: tuple[str, float] | None, hit: tuple[str, float] | None
    ) -> tuple[str, Literal["span", "implicit_map", "none"], float | None]:
        if values["target_type"] == NO_CLEAR_TARGET:
            return NO_CLEAR_TARGET, "none", None
        if values["target_explicitness"] == "implicit" and hit is not None:
            target = sanitize(hit[0])
            if admissible_target(target):
                return target, "implicit_map", hit[1]
        if span is not None:
            return span[0], "span", span[1]
        assert hit is not None  # decoding allows a target only when a span or a hit exists
        target = sanitize(hit[0])
        return (target if admissible_target(target) else "某人"), "implicit_map", hit[1]

    def _cues(
        self, text_rows: sp.csr_matrix, row: int, codes: np.ndarray, text: str, norm: list[str]
    ) -> dict[str, list[str]]:
        start, end = text_rows.indptr[row], text_rows.indptr[row + 1]
        indices, values = text_rows.indices[start:end], text_rows.data[start:end]
        vocabulary = self.vectorizer.vocabulary
        grams = [vocabulary[k] for k in indices.tolist()]
        locator = EvidenceLocator(text, norm)
        cues = {}
        for k, f in enumerate(DISCRETE_FIELDS):
            weights = self.classifiers[f].contributions(indices, values, int(codes[k]))
            cues[f] = locator.segments(grams, weights)
        return cues

    # ------------------------------------------------------------------ persistence

    def metadata(self) -> dict[str, Any]:
        """The content of ``model.json``."""
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "model_version": MODEL_VERSION,
            "config": self.config.model_dump(),
            "data_sha256": self.data_sha256,
            "n_train": self.n_train,
            "seed": self.seed,
            "fields": {f: list(VOCABULARY[f]) for f in DISCRETE_FIELDS},
        }

    def files(self) -> dict[str, bytes]:
        """The bytes of the three model files (deterministic; computed once)."""
        if self._files is None:
            arrays: dict[str, np.ndarray] = {"idf": self.vectorizer.idf}
            for f in DISCRETE_FIELDS:
                arrays[f"{f}.weights"] = self.classifiers[f].weights
                arrays[f"{f}.bias"] = self.classifiers[f].bias
            arrays["span.weights"] = self.span_scorer.weights
            arrays["target_idf"] = self.space.target.idf
            rows = self.implicit_map.rows
            arrays["implicit.data"] = rows.data.astype(np.float64)
            arrays["implicit.indices"] = rows.indices.astype(np.int64)
            arrays["implicit.indptr"] = rows.indptr.astype(np.int64)
            vocab = {
                "ngrams": self.vectorizer.vocabulary,
                "target_ngrams": self.space.target.vocabulary,
                "span_features": self.span_scorer.features,
                "span_lexicon": self.span_scorer.lexicon,
                "implicit_targets": self.implicit_map.targets,
            }
            self._files = {
                persist.MODEL_FILE: persist.json_bytes(self.metadata()),
                persist.VOCAB_FILE: persist.json_bytes(vocab),
                persist.ARRAYS_FILE: persist.npz_bytes(arrays),
            }
        return self._files

    @property
    def fingerprint(self) -> str:
        """sha256 of the saved files: two models with the same fingerprint predict the same."""
        return persist.fingerprint(self.files())

    def save(self, directory: str | Path) -> Path:
        """Write ``model.json``, ``vocab.json`` and ``arrays.npz`` into ``directory``."""
        path = Path(directory)
        persist.write_files(path, self.files())
        return path

    @classmethod
    def load(cls, directory: str | Path) -> BaselineModel:
        """Load a saved model (no pickle); :class:`InputError` naming the file if it is not one."""
        path = Path(directory)
        files = persist.read_files(path)
        model = _from_files(files, path)
        model._files = files
        return model


def _from_files(files: dict[str, bytes], path: Path) -> BaselineModel:
    meta_where, vocab_where, arrays_where = (str(path / name) for name in persist.FILES)
    try:
        meta = _Meta.model_validate(persist.load_json(files[persist.MODEL_FILE], meta_where))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError.at(meta_where, None, where or None, f"not a baseline model file: {first['msg']}") from None
    if meta.format_version != FORMAT_VERSION or meta.model_version != MODEL_VERSION:
        raise InputError.at(
            meta_where,
            None,
            None,
            f"model format {meta.format_version} / {meta.model_version} is not the one this verimod reads "
            f"({FORMAT_VERSION} / {MODEL_VERSION}); retrain it with 'verimod train baseline'",
        )
    if meta.fields != {f: list(VOCABULARY[f]) for f in DISCRETE_FIELDS}:
        raise InputError.at(meta_where, None, "fields", "field values differ from this verimod's codebook")
    vocab = persist.load_json(files[persist.VOCAB_FILE], vocab_where)
    lists = {}
    for key in ("ngrams", "target_ngrams", "span_features", "span_lexicon", "implicit_targets"):
        value = vocab.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError.at(vocab_where, None, key, "expected a list of strings")
        lists[key] = value
    arrays = persist.load_arrays(files[persist.ARRAYS_FILE], arrays_where)
    config = meta.config
    try:
        vectorizer = CharNgramVectorizer(
            lists["ngrams"],
            arrays["idf"],
            config.ngram_min,
            config.ngram_max,
            config.bounds,
            config.sublinear_tf,
            config.quote_view,
        )
        target = CharNgramVectorizer(
            lists["target_ngrams"], arrays["target_idf"], 1, config.target_ngram_max, True, config.sublinear_tf
        )
        space = FeatureSpace(vectorizer, target, config.target_weight)
        classifiers = {f: LinearSoftmax(f, arrays[f"{f}.weights"], arrays[f"{f}.bias"]) for f in DISCRETE_FIELDS}
        for clf in classifiers.values():
            if clf.weights.shape[1] != space.n_features:
                raise ValueError(f"{clf.field} weights have {clf.weights.shape[1]} columns, not {space.n_features}")
        span = SpanScorer(
            lists["span_features"],
            arrays["span.weights"],
            lists["span_lexicon"],
            config.span_max_len,
        )
        indptr, indices = arrays["implicit.indptr"], arrays["implicit.indices"]
        if indices.size and (indices.min() < 0 or indices.max() >= vectorizer.n_features):
            raise ValueError("implicit-target rows index columns outside the vocabulary")
        rows = sp.csr_matrix(
            (arrays["implicit.data"], indices, indptr), shape=(len(lists["implicit_targets"]), vectorizer.n_features)
        )
        implicit = ImplicitTargetMap(rows, lists["implicit_targets"], config.implicit_threshold)
    except (KeyError, ValueError, IndexError) as exc:
        raise InputError.at(arrays_where, None, None, f"inconsistent baseline model arrays: {exc}") from None
    return BaselineModel(config, space, classifiers, span, implicit, meta.data_sha256, meta.n_train, meta.seed)
