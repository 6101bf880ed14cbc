"""The embedded baseline model: fast, CPU-only, no server and no download.

Per-field linear classifiers over character n-grams, a trained target-span extractor, exact
joint decoding under the VARM codebook, and a writer of anchored Chinese rationales that cite
the input. Trained in seconds; saved as JSON + ``.npz`` (no pickle).

>>> from verimod.models.baseline import train_baseline          # doctest: +SKIP
>>> model = train_baseline(load_starter("train"))                 # doctest: +SKIP
>>> model.predict(["河南人又出来了，大家看好自家的井盖。"])[0].rationale  # doctest: +SKIP

Modules: ``features`` (n-gram TF-IDF), ``fields`` (classifiers, joint decoding), ``target``
(span scorer, implicit targets), ``rationale`` (the writer), ``persist`` (files), ``model``
(prediction, save/load), ``training``, ``default`` (the cached default model), ``backend``
(the ``baseline`` model spec). Importing this package registers the backend.
"""

from verimod.models.baseline import backend as backend
from verimod.models.baseline.backend import BaselineBackend
from verimod.models.baseline.default import default_model, load_or_train
from verimod.models.baseline.model import BaselineConfig, BaselineModel, BaselinePrediction
from verimod.models.baseline.training import train_baseline, training_data_sha256

__all__ = [
    "BaselineBackend",
    "BaselineConfig",
    "BaselineModel",
    "BaselinePrediction",
    "default_model",
    "load_or_train",
    "train_baseline",
    "training_data_sha256",
]
