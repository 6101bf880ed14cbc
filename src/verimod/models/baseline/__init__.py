"""The embedded baseline model: fast, CPU-only, no server and no download.

Per-field linear classifiers over character n-grams, jieba words, pinyin / initials /
similar-shape views and stance cues, a trained target-span extractor, exact decoding under the
VARM codebook, and a writer of anchored Chinese rationales that cite whole words of the input.
Trains on complete or partial records; saved as JSON + ``.npz`` (no pickle); the default model
is shipped prebuilt, trained on real data.

>>> from verimod.models.baseline import train_baseline          # doctest: +SKIP
>>> model = train_baseline(load_starter("train"))                 # doctest: +SKIP
>>> model.predict(["河南人又出来了，大家看好自家的井盖。"])[0].rationale  # doctest: +SKIP

Modules: ``charmap`` (canonical characters, pinyin, glyph groups), ``views`` (feature blocks),
``vectorizer`` (block TF-IDF), ``features`` (target block, feature space), ``augment``
(obfuscated copies), ``fields`` (classifiers, record decoding), ``target`` / ``span_training``
(span scorer, implicit targets), ``rationale`` (the writer), ``leakage`` (near-duplicate check
against training texts), ``persist`` / ``model_io`` (files), ``model`` (prediction),
``training``, ``recipe`` (data-driven training recipes), ``default`` (the shipped default
model), ``backend`` (the ``baseline`` model spec). Importing this package registers the backend.
"""

from verimod.models.baseline import backend as backend
from verimod.models.baseline.backend import BaselineBackend
from verimod.models.baseline.default import default_model, load_or_train
from verimod.models.baseline.leakage import LeakageIndex
from verimod.models.baseline.model import BaselineConfig, BaselineModel, BaselinePrediction
from verimod.models.baseline.training import train_baseline, training_data_sha256

__all__ = [
    "BaselineBackend",
    "BaselineConfig",
    "BaselineModel",
    "BaselinePrediction",
    "LeakageIndex",
    "default_model",
    "load_or_train",
    "train_baseline",
    "training_data_sha256",
]
