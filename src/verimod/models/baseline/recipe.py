"""Training recipes: which data a baseline model learns from, with what weights — as data.

A recipe is a JSON file (:class:`Recipe`, ``extra="forbid"``)::

    {"name": "default", "seed": 0, "config": {...BaselineConfig overrides...},
     "sources": [
       {"name": "cold-train", "adapter": "cold", "path": "cold/train.csv", "weight": 1.0,
        "fields": ["label", "category"], "leakage": "hash"},
       {"name": "swsr-train", "adapter": "swsr", "path": "swsr/SexComment.csv",
        "options": {"split": "verimod"}, "split": "train", "weight": 2.0, "leakage": "hash"},
       {"name": "starter-train", "bundled": "starter", "split": "train", "weight": 3.0},
       {"name": "varm-open-train", "bundled": "varm-open", "split": "train", "weight": 3.0, "optional": true}]}

Each source is exactly one of: ``adapter`` + ``path`` (a public data file converted with a
verimod adapter; ``path`` relative to the data root given at build time), ``file`` (a VARM
reference JSONL; relative to the recipe's folder) or ``bundled`` (``starter`` or
``varm-open``, shipped with verimod). ``split`` keeps the records of that split; ``fields``
keeps only those record fields (the others are cleared, so they train nothing); with
``derived: false`` the fields an adapter *derived* (``meta.derived``) are cleared too;
``weight`` scales every record's loss; ``optional`` sources that are absent are skipped with a
note (so a recipe can name a set that has not landed yet). ``leakage`` says what the model keeps
of the source's texts for the leakage check (:mod:`~verimod.models.baseline.leakage`): ``store``
(the texts), ``hash`` (hashes and MinHash signatures only: for data verimod may not
redistribute) or ``bundled`` (nothing: they ship with verimod; the default for bundled sources).

:func:`load_training_data` resolves a recipe into records, weights, a leakage index and a
description of every source (records per field, sha256 of its file); :func:`build_from_recipe`
trains the model and writes it with a ``manifest.json``.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from verimod.core.errors import InputError
from verimod.models.baseline.leakage import BundledSource, LeakageIndex, bundled_texts, describe_bundled
from verimod.models.baseline.model import BaselineConfig, BaselineModel
from verimod.models.baseline.training import field_counts, train_baseline
from verimod.models.baseline.vectorizer import counts_by_block
from verimod.resources import resource_path
from verimod.tasks.varm.codebook import FIELDS
from verimod.tasks.varm.schema import VarmReference

#: The recipe of the default model, shipped with verimod.
DEFAULT_RECIPE = "baseline/recipe_default.json"
#: Where the default model is shipped.
DEFAULT_MODEL_DIR = "baseline/default"
MANIFEST = "manifest.json"


class RecipeSource(BaseModel):
    """One source of a recipe (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    adapter: str | None = None
    path: str | None = None
    file: str | None = None
    bundled: Literal["starter", "varm-open"] | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    split: str | None = None
    fields: tuple[str, ...] | None = None
    derived: bool = True
    weight: float = Field(1.0, ge=0.0)
    optional: bool = False
    leakage: Literal["store", "hash", "bundled"] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> RecipeSource:
        kinds = [self.adapter is not None, self.file is not None, self.bundled is not None]
        if sum(kinds) != 1:
            raise ValueError("give exactly one of adapter (+ path), file, bundled")
        if (self.adapter is None) != (self.path is None):
            raise ValueError("adapter and path go together")
        if self.fields is not None and not set(self.fields) <= set(FIELDS):
            raise ValueError(f"fields must be among {', '.join(FIELDS)}")
        if self.leakage == "bundled" and self.bundled is None:
            raise ValueError("leakage 'bundled' is only for bundled sources")
        return self

    @property
    def leakage_policy(self) -> str:
        """``store``, ``hash`` or ``bundled`` (bundled sources default to bundled, others to store)."""
        return self.leakage or ("bundled" if self.bundled is not None else "store")


class Recipe(BaseModel):
    """A training recipe (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    seed: int = 0
    config: dict[str, Any] = Field(default_factory=dict)
    sources: tuple[RecipeSource, ...] = Field(min_length=1)

    def baseline_config(self) -> BaselineConfig:
        """The model configuration: the defaults with the recipe's overrides."""
        return BaselineConfig.model_validate(self.config)


def load_recipe(path: str | Path) -> tuple[Recipe, Path]:
    """A recipe file (``default`` names the bundled one) and its folder; :class:`InputError` naming
    the file and field on any problem."""
    file = resource_path(DEFAULT_RECIPE) if str(path) == "default" else Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError.at(str(file), None, None, f"cannot read the recipe: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError.at(str(file), None, None, f"not valid JSON: {exc}") from None
    try:
        recipe = Recipe.model_validate(data)
        recipe.baseline_config()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        raise InputError.at(str(file), None, where, first["msg"]) from None
    return recipe, file.parent


@dataclass
class TrainingData:
    """A recipe resolved: records (in source order), their weights, the leakage index, one
    description per source used, and notes (sources skipped)."""

    references: list[VarmReference] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    leakage: LeakageIndex = field(default_factory=LeakageIndex)
    sources: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _source_records(
    source: RecipeSource, data_root: Path | None, recipe_dir: Path
) -> tuple[list[VarmReference], list[str]] | None:
    """The source's records and the files read (None when an optional source is absent)."""
    from verimod.data.adapters import convert
    from verimod.tasks.varm.io import load_references

    if source.bundled is not None:
        texts = bundled_texts(source.bundled, source.split or "train")
        if texts is None:
            if source.optional:
                return None
            raise InputError.at(f"source {source.name}", None, "bundled", f"{source.bundled} is not shipped")
        from verimod.models.baseline.leakage import BUNDLED_FILES

        file = resource_path(BUNDLED_FILES[source.bundled])
        return load_references(file), [str(file)]
    if source.file is not None:
        file = (recipe_dir / source.file).resolve()
    else:
        if data_root is None:
            if source.optional:
                return None
            raise InputError.at(f"source {source.name}", None, "path", "needs --data-root (the public data folder)")
        file = data_root / str(source.path)
    if not file.is_file():
        if source.optional:
            return None
        raise InputError.at(str(file), None, None, f"file of source {source.name!r} not found")
    if source.file is not None:
        return load_references(file), [str(file)]
    result = convert(str(source.adapter), file, **source.options)
    return result.references, result.paths


def _restrict(reference: VarmReference, source: RecipeSource) -> VarmReference:
    """The record with only the fields the source may teach."""
    keep = set(FIELDS if source.fields is None else source.fields)
    if not source.derived:
        keep -= set((reference.meta or {}).get("derived", ()))
    cleared = {f: None for f in FIELDS if f not in keep and getattr(reference, f) is not None}
    return reference.model_copy(update=cleared) if cleared else reference


def load_training_data(recipe: Recipe, data_root: Path | None, recipe_dir: Path) -> TrainingData:
    """Resolve ``recipe`` (module docstring)."""
    out = TrainingData()
    stored: list[str] = []
    hashed: list[str] = []
    bundled: list[BundledSource] = []
    for source in recipe.sources:
        found = _source_records(source, data_root, recipe_dir)
        if found is None:
            out.notes.append(f"optional source {source.name!r} is absent: skipped")
            continue
        records, paths = found
        if source.split is not None:
            records = [r for r in records if r.split == source.split]
        records = [_restrict(r, source) for r in records]
        if not records:
            raise InputError.at(f"source {source.name}", None, "split", f"no records (split {source.split!r})")
        texts = [r.text for r in records]
        policy = source.leakage_policy
        if policy == "bundled":
            assert source.bundled is not None
            bundled.append(describe_bundled(source.bundled, source.split or "train", texts))
        else:
            (stored if policy == "store" else hashed).extend(texts)
        out.references.extend(records)
        out.weights.extend([source.weight] * len(records))
        out.sources.append(
            {
                "name": source.name,
                "records": len(records),
                "weight": source.weight,
                "split": source.split,
                "fields": field_counts(records),
                "files": [{"path": Path(p).name, "sha256": _file_sha256(Path(p))} for p in paths],
                "leakage": policy,
            }
        )
    if not out.references:
        raise InputError.at(recipe.name, None, "sources", "no source could be read")
    out.leakage = LeakageIndex.build(stored, hashed, bundled)
    return out


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def build_from_recipe(
    recipe: Recipe, recipe_dir: Path, data_root: Path | None, out: Path
) -> tuple[BaselineModel, dict[str, Any]]:
    """Train the recipe's model, save it into ``out`` with ``manifest.json``; return both."""
    data = load_training_data(recipe, data_root, recipe_dir)
    started = time.perf_counter()
    model = train_baseline(
        data.references,
        recipe.seed,
        recipe.baseline_config(),
        weights=data.weights,
        leakage=data.leakage,
        sources=data.sources,
    )
    seconds = time.perf_counter() - started
    model.save(out)
    sizes = {p.name: p.stat().st_size for p in sorted(out.iterdir()) if p.name != MANIFEST}
    manifest = {
        "recipe": recipe.model_dump(mode="json"),
        "data_sha256": model.data_sha256,
        "fingerprint": model.fingerprint,
        "records": len(data.references),
        "trained_on": model.summary.fields,
        "augmented": model.summary.augmented,
        "sources": data.sources,
        "notes": data.notes,
        "leakage": model.leakage.metadata(),
        "train_seconds": round(seconds, 1),
        "sizes": sizes,
        "vocabulary": counts_by_block(model.vectorizer),
        "versions": {
            "verimod_model": model.metadata()["model_version"],
            "python": platform.python_version(),
            **{p: _version(p) for p in ("verimod", "numpy", "scipy", "scikit-learn", "jieba")},
        },
    }
    text = json.dumps(manifest, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    (out / MANIFEST).write_text(text, encoding="utf-8")
    return model, manifest


def source_summary(sources: Sequence[dict[str, Any]]) -> list[str]:
    """One line per source: name, records, weight and how many records trained each field."""
    lines = []
    for s in sources:
        per_field = ", ".join(f"{f} {n}" for f, n in s["fields"].items() if n)
        lines.append(f"{s['name']}: {s['records']} records × weight {s['weight']:g} ({per_field})")
    return lines
