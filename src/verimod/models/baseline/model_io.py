"""A :class:`~verimod.models.baseline.model.BaselineModel` to and from its three files.

What goes where is described in :mod:`~verimod.models.baseline.persist`. Reading checks every
part (format and model version, the codebook's values, the character tables' sha256, list
types, array shapes and index ranges) and raises :class:`~verimod.core.errors.InputError`
naming the file on the first problem; nothing is unpickled or evaluated.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import scipy.sparse as sp
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verimod.core.errors import InputError
from verimod.models.baseline import persist
from verimod.models.baseline.charmap import default_charmap
from verimod.models.baseline.features import CharNgramVectorizer, FeatureSpace
from verimod.models.baseline.fields import LinearSoftmax
from verimod.models.baseline.leakage import PERMUTATIONS, BundledSource, LeakageIndex
from verimod.models.baseline.target import ImplicitTargetMap, SpanScorer
from verimod.models.baseline.vectorizer import PARTS, TextVectorizer
from verimod.models.baseline.views import StanceLexicon
from verimod.tasks.varm.codebook import DISCRETE_FIELDS, VOCABULARY
from verimod.tasks.varm.cue_lexicons import Lexicon

if TYPE_CHECKING:
    from verimod.models.baseline.model import BaselineModel

_STRING_LISTS = ("target_ngrams", "span_features", "span_lexicon", "implicit_targets", "leakage_texts")


class _Meta(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["verimod-baseline"]
    format_version: int
    model_version: str
    config: dict[str, Any]
    data_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    n_train: int = Field(ge=1)
    seed: int
    fields: dict[str, list[str]]
    charmap: dict[str, str]
    trained_on: dict[str, Any]
    leakage: dict[str, Any]


def model_files(model: BaselineModel) -> dict[str, bytes]:
    """The bytes of the three files of ``model``."""
    precision = np.float16 if model.config.half_precision else np.float64
    arrays: dict[str, np.ndarray] = {"idf": model.vectorizer.idf, "target_idf": model.space.target.idf}
    for name, _, kind in PARTS:
        if kind == "keys":
            arrays[f"keys.{name}"] = np.asarray(model.vectorizer.vocabularies[name], dtype=np.int64)
    for f in DISCRETE_FIELDS:
        arrays[f"{f}.weights"] = model.classifiers[f].weights.astype(precision)
        arrays[f"{f}.bias"] = model.classifiers[f].bias
    arrays["span.weights"] = model.span_scorer.weights
    rows = model.implicit_map.rows
    arrays["implicit.data"] = rows.data.astype(np.float64)
    arrays["implicit.indices"] = rows.indices.astype(np.int64)
    arrays["implicit.indptr"] = rows.indptr.astype(np.int64)
    arrays["leakage.hashes"] = model.leakage.hashes.astype(np.int64)
    arrays["leakage.signatures"] = model.leakage.signatures.astype(np.uint8)
    analyzer = model.vectorizer.analyzer
    vocab = {
        "text": {name: model.vectorizer.vocabularies[name] for name, _, kind in PARTS if kind == "strings"},
        "block_weights": list(model.vectorizer.block_weights),
        "cue_lexicons": [lexicon.model_dump(mode="json") for lexicon in analyzer.lexicons],
        "stance_words": analyzer.stance.to_json(),
        "target_ngrams": model.space.target.vocabulary,
        "span_features": model.span_scorer.features,
        "span_lexicon": model.span_scorer.lexicon,
        "implicit_targets": model.implicit_map.targets,
        "leakage_texts": model.leakage.texts,
        "leakage_bundled": [b.__dict__ for b in model.leakage.bundled],
    }
    return {
        persist.MODEL_FILE: persist.json_bytes(model.metadata()),
        persist.VOCAB_FILE: persist.json_bytes(vocab),
        persist.ARRAYS_FILE: persist.npz_bytes(arrays),
    }


def _fail(where: str, field: str | None, message: str) -> InputError:
    return InputError.at(where, None, field, message)


def model_from_files(files: dict[str, bytes], path: Path) -> BaselineModel:
    """The model saved as ``files`` (read from ``path``; see the module docstring)."""
    from verimod.models.baseline.model import (
        FORMAT_VERSION,
        MODEL_VERSION,
        BaselineConfig,
        BaselineModel,
        TrainingSummary,
        analyzer_of,
    )

    meta_where, vocab_where, arrays_where = (str(path / name) for name in persist.FILES)
    try:
        meta = _Meta.model_validate(persist.load_json(files[persist.MODEL_FILE], meta_where))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise _fail(meta_where, where or None, f"not a baseline model file: {first['msg']}") from None
    if meta.format_version != FORMAT_VERSION or meta.model_version != MODEL_VERSION:
        raise _fail(
            meta_where,
            None,
            f"model format {meta.format_version} / {meta.model_version} is not the one this verimod reads "
            f"({FORMAT_VERSION} / {MODEL_VERSION}); retrain it with 'verimod train baseline'",
        )
    if meta.fields != {f: list(VOCABULARY[f]) for f in DISCRETE_FIELDS}:
        raise _fail(meta_where, "fields", "field values differ from this verimod's codebook")
    charmap = default_charmap()
    if meta.charmap.get("sha256") != charmap.sha256:
        raise _fail(
            meta_where,
            "charmap",
            f"trained with other character tables ({meta.charmap.get('version')}) than this verimod's "
            f"({charmap.version}); retrain it with 'verimod train baseline'",
        )
    try:
        config = BaselineConfig.model_validate(meta.config)
    except ValidationError as exc:
        raise _fail(meta_where, "config", f"invalid configuration: {exc.errors()[0]['msg']}") from None
    vocab = persist.load_json(files[persist.VOCAB_FILE], vocab_where)
    lists = {key: _string_list(vocab, key, vocab_where) for key in _STRING_LISTS}
    text = vocab.get("text")
    string_parts = [name for name, _, kind in PARTS if kind == "strings"]
    if not isinstance(text, dict) or set(text) != set(string_parts):
        raise _fail(vocab_where, "text", f"expected one list of strings per part ({', '.join(string_parts)})")
    parts: dict[str, Any] = {name: _string_list(text, name, vocab_where) for name in string_parts}
    arrays = persist.load_arrays(files[persist.ARRAYS_FILE], arrays_where)
    try:
        lexicons = [Lexicon.model_validate(item) for item in vocab.get("cue_lexicons", [])]
        stance_data = vocab["stance_words"]
        stance = StanceLexicon(str(stance_data["version"]), dict(stance_data["kinds"]))
        analyzer = analyzer_of(config, lexicons, stance)
        for name, _, kind in PARTS:
            if kind == "keys":
                parts[name] = arrays[f"keys.{name}"]
        vectorizer = TextVectorizer(analyzer, parts, arrays["idf"], config.block_weights)
        target = CharNgramVectorizer(
            lists["target_ngrams"], arrays["target_idf"], 1, config.target_ngram_max, True, True
        )
        space = FeatureSpace(vectorizer, target, config.target_weight)
        classifiers = {
            f: LinearSoftmax(f, arrays[f"{f}.weights"].astype(np.float64), arrays[f"{f}.bias"]) for f in DISCRETE_FIELDS
        }
        for clf in classifiers.values():
            if clf.weights.shape[1] != space.n_features:
                raise ValueError(f"{clf.field} weights have {clf.weights.shape[1]} columns, not {space.n_features}")
        span = SpanScorer(lists["span_features"], arrays["span.weights"], lists["span_lexicon"], config.span_max_len)
        indptr, indices = arrays["implicit.indptr"], arrays["implicit.indices"]
        if indices.size and (indices.min() < 0 or indices.max() >= vectorizer.n_features):
            raise ValueError("implicit-target rows index columns outside the vocabulary")
        rows = sp.csr_matrix(
            (arrays["implicit.data"], indices, indptr), shape=(len(lists["implicit_targets"]), vectorizer.n_features)
        )
        implicit = ImplicitTargetMap(rows, lists["implicit_targets"], config.implicit_threshold)
        signatures = arrays["leakage.signatures"]
        hashes = arrays["leakage.hashes"]
        if signatures.ndim != 2 or signatures.shape != (hashes.size, PERMUTATIONS):
            raise ValueError("leakage signatures do not match the hashes")
        leakage = LeakageIndex(
            lists["leakage_texts"],
            [BundledSource(**item) for item in vocab.get("leakage_bundled", [])],
            hashes,
            signatures,
        )
        trained = meta.trained_on
        summary = TrainingSummary(
            {str(k): int(v) for k, v in trained["fields"].items()},
            int(trained.get("augmented", 0)),
            tuple(trained.get("sources", ())),
        )
    except (KeyError, ValueError, IndexError, TypeError, ValidationError) as exc:
        raise _fail(arrays_where, None, f"inconsistent baseline model: {type(exc).__name__}: {exc}") from None
    return BaselineModel(
        config,
        vectorizer,
        space,
        classifiers,
        span,
        implicit,
        meta.data_sha256,
        meta.n_train,
        meta.seed,
        summary,
        leakage,
    )


def _string_list(container: dict[str, Any], key: str, where: str) -> list[str]:
    value = container.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(where, key, "expected a list of strings")
    return value
