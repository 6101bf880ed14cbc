"""The default baseline model: trained on the bundled starter set's train split on first use,
then loaded from the verimod cache.

Cache layout: ``cache_dir() / "baseline" / KEY`` holding the three model files, where ``KEY``
is the sha256 of the training data's sha256, the model version, the configuration and the seed
(:func:`cache_key`); a new verimod version that changes any of them trains a new model
instead of reading a stale one. Writing is crash- and race-safe: the model is saved into a
temporary sibling folder that is renamed into place; when another process got there first,
its (identical) model is kept. A cached model that no longer loads is replaced by a fresh one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from verimod.core.errors import InputError
from verimod.core.paths import cache_dir
from verimod.models.baseline.model import MODEL_VERSION, BaselineConfig, BaselineModel
from verimod.models.baseline.training import StageCallback, train_baseline, training_data_sha256
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.starter import load_starter


def cache_key(data_sha256: str, seed: int = 0, config: BaselineConfig | None = None) -> str:
    """The cache folder name of a model trained on data with ``data_sha256``."""
    payload = json.dumps(
        [data_sha256, MODEL_VERSION, (config or BaselineConfig()).model_dump(mode="json"), seed], sort_keys=True
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def default_training_data() -> list[VarmReference]:
    """The records the default model is trained on: the starter set's train split."""
    return load_starter("train")


def cache_folder(key: str) -> Path:
    """The cache folder of the model with cache key ``key`` (see :func:`cache_key`)."""
    return cache_dir() / "baseline" / key


def cached_model_dir(references: Sequence[VarmReference], seed: int = 0) -> Path:
    """Where the model trained on ``references`` with ``seed`` lives in the cache."""
    return cache_folder(cache_key(training_data_sha256(references), seed))


def load_or_train(
    references: Sequence[VarmReference], seed: int = 0, on_stage: StageCallback | None = None
) -> BaselineModel:
    """The model trained on ``references``: from the cache, or trained now (``on_stage``
    hears the training stages) and cached."""
    target = cached_model_dir(references, seed)
    if target.is_dir():
        try:
            return BaselineModel.load(target)
        except InputError:
            shutil.rmtree(target, ignore_errors=True)  # a damaged cache entry: rebuild it
    model = train_baseline(references, seed, on_stage=on_stage)
    save_into_cache(model, target)
    return model


def save_into_cache(model: BaselineModel, target: Path) -> None:
    """Save ``model`` as ``target`` atomically (temporary sibling folder, then rename)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name[:16]}.", dir=target.parent))
    try:
        model.save(staging)
        try:
            os.rename(staging, target)
        except OSError:  # another process saved the same model first
            if not target.is_dir():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def default_model(on_stage: StageCallback | None = None) -> BaselineModel:
    """The default baseline model (starter train split, seed 0); trained on first use."""
    return load_or_train(default_training_data(), on_stage=on_stage)
