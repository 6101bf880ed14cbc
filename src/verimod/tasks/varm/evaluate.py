"""``verimod eval`` as a library: build the requests of a VARM run, run them through the engine
into a run directory, and score the stored outputs.

- :func:`prepare_run` reads and checks the data, prompt and examples and builds the requests;
  :func:`start_run` then creates the run directory (manifest with every setting, no secrets;
  the evaluated references).
- :func:`resume_run` reopens a run: the same requests are rebuilt from the manifest, and only
  samples without a successful stored answer are sent again (a resumed run ends with the same
  scores as an uninterrupted one).
- :func:`execute` sends the outstanding requests, appending one sample line per answer.
- :func:`score_run` re-scores a run from its files alone, without any model call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verimod import __version__
from verimod.core.cache import ResponseCache
from verimod.core.engine import EngineConfig, EngineStats, Outcome, run_requests
from verimod.core.errors import InputError
from verimod.core.hashing import file_sha256
from verimod.core.runs import RunManifest, RunStore, git_revision, now, slug
from verimod.data.hf import source_label, source_sha256
from verimod.models.base import BackendOptions, GenerationParams, ModelBackend, ModelRequest
from verimod.tasks.varm.bundled import DEFAULT_DATA, DEFAULT_SPLIT, bundled_path, load_bundled
from verimod.tasks.varm.disputes import DisputedMode, apply_disputes, dispute_of
from verimod.tasks.varm.grammar import ConstrainMode, constrain_mode, structured_output
from verimod.tasks.varm.io import load_references
from verimod.tasks.varm.parser import PARSER_VERSION
from verimod.tasks.varm.prompts import DEFAULT_SHOTS, PromptTemplate, load_prompt, select_examples
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import ItemScore, VarmScorer, VarmScores


class EvalSettings(BaseModel):
    """Everything that defines a VARM evaluation run (recorded in its manifest)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = "baseline"
    setting: str = "zero-shot"
    shots: int = Field(DEFAULT_SHOTS, ge=0)
    prompt_template: str | None = None
    data: str | None = None  # None: the bundled open set (varm-open)
    split: str | None = None  # None: every item (a bundled set defaults to "test")
    train: str | None = None  # k-shot examples (None: the evaluated bundled set's train split, else starter's)
    limit: int | None = Field(None, ge=1)
    disputed: DisputedMode = "keep"  # items whose annotators dispute the source: keep | drop | reading
    constrain: ConstrainMode = "none"  # decoding constraint; "anchors" sets params.structured
    params: GenerationParams = GenerationParams()
    engine: EngineConfig = EngineConfig()
    backend_options: BackendOptions = BackendOptions()
    encoding: str | None = None


def _references(settings: EvalSettings) -> tuple[list[VarmReference], dict[str, Any]]:
    """The evaluated items and the manifest's ``data`` entry. No ``data``: the bundled
    :data:`~verimod.tasks.varm.bundled.DEFAULT_DATA` set; a bundled set's default split is
    :data:`~verimod.tasks.varm.bundled.DEFAULT_SPLIT`."""
    source = settings.data or DEFAULT_DATA
    bundled = bundled_path(source)
    split = settings.split or (DEFAULT_SPLIT if bundled is not None else None)
    references = load_references(source, settings.encoding)
    data: dict[str, Any] = {
        "path": source if bundled is not None else source_label(source),
        "sha256": file_sha256(bundled) if bundled is not None else source_sha256(source, references),
        "split": split,
    }
    if split is not None:
        references = [r for r in references if r.split == split]
        if not references:
            raise InputError.at(source, None, "split", f"no items with split {split!r}")
    data["disputed"] = {"mode": settings.disputed, "items": sum(dispute_of(r) is not None for r in references)}
    references = apply_disputes(references, settings.disputed, str(source))
    if not references:
        raise InputError.at(source, None, "meta.disputed", "--disputed drop leaves no item")
    if settings.limit is not None:
        references = references[: settings.limit]
    data["n"] = len(references)
    data["train"] = train_source(settings)
    return references, data


def train_source(settings: EvalSettings) -> str:
    """Where k-shot examples come from: ``--train``, else the train split of the evaluated bundled
    set (``varm-open:train``), else the starter set's (``starter:train``)."""
    if settings.train is not None:
        return source_label(settings.train)
    source = settings.data or DEFAULT_DATA
    return f"{source}:train" if bundled_path(source) is not None else "starter:train"


def load_train(spec: str | None, encoding: str | None = None) -> list[VarmReference]:
    """The records of a train source written by :func:`train_source` (None: the starter train
    split, as runs made before this field existed recorded it)."""
    if spec is None:
        return load_bundled("starter", "train")
    name, _, split = spec.rpartition(":")
    if split == "train" and bundled_path(name) is not None:
        return load_bundled(name, "train")
    return load_references(spec, encoding)


