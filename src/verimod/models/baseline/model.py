"""The embedded baseline model: configuration, prediction, saving and loading.

:meth:`BaselineModel.predict` (numpy only, no scikit-learn object):

1. the canonical text (:mod:`~verimod.models.baseline.charmap`) and its feature blocks
   (:mod:`~verimod.models.baseline.views`: character n-grams and jieba words; pinyin,
   initials and similar-shape views; stance and lexicon cues), as block-normalised TF-IDF rows
   (:mod:`~verimod.models.baseline.vectorizer`), and the best target span of the input
   (:mod:`~verimod.models.baseline.target`);
2. per-field log-probabilities from five linear softmax classifiers; type and explicitness also
   read the best span's characters and probability; ``category`` is conditional on harmful and
   ``stance`` on non-harmful;
3. for inputs that may have an implicit target, the nearest training implicit target;
4. exact decoding of the most probable codebook-consistent record under the chain
   factorisation of :func:`~verimod.models.baseline.fields.record_scores` (``explicit`` needs a
   candidate span in the text, ``implicit`` a span or an implicit-map hit, ``no_clear_target``
   is always possible); ``probabilities`` of each :class:`BaselinePrediction` are the
   marginals of the posterior over the allowed records;
5. the anchored rationale quoting the input's cues — whole jieba words, never fragments across
   words (:mod:`~verimod.models.baseline.rationale`). Every rationale is parsed back before it is
   returned; should it ever not reproduce the record, a rationale without quotes is written
   instead (it always does).

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
from pydantic import BaseModel, ConfigDict, Field, field_validator

from verimod.models.baseline import persist
from verimod.models.baseline.charmap import canonical_chars, canonical_text, default_charmap
from verimod.models.baseline.features import BLOCKS, FeatureSpace
from verimod.models.baseline.fields import COMBOS, LinearSoftmax, decode_records, marginals, record_scores
from verimod.models.baseline.leakage import LeakageIndex
from verimod.models.baseline.rationale import EvidenceLocator, sanitize, write_rationale
from verimod.models.baseline.target import ImplicitTargetMap, SpanScorer, admissible_target
from verimod.models.baseline.vectorizer import TextVectorizer
from verimod.models.baseline.views import TEXT_BLOCKS, StanceLexicon, TextAnalyzer, words
from verimod.tasks.varm.codebook import DISCRETE_FIELDS, NO_CLEAR_TARGET, VOCABULARY
from verimod.tasks.varm.cue_lexicons import Lexicon
from verimod.tasks.varm.parser import parse_rationale
from verimod.tasks.varm.schema import VarmRecord

FORMAT_NAME: Final = "verimod-baseline"
FORMAT_VERSION: Final = 3
MODEL_VERSION: Final = "verimod-baseline/3"

_TYPE, _EXPL, _LABEL = 0, 1, 3  # columns of COMBOS
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

    Text features (:mod:`~verimod.models.baseline.views`): character n-grams
    ``ngram_min``–``ngram_max`` (text boundaries when ``bounds``), jieba ``words``, the quotation
    view (``quote_view``), the ``robust`` views and the stance/lexicon ``cues``; a feature is kept
    when it occurs in at least ``min_df`` training texts (per block: surface, robust, cues); each
    block is L2-normalised and weighted by ``block_weights``. After a first fit, the
    ``max_features`` text columns with the largest weights (each field's weights scaled by its
    largest) are kept and every classifier is refitted on them (0: no pruning).

    Field classifiers: L2 logistic regression, inverse strength ``c_label`` for the label and
    ``c`` for the others, ``class_weight``; each learns from the records that carry its field
    (category from harmful records, stance from non-harmful ones). ``augment_rate`` of the
    records with a label also train the label and category classifiers as an obfuscated copy
    (:mod:`~verimod.models.baseline.augment`: ``augment_chars`` of their content characters
    rewritten, each copy by one kind of ``augment_kinds`` drawn per record when
    ``augment_single_kind``, else each character by a kind drawn for it; ``augment_copies``
    copies per record). The label classifier sees the text blocks scaled by ``label_scale``
    (surface, robust, cues; folded back into its weights): a block scaled down is regularised
    harder, so the label leans on the others — the obfuscation-invariant views. Weights are
    stored as float16 (``half_precision``).

    Target: ``blocks`` says which feature blocks each field reads, the target block
    (``target_ngram_max``, scaled by ``target_weight``) describing the span the extractor picked,
    cross-fitted over ``oof_folds`` folds for training. Span scorer: spans up to
    ``span_max_len`` characters, ``span_c``, ``span_negatives`` random negatives per text, at
    most ``span_max_texts`` training records with a target span. Implicit targets: cosine
    ``implicit_threshold``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    ngram_min: int = Field(1, ge=1, le=8)
    ngram_max: int = Field(3, ge=1, le=8)
    bounds: bool = True
    words: bool = False
    quote_view: bool = True
    robust: bool = True
    cues: bool = True
    pinyin_ngram: tuple[int, int] = (2, 3)
    initials_ngram: tuple[int, int] = (2, 3)
    min_df: tuple[int, int, int] = (3, 3, 1)
    block_weights: tuple[float, float, float] = (1.0, 1.5, 1.0)
    max_features: int = Field(50_000, ge=0)
    c_label: float = Field(2.0, gt=0)
    c: float = Field(1.0, gt=0)
    class_weight: Literal["balanced"] | None = "balanced"
    augment_rate: float = Field(1.0, ge=0.0, le=1.0)
    augment_chars: float = Field(0.5, gt=0.0, le=1.0)
    augment_kinds: tuple[str, ...] = ("homophone", "glyph", "pinyin", "initials", "mixed", "split", "emoji")
    augment_single_kind: bool = True
    augment_copies: int = Field(1, ge=1, le=4)
    label_scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    half_precision: bool = True
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

    @field_validator("augment_kinds")
    @classmethod
    def _known_kinds(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from verimod.models.baseline.augment import KINDS

        if not value or not set(value) <= set(KINDS):
            raise ValueError(f"augment_kinds: one or more of {', '.join(KINDS)}")
        return value

    @field_validator("ngram_max")
    @classmethod
    def _ngram_order(cls, value: int, info: Any) -> int:
        if value < info.data.get("ngram_min", 1):
            raise ValueError("ngram_max must be at least ngram_min")
        return value


def analyzer_of(
    config: BaselineConfig, lexicons: Sequence[Lexicon] | None = None, stance: StanceLexicon | None = None
) -> TextAnalyzer:
    """The text analyser a configuration describes (with the bundled lexicons and stance words
    unless others are given: a saved model's own)."""
    return TextAnalyzer(
        config.ngram_min,
        config.ngram_max,
        config.bounds,
        config.words,
        config.quote_view,
        config.robust,
        config.cues,
        lexicons,
        stance,
        pinyin_ngram=config.pinyin_ngram,
        initials_ngram=config.initials_ngram,
    )


@dataclass(frozen=True)
class BaselinePrediction:
    """One prediction: the record, its anchored rationale, and how it was reached.

    ``probabilities[field][value]`` are the marginal probabilities of the posterior over the
    consistent records (the record is the most probable one, so it need not take every field's
    argmax). ``target_source`` is ``"span"`` (a substring of the input), ``"implicit_map"`` (a
    training implicit target) or ``"none"`` (no_clear_target); ``target_score`` is the span's
    probability among the input's candidates, or the implicit-map cosine similarity (None for
    no_clear_target). ``cues`` are the quoted pieces of the input (whole words) cited for each
    field.
    """

    record: VarmRecord
    rationale: str
    probabilities: dict[str, dict[str, float]]
    target_source: Literal["span", "implicit_map", "none"]
    target_score: float | None
    cues: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class TrainingSummary:
    """What a model was trained on: ``fields[field]`` records carried each field (augmented
    copies not counted), ``augmented`` obfuscated copies, ``sources`` as the caller described
    them (file, split, weight, records …)."""

    fields: dict[str, int]
    augmented: int = 0
    sources: tuple[dict[str, Any], ...] = ()


class _FeatureNames(Sequence[str]):
    """The feature strings of some columns, named on demand (the writer reads a few)."""

    def __init__(self, vectorizer: TextVectorizer, columns: np.ndarray) -> None:
        self.vectorizer = vectorizer
        self.columns = columns.tolist()

    def __len__(self) -> int:
        return len(self.columns)

    def __getitem__(self, k: int) -> str:  # type: ignore[override]
        return self.vectorizer.feature_name(self.columns[k]).removeprefix("w:")


class BaselineModel:
    """A trained baseline model (see the module docstring). Build it with
    :func:`verimod.models.baseline.training.train_baseline` or :meth:`load`."""

    def __init__(
        self,
        config: BaselineConfig,
        vectorizer: TextVectorizer,
        space: FeatureSpace,
        classifiers: dict[str, LinearSoftmax],
        span_scorer: SpanScorer,
        implicit_map: ImplicitTargetMap,
        data_sha256: str,
        n_train: int,
        seed: int,
        summary: TrainingSummary,
        leakage: LeakageIndex,
    ) -> None:
        if set(classifiers) != set(DISCRETE_FIELDS):
            raise ValueError("one classifier per discrete field is needed")
        self.config = config
        self.vectorizer = vectorizer
        self.space = space
        self.classifiers = classifiers
        self.span_scorer = span_scorer
        self.implicit_map = implicit_map
        self.data_sha256 = data_sha256
        self.n_train = n_train
        self.seed = seed
        self.summary = summary
        self.leakage = leakage
        self._files: dict[str, bytes] | None = None

    # ------------------------------------------------------------------ prediction

    def field_log_probs(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Each classifier's ``(N, K)`` log-probabilities (category given harmful, stance given
        non-harmful), without decoding."""
        text_rows = self.vectorizer.transform_canonical([canonical_text(t) for t in texts])
        spans = self.span_scorer.best_spans(texts)
        features = self.space.build(text_rows, spans)
        return {f: self.classifiers[f].log_proba(features) for f in DISCRETE_FIELDS}

    def predict(self, texts: Sequence[str]) -> list[BaselinePrediction]:
        """Predict a record and write a rationale for each text (deterministic)."""
        norms = [canonical_chars(t) for t in texts]
        text_rows = self.vectorizer.transform_canonical(["".join(n) for n in norms])
        spans = self.span_scorer.best_spans(texts)
        features = self.space.build(text_rows, spans)
        log_probs = {f: self.classifiers[f].log_proba(features) for f in DISCRETE_FIELDS}
        implicit = self.implicit_map.lookup(text_rows)
        allowed = np.ones((len(texts), len(COMBOS)), dtype=bool)
        needs_target = COMBOS[:, _TYPE] != _NCT_TYPE
        for row, (span, hit) in enumerate(zip(spans, implicit, strict=True)):
            if span is None:
                allowed[row] &= ~(needs_target & (COMBOS[:, _EXPL] == _EXPLICIT))
                if hit is None:
                    allowed[row] &= ~needs_target
        best, posterior = decode_records(record_scores(log_probs), allowed)
        field_marginals = marginals(posterior)
        choice = COMBOS[best]
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
                f: dict(zip(VOCABULARY[f], field_marginals[k][row].tolist(), strict=True))
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
        self,
        text_rows: sp.csr_matrix,
        row: int,
        codes: np.ndarray,
        text: str,
        norm: list[str],
    ) -> dict[str, list[str]]:
        start, end = text_rows.indptr[row], text_rows.indptr[row + 1]
        indices, values = text_rows.indices[start:end], text_rows.data[start:end]
        surface = self.vectorizer.block_of[indices] == 0
        indices, values = indices[surface], values[surface]
        grams = _FeatureNames(self.vectorizer, indices)
        locator = EvidenceLocator(text, norm, words)
        cues: dict[str, list[str]] = {}
        harmful = VOCABULARY["label"][int(codes[_LABEL])] == "harmful"
        explicit = VOCABULARY["target_explicitness"][int(codes[_EXPL])] == "explicit"
        for k, f in enumerate(DISCRETE_FIELDS):
            if (f == "category" and not harmful) or (f == "target_explicitness" and explicit):
                cues[f] = []  # the rationale quotes no evidence for these decisions
                continue
            # A harmful record's stance is fixed by the codebook: its evidence is the label's.
            source, code = ("label", int(codes[_LABEL])) if f == "stance" and harmful else (f, int(codes[k]))
            weights = self.classifiers[source].contributions(indices, values, code)
            cues[f] = locator.segments(grams, weights)
        return cues

    # ------------------------------------------------------------------ persistence

    def metadata(self) -> dict[str, Any]:
        """The content of ``model.json``."""
        charmap = default_charmap()
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "model_version": MODEL_VERSION,
            "config": self.config.model_dump(mode="json"),
            "data_sha256": self.data_sha256,
            "n_train": self.n_train,
            "seed": self.seed,
            "fields": {f: list(VOCABULARY[f]) for f in DISCRETE_FIELDS},
            "charmap": {"version": charmap.version, "sha256": charmap.sha256},
            "trained_on": {
                "fields": self.summary.fields,
                "augmented": self.summary.augmented,
                "sources": list(self.summary.sources),
            },
            "leakage": self.leakage.metadata(),
        }

    def files(self) -> dict[str, bytes]:
        """The bytes of the three model files (deterministic; computed once)."""
        if self._files is None:
            from verimod.models.baseline.model_io import model_files

            self._files = model_files(self)
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
        from verimod.models.baseline.model_io import model_from_files

        model = model_from_files(files, path)
        model._files = files
        return model


__all__ = ["TEXT_BLOCKS", "BaselineConfig", "BaselineModel", "BaselinePrediction", "TrainingSummary"]
