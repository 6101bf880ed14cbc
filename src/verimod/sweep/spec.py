"""The sweep file: models × settings × data × constraints (× adapters per model), described once.

```yaml
name: table1                   # default: the file name without .yaml
runs_dir: sweeps/table1        # default: sweeps/<name>
budget: 2                      # cells running at once
models:
  - baseline                   # a model spec, or a mapping:
  - model: openai:qwen2.5-7b-instruct
    label: qwen7b              # the cell-id fragment (default: from the spec)
    base_url: http://gpu1:8000/v1        # or a list (replicas)
    api_key_env: OPENAI_API_KEY
    max_concurrency: 64
  - model: hf:/models/Qwen2.5-7B-Instruct
    adapters: [null, sft/adapter]        # null: the base model; each adapter is one more cell
    device: cuda
settings: [zero-shot, taxonomy, k-shot]
data:
  - test.jsonl                 # a reference source, or a mapping:
  - {source: "hf:org/varm-open:test", label: open, limit: 300}
constraints:                   # structured output, where the backend supports it
  - none
  - anchors                    # the VARM anchor grammar (verimod eval --constrain anchors)
  - {name: json, json_schema: {type: object}}
train: train.jsonl             # k-shot examples (default: the evaluated bundled set's train split, else starter's)
shots: 4
generation: {temperature: 0, max_tokens: 512}
engine: {max_concurrency: 32, max_retries: 6, request_timeout_s: 120}
```

Every key is checked (unknown keys are errors, pydantic ``extra="forbid"``); an error names the
file, the line and the field. Relative paths (``runs_dir``, data sources, ``train``,
``prompt_template``, adapters) are taken from the sweep file's folder; a model spec's path
(``scripted:``, ``gguf:``, ``hf:``) only when it exists there (``hf:Qwen/…`` stays a hub id).

:func:`load_sweep` expands the file into :class:`~verimod.sweep.cell.SweepCell` s, models outermost,
then adapters, settings, data and constraints — the order of the Table-1 rows. A cell id joins
the labels: ``qwen7b+sft-adapter__k-shot__open__json`` (``none`` constraints and the base model
leave their part out); two cells with one id are an error.
"""

from __future__ import annotations

from itertools import product
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from verimod.core.errors import InputError
from verimod.core.runs import slug
from verimod.core.yaml_config import load_yaml_model
from verimod.data.hf import HF_PREFIX, parse_hf_source
from verimod.models.base import BackendOptions, GenerationParams, StructuredOutput
from verimod.models.registry import BACKEND_MODULES, split_spec
from verimod.sweep.cell import SweepCell
from verimod.tasks.varm.evaluate import EvalSettings
from verimod.tasks.varm.grammar import CONSTRAIN_MODES
from verimod.tasks.varm.prompts import DEFAULT_SHOTS

Setting = Literal["zero-shot", "taxonomy", "k-shot"]


def _as_mapping(value: Any, key: str) -> Any:
    return {key: value} if isinstance(value, str) else value


class ModelEntry(BaseModel):
    """One model of the sweep (a bare string is ``{model: STRING}``)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1)
    label: str | None = None
    adapters: list[str | None] = Field(default_factory=lambda: list[str | None]([None]), min_length=1)
    base_url: list[str] = Field(default_factory=list)
    api_key_env: str | None = None
    max_concurrency: int | None = Field(None, ge=1)
    request_timeout_s: float | None = Field(None, gt=0)
    max_retries: int | None = Field(None, ge=0)
    threads: int | None = Field(None, ge=1)
    context_size: int | None = Field(None, ge=256)
    batch_size: int | None = Field(None, ge=1)
    device: str | None = None

    @field_validator("base_url", mode="before")
    @classmethod
    def _one_url(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("model")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        prefix, _ = split_spec(value)
        if prefix not in BACKEND_MODULES:
            raise ValueError(f"unknown model backend {prefix!r}; known: {', '.join(sorted(BACKEND_MODULES))}")
        return value


class DataEntry(BaseModel):
    """One reference source (a bare string is ``{source: STRING}``)."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(min_length=1)
    label: str | None = None
    split: str | None = None
    limit: int | None = Field(None, ge=1)


