"""The default baseline model: shipped prebuilt, trained on real data.

verimod ships the model its default recipe (``resources/baseline/recipe_default.json``) builds
from COLD and SWSR train (which it may not redistribute: only the model and hashes of their
texts are shipped), the open VARM set's train split when it is present, and the starter set's
train split — in ``resources/baseline/default`` (JSON + ``.npz`` and a ``manifest.json`` with the
data's sha256s, the recipe, versions and sizes). :func:`default_model` loads it (well under a
second). The coordinator rebuilds it with one command::

    verimod train baseline --recipe default --data-root ../shared/data --out src/verimod/resources/baseline/default

When the prebuilt model is absent (a trimmed install), :func:`default_model` falls back to a
model trained on the starter train split on first use and cached (the behaviour of earlier
versions), and :func:`default_identity` says so.

Cache layout of trained models: ``cache_dir() / "baseline" / KEY`` holding the three model
files, where ``KEY`` is the sha256 of the training data's sha256, the model version, the
configuration and the seed (:func:`cache_key`). Writing is crash- and race-safe: the model is
saved into a temporary sibling folder that is renamed into place; when another process got
there first, its (identical) model is kept. A cached model that no longer loads is replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verimod.core.errors import InputError
from verimod.core.paths import cache_dir
from verimod.models.baseline import persist
from verimod.models.baseline.model import MODEL_VERSION, BaselineConfig, BaselineModel
from verimod.models.baseline.recipe import DEFAULT_MODEL_DIR
from verimod.models.baseline.training import train_baseline, training_data_sha256
from verimod.resources import resource_path
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.starter import load_starter


def cache_key(data_sha256: str, seed: int = 0, config: BaselineConfig | None = None) -> str:
    """The cache folder name of a model trained on data with ``data_sha256``."""
    payload = json.dumps(
        [data_sha256, MODEL_VERSION, (config or BaselineConfig()).model_dump(mode="json"), seed], sort_keys=True
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def prebuilt_dir() -> Path:
    """Where the shipped default model is."""
    return resource_path(DEFAULT_MODEL_DIR)


def fallback_training_data() -> list[VarmReference]:
    """The records of the fallback model: the starter set's train split."""
    return load_starter("train")


def cached_model_dir(references: Sequence[VarmReference], seed: int = 0) -> Path:
    """Where the model trained on ``references`` with ``seed`` lives in the cache."""
    return cache_dir() / "baseline" / cache_key(training_data_sha256(references), seed)


def load_or_train(references: Sequence[VarmReference], seed: int = 0) -> BaselineModel:
    """The model trained on ``references``: from the cache, or trained now and cached."""
    target = cached_model_dir(references, seed)
    if target.is_dir():
        try:
            return BaselineModel.load(target)
        except InputError:
            shutil.rmtree(target, ignore_errors=True)  # a damaged cache entry: rebuild it
    model = train_baseline(references, seed)
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


def has_prebuilt() -> bool:
    """True when the shipped default model's files are present."""
    folder = prebuilt_dir()
    return all((folder / name).is_file() for name in persist.FILES)


def default_model() -> BaselineModel:
    """The default baseline model: the shipped one, else the starter-trained fallback."""
    if has_prebuilt():
        return BaselineModel.load(prebuilt_dir())
    return load_or_train(fallback_training_data())


def default_identity() -> dict[str, Any]:
    """What identifies the default model without loading it: ``source`` (``prebuilt`` or
    ``starter-fallback``), the training data's sha256 and, for the prebuilt one, its fingerprint."""
    if has_prebuilt():
        files = persist.read_files(prebuilt_dir())
        meta = persist.load_json(files[persist.MODEL_FILE], str(prebuilt_dir() / persist.MODEL_FILE))
        return {"source": "prebuilt", "data_sha256": meta.get("data_sha256"), "fingerprint": persist.fingerprint(files)}
    data_sha = training_data_sha256(fallback_training_data())
    return {"source": "starter-fallback", "data_sha256": data_sha, "cache_key": cache_key(data_sha)}