def _examples(settings: EvalSettings, references: Sequence[VarmReference]) -> list[VarmReference]:
    if settings.setting != "k-shot" or settings.shots == 0:
        return []
    where = train_source(settings)
    train = load_train(where, settings.encoding)
    examples = select_examples(train, settings.shots, seed=settings.engine.seed, exclude=references)
    if len(examples) < settings.shots:
        raise InputError.at(
            where, None, "cot", f"k-shot needs {settings.shots} examples with a rationale, found {len(examples)}"
        )
    return examples


def prompt_hash(request: ModelRequest) -> str:
    """sha256 (16 hex digits) of a request's messages."""
    payload = json.dumps([m.model_dump() for m in request.messages], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def build_requests(
    references: Sequence[VarmReference],
    template: PromptTemplate,
    examples: Sequence[VarmReference],
    params: GenerationParams,
) -> list[ModelRequest]:
    """One request per reference item (repeat 0)."""
    return [
        ModelRequest(sample_id=r.id, messages=template.render(r, examples), params=params, input_text=r.text)
        for r in references
    ]


def _run_id(root: Path, settings: EvalSettings) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    lora = "-lora" if settings.backend_options.adapter else ""
    constrained = "" if settings.constrain == "none" else f"-{settings.constrain}"
    base = f"{stamp}-{slug(settings.model.split('/')[-1])}{lora}-{settings.setting}{constrained}"
    candidate, n = base, 1
    while (root / candidate).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


@dataclass(frozen=True)
class PreparedRun:
    """A new run's inputs, checked before any model is loaded."""

    references: list[VarmReference]
    data: dict[str, Any]
    template: PromptTemplate
    examples: list[VarmReference]
    requests: list[ModelRequest]


def prepare_run(settings: EvalSettings) -> PreparedRun:
    """Read the data, the prompt template and the k-shot examples; build the requests.

    Raises :class:`InputError` for bad data or options, before anything is created."""
    references, data = _references(settings)
    template = load_prompt(settings.setting, settings.prompt_template)
    examples = _examples(settings, references)
    requests = build_requests(references, template, examples, constrained_params(settings))
    return PreparedRun(references, data, template, examples, requests)


def start_run(
    settings: EvalSettings,
    prepared: PreparedRun,
    backend: ModelBackend,
    runs_root: str | Path,
    run_id: str | None = None,
    provenance: dict[str, Any] | None = None,
) -> RunStore:
    """Create the run directory of a prepared run (named ``run_id`` when given: it must be new)."""
    root = Path(runs_root)
    root.mkdir(parents=True, exist_ok=True)
    template = prepared.template
    manifest = RunManifest(
        run_id=run_id or _run_id(root, settings),
        model=settings.model,
        backend=backend.identity(),
        setting=settings.setting,
        prompt={"version": template.version, "sha256": template.sha256, "file": settings.prompt_template},
        params=constrained_params(settings).model_dump(),
        engine=settings.engine.model_dump(),
        backend_options=settings.backend_options.model_dump(),
        data=prepared.data,
        limit=settings.limit,
        constrain=settings.constrain,
        shots=len(prepared.examples),
        examples=[e.id for e in prepared.examples],
        verimod_version=__version__,
        parser_version=PARSER_VERSION,
        git_revision=git_revision(Path(__file__).parent),
        provenance=provenance,
    )
    manifest.counts.total = len(prepared.requests)
    return RunStore.create(root, manifest, (r.model_dump(exclude_none=True) for r in prepared.references))


def constrained_params(settings: EvalSettings) -> GenerationParams:
    """The generation parameters with the ``constrain`` mode's structured output set (the
    grammar then enters the cache key and the manifest's ``params``). An input error when the
    parameters already carry another constraint (``--json-schema``, ``--regex``)."""
    structured = structured_output(settings.constrain)
    if structured is None or settings.params.structured == structured:
        return settings.params
    if settings.params.structured is not None:
        raise InputError.at(
            "--constrain", None, None, "--constrain anchors cannot be combined with --json-schema or --regex"
        )
    return settings.params.model_copy(update={"structured": structured})


def settings_of(manifest: RunManifest) -> EvalSettings:
    """The settings a run was started with."""
    return EvalSettings(
        model=manifest.model,
        setting=manifest.setting,
        shots=manifest.shots,
        prompt_template=manifest.prompt.get("file"),
        limit=manifest.limit,
        constrain=constrain_mode(GenerationParams.model_validate(manifest.params).structured),
        params=GenerationParams.model_validate(manifest.params),
        engine=EngineConfig.model_validate(manifest.engine),
        backend_options=BackendOptions.model_validate(manifest.backend_options),
    )


def resume_run(run_dir: str | Path) -> tuple[RunStore, list[ModelRequest], PromptTemplate]:
    """Reopen a run; return its store, the requests still to send and the prompt template."""
    store = RunStore.open(run_dir)
    manifest = store.manifest
    settings = settings_of(manifest)
    template = load_prompt(manifest.setting, manifest.prompt.get("file"))
    if template.sha256 != manifest.prompt.get("sha256"):
        raise InputError.at(
            str(run_dir),
            None,
            "prompt",
            f"the prompt template changed since the run started ({manifest.prompt.get('version')} → "
            f"{template.version}); start a new run",
        )
    references = load_references(store.references_path())
    examples: list[VarmReference] = []
    if manifest.examples:
        train = load_train(manifest.data.get("train"))
        by_id = {r.id: r for r in train}
        missing = [i for i in manifest.examples if i not in by_id]
        if missing:
            raise InputError.at(
                str(run_dir), None, "examples", f"k-shot examples not found in the train data: {missing[:3]}"
            )
        examples = [by_id[i] for i in manifest.examples]
    requests = build_requests(references, template, examples, settings.params)
    done = {key for key, record in store.samples().items() if record.error is None}
    outstanding = [r for r in requests if (r.sample_id, r.repeat) not in done]
    return store, outstanding, template


def _record(outcome: Outcome) -> dict[str, Any]:
    """The samples.jsonl line of an outcome (the fields of :class:`SampleRecord`, built directly:
    this runs once per sample on the hot path)."""
    response, error = outcome.response, outcome.error
    return {
        "id": outcome.request.sample_id,
        "repeat": outcome.request.repeat,
        "prompt_hash": prompt_hash(outcome.request),
        "output": None if response is None else response.text,
        "label_probs": None if response is None else response.label_probs,
        "error": None if error is None else str(error),
        "error_kind": None if error is None else error.kind,
        "latency_s": round(outcome.latency_s, 6),
        "prompt_tokens": None if response is None else response.prompt_tokens,
        "completion_tokens": None if response is None else response.completion_tokens,
        "finish_reason": None if response is None else response.finish_reason,
        "cache_hit": outcome.cache_hit,
        "attempts": outcome.attempts,
        "finished_at": now(),
    }


async def execute(
    store: RunStore,
    backend: ModelBackend,
    requests: Sequence[ModelRequest],
    template: PromptTemplate,
    cache: ResponseCache | None,
    on_progress: Callable[[Outcome], None] | None = None,
) -> EngineStats:
    """Send ``requests``; every outcome is appended to the run's samples as it arrives."""
    manifest = store.manifest
    manifest.status = "running"
    store.save_manifest()

    def on_outcome(outcome: Outcome) -> None:
        store.append(_record(outcome))
        if on_progress is not None:
            on_progress(outcome)

    try:
        return await run_requests(
            backend,
            requests,
            on_outcome,
            EngineConfig.model_validate(manifest.engine),
            cache,
            prompt_version=f"{template.version}:{template.sha256}",
        )
    finally:
        store.close()


@dataclass(frozen=True)
class ScoredRun:
    """A run re-scored from its files: its store, references, per-item scores (in reference
    order) and summary metrics. Nothing is written."""

    store: RunStore
    references: list[VarmReference]
    items: list[ItemScore]
    scores: VarmScores
    errors: int
    finished: int
    answered: int


def rescore(store: RunStore) -> ScoredRun:
    """Score a run's stored outputs with the current parser (no model call, no file written)."""
    references = load_references(store.references_path())
    samples = store.samples()
    scorer = VarmScorer()
    items = []
    errors = finished = 0
    for reference in references:
        record = samples.get((reference.id, 0))
        finished += record is not None
        errors += record is not None and record.error is not None
        if record is None:
            items.append(scorer.add(reference.id, reference, None))
        else:
            items.append(scorer.add(reference.id, reference, record.output, record.error, record.finish_reason))
    return ScoredRun(store, references, items, scorer.scores(), errors, finished, finished - errors)


def load_run(run_dir: str | Path) -> ScoredRun:
    """Open a run directory read-only and re-score it (see :func:`rescore`): nothing in it is
    written, so it works on a read-only folder."""
    return rescore(RunStore.open(run_dir, read_only=True))


def score_run(store: RunStore) -> tuple[VarmScores, list[ItemScore]]:
    """Score a run from its files (no model call); writes scores.json and items.jsonl and
    updates the manifest's counts, status and end time."""
    run = rescore(store)
    manifest = store.manifest
    manifest.counts.total = len(run.references)
    manifest.counts.done = run.finished
    manifest.counts.errors = run.errors
    manifest.counts.cache_hits = sum(1 for s in store.samples().values() if s.cache_hit)
    if run.finished < len(run.references):
        manifest.status = "interrupted"
    elif run.answered == 0:
        manifest.status = "failed"
    elif run.errors:
        manifest.status = "completed_with_errors"
    else:
        manifest.status = "completed"
    manifest.finished_at = now()
    manifest.parser_version = PARSER_VERSION
    store.write_results({**run.scores.model_dump(), "run_id": manifest.run_id}, (i.to_dict() for i in run.items))
    store.save_manifest()
    return run.scores, run.items