class ConstraintEntry(BaseModel):
    """Structured output for the cells of this constraint (``none``: unconstrained)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    json_schema: dict[str, Any] | None = None
    regex: str | None = None

    @model_validator(mode="after")
    def _structured_unless_none(self) -> ConstraintEntry:
        given = self.json_schema is not None or self.regex is not None
        if self.name in CONSTRAIN_MODES and given:
            raise ValueError(f"the constraint {self.name!r} takes no json_schema or regex")
        if self.name not in CONSTRAIN_MODES and not given:
            raise ValueError(f"constraint {self.name!r} needs a json_schema or a regex")
        return self

    def structured(self) -> StructuredOutput | None:
        """The structured-output request of this constraint (None for ``none`` and for the
        ``--constrain`` modes such as ``anchors``, which the cell's settings carry)."""
        if self.name in CONSTRAIN_MODES:
            return None
        return StructuredOutput(json_schema=self.json_schema, regex=self.regex)


class SweepEngine(BaseModel):
    """Engine settings shared by every cell (a model entry may override its own)."""

    model_config = ConfigDict(extra="forbid")

    max_concurrency: int = Field(32, ge=1)
    max_retries: int = Field(6, ge=0)
    request_timeout_s: float = Field(120.0, gt=0)


class SweepSpec(BaseModel):
    """The sweep file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    runs_dir: str | None = None
    budget: int = Field(2, ge=1)
    models: list[ModelEntry] = Field(min_length=1)
    settings: list[Setting] = Field(default_factory=lambda: list[Setting](["zero-shot"]), min_length=1)
    data: list[DataEntry] = Field(default_factory=list)
    constraints: list[ConstraintEntry] = Field(default_factory=lambda: [ConstraintEntry(name="none")], min_length=1)
    train: str | None = None
    shots: int = Field(DEFAULT_SHOTS, ge=0)
    prompt_template: str | None = None
    generation: GenerationParams = GenerationParams()
    engine: SweepEngine = SweepEngine()

    @field_validator("models", mode="before")
    @classmethod
    def _model_strings(cls, value: Any) -> Any:
        return [_as_mapping(v, "model") for v in value] if isinstance(value, list) else value

    @field_validator("data", mode="before")
    @classmethod
    def _data_strings(cls, value: Any) -> Any:
        return [_as_mapping(v, "source") for v in value] if isinstance(value, list) else value

    @field_validator("constraints", mode="before")
    @classmethod
    def _constraint_strings(cls, value: Any) -> Any:
        return [_as_mapping(v, "name") for v in value] if isinstance(value, list) else value

    @field_validator("generation")
    @classmethod
    def _no_structured(cls, value: GenerationParams) -> GenerationParams:
        if value.structured is not None:
            raise ValueError("give structured output as constraints, not generation.structured")
        return value


class SweepPlan(BaseModel):
    """A loaded sweep: its name, file, runs folder, budget and cells in Table-1 order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    file: str
    runs_dir: str
    budget: int
    cells: tuple[SweepCell, ...]


def _resolve(base: Path, path: str | None) -> str | None:
    """A path option of the sweep file: relative paths from the file's folder; ``hf:`` names that
    are folders there become absolute, other ``hf:`` names (hub ids) stay as given."""
    if path is None:
        return None
    if path.startswith(HF_PREFIX):
        name, split = parse_hf_source(path)
        local = Path(name) if Path(name).is_absolute() else base / name
        return f"{HF_PREFIX}{local.resolve()}" + (f":{split}" if split else "") if local.is_dir() else path
    return path if Path(path).is_absolute() else str((base / path).resolve())


def _resolve_model(base: Path, spec: str) -> str:
    prefix, name = split_spec(spec)
    if name and not Path(name).is_absolute() and (base / name).exists():
        return f"{prefix}:{(base / name).resolve()}"
    return spec


def _model_label(entry: ModelEntry) -> str:
    if entry.label:
        return slug(entry.label)
    prefix, name = split_spec(entry.model)
    if not name:
        return slug(prefix)
    tail = name.rstrip("/").split("/")[-1]
    return slug(tail.rsplit(".", 1)[0] if prefix in ("scripted", "gguf") else tail)


def _data_label(entry: DataEntry) -> str:
    if entry.label:
        return slug(entry.label)
    if entry.source.startswith(HF_PREFIX):
        name, split = parse_hf_source(entry.source)
        return slug(name.rstrip("/").split("/")[-1] + (f"-{split}" if split else ""))
    return slug(Path(entry.source).name.split(".")[0])


def _unique(labels: list[str], what: str, path: str) -> None:
    for i, label in enumerate(labels):
        if label in labels[:i]:
            first = labels.index(label)
            message = f"{what}[{first}] and {what}[{i}] share the label {label!r}: give one a label"
            raise InputError.at(path, None, f"{what}[{i}].label", message)


def expand(spec: SweepSpec, file: Path) -> SweepPlan:
    """The cells of a sweep file (module docstring), with its paths resolved."""
    base = file.parent.resolve()
    name = spec.name or file.name.split(".")[0]
    path = str(file)
    data: list[DataEntry | None] = list(spec.data) or [None]  # None: the varm-open test split (verimod eval's default)
    model_labels = [_model_label(m) for m in spec.models]
    data_labels = [_data_label(d) if d is not None else "varm-open-test" for d in data]
    constraint_labels = [slug(c.name) for c in spec.constraints]
    _unique(model_labels, "models", path)
    _unique(data_labels, "data", path)
    _unique(constraint_labels, "constraints", path)
    models = [(m, label, a) for m, label in zip(spec.models, model_labels, strict=True) for a in m.adapters]
    cells = [
        _cell(spec, base, model, (label, _resolve(base, adapter)), setting, source, constraint)
        for (model, label, adapter), setting, source, constraint in product(
            models,
            spec.settings,
            zip(data, data_labels, strict=True),
            zip(spec.constraints, constraint_labels, strict=True),
        )
    ]
    ids = [c.cell_id for c in cells]
    for i, cell_id in enumerate(ids):
        if cell_id in ids[:i]:
            raise InputError.at(path, None, None, f"two cells would be named {cell_id!r}: give distinct labels")
    runs_dir = _resolve(base, spec.runs_dir) or str(base / "sweeps" / slug(name))
    return SweepPlan(name=name, file=str(file.resolve()), runs_dir=runs_dir, budget=spec.budget, cells=tuple(cells))


def _cell(
    spec: SweepSpec,
    base: Path,
    model: ModelEntry,
    model_and_adapter: tuple[str, str | None],
    setting: str,
    data_and_label: tuple[DataEntry | None, str],
    constraint_and_label: tuple[ConstraintEntry, str],
) -> SweepCell:
    model_label, adapter = model_and_adapter
    data, data_label = data_and_label
    constraint, constraint_label = constraint_and_label
    engine = spec.engine
    settings = EvalSettings(
        model=_resolve_model(base, model.model),
        setting=setting,
        shots=spec.shots,
        prompt_template=_resolve(base, spec.prompt_template),
        data=None if data is None else _resolve(base, data.source),
        split=None if data is None else data.split,
        train=_resolve(base, spec.train),
        limit=None if data is None else data.limit,
        constrain=constraint.name if constraint.name in CONSTRAIN_MODES else "none",
        params=spec.generation.model_copy(update={"structured": constraint.structured()}),
        engine={
            "max_concurrency": model.max_concurrency or engine.max_concurrency,
            "max_retries": engine.max_retries if model.max_retries is None else model.max_retries,
            "request_timeout_s": model.request_timeout_s or engine.request_timeout_s,
        },
        backend_options=BackendOptions(
            base_urls=tuple(model.base_url),
            api_key_env=model.api_key_env,
            request_timeout_s=model.request_timeout_s or engine.request_timeout_s,
            adapter=adapter,
            threads=model.threads,
            context_size=model.context_size,
            batch_size=model.batch_size,
            device=model.device,
        ),
    )
    parts = [model_label + (f"+{slug(Path(adapter).name)}" if adapter else ""), setting, data_label]
    if constraint.name != "none":
        parts.append(constraint_label)
    labels = {"model": model_label, "adapter": adapter or "", "setting": setting, "data": data_label}
    return SweepCell(cell_id="__".join(parts), settings=settings, labels={**labels, "constraint": constraint.name})


def load_sweep(path: str | Path) -> SweepPlan:
    """Read, check and expand a sweep file; raises :class:`InputError` naming file, line, field."""
    file = Path(path)
    return expand(load_yaml_model(file, SweepSpec), file)
