"""``verimod eval`` as a library: build the requests of a VARM run, run them through the engine
into a run directory, and score the stored outputs.

- :func:`prepare_run` reads and checks the data, prompt and examples and plans the requests;
  :func:`start_run` then creates the run directory (manifest with every setting, no secrets;
  the evaluated references).
- :func:`resume_run` reopens a run: the same requests are rebuilt from the manifest, and only
  samples without a successful stored answer are sent again (a resumed run ends with the same
  scores as an uninterrupted one).
- :func:`execute` sends the outstanding requests, appending one sample line per answer, and
  records the engine's counters in the manifest.
- :func:`score_run` re-scores a run from its files alone, without any model call.

Memory is O(concurrency + items' scores), not O(items): the references are streamed to a spool
file that becomes the run's ``references.jsonl``, prompts are built as the engine reads the
requests (:mod:`verimod.tasks.varm.run_items`), and scoring streams the references beside an
index of the samples file, parsing each sample line once, keeping only the scorer's compact
columns (a few dozen bytes per item) and writing ``items.jsonl`` as it goes.

``repeats`` (``--repeats N``) asks each item N times — for sampling at temperature > 0: repeat
``r`` is sent with seed ``seed + r`` and is part of the cache key and of the sample key. The
scores of repeat 0 are the run's scores (comparable with any single-repeat run); ``scores.json``
adds ``repeats``: the mean, the sample standard deviation (n − 1), the minimum and the maximum
of each headline metric over the N repeats, and each repeat's value.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
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
from verimod.core.runs import RunManifest, RunStore, SampleRecord, git_revision, now, slug
from verimod.data.hf import source_label, source_sha256
from verimod.models.base import BackendOptions, GenerationParams, ModelBackend, ModelRequest
from verimod.tasks.varm.bundled import DEFAULT_DATA, DEFAULT_SPLIT, bundled_path, load_bundled
from verimod.tasks.varm.disputes import DisputedMode, apply_disputes, dispute_of
from verimod.tasks.varm.grammar import ConstrainMode, constrain_mode, structured_output
from verimod.tasks.varm.io import iter_references, load_references
from verimod.tasks.varm.parser import PARSER_VERSION
from verimod.tasks.varm.prompts import DEFAULT_SHOTS, PromptTemplate, load_prompt, select_examples
from verimod.tasks.varm.run_items import ReferenceFile, RequestPlan, spool_references
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
    repeats: int = Field(1, ge=1)  # samples per item (for temperature > 0)
    disputed: DisputedMode = "keep"  # items whose annotators dispute the source: keep | drop | reading
    constrain: ConstrainMode = "none"  # decoding constraint; "anchors" sets params.structured
    params: GenerationParams = GenerationParams()
    engine: EngineConfig = EngineConfig()
    backend_options: BackendOptions = BackendOptions()
    encoding: str | None = None


def _references(settings: EvalSettings, folder: str | Path | None = None) -> tuple[ReferenceFile, dict[str, Any]]:
    """The evaluated items, spooled to a file in ``folder`` (:func:`spool_references`), and the
    manifest's ``data`` entry. No ``data``: the bundled :data:`~verimod.tasks.varm.bundled.DEFAULT_DATA`
    set; a bundled set's default split is :data:`~verimod.tasks.varm.bundled.DEFAULT_SPLIT`."""
    source = settings.data or DEFAULT_DATA
    bundled = bundled_path(source)
    split = settings.split or (DEFAULT_SPLIT if bundled is not None else None)
    counts = {"split": 0, "disputed": 0, "kept": 0}

    def selected() -> Iterator[VarmReference]:
        for reference in iter_references(source, settings.encoding):
            if split is not None and reference.split != split:
                continue
            counts["split"] += 1
            counts["disputed"] += dispute_of(reference) is not None
            for kept in apply_disputes([reference], settings.disputed, str(source)):
                if settings.limit is None or counts["kept"] < settings.limit:
                    counts["kept"] += 1
                    yield kept

    references = spool_references(selected(), folder)
    if split is not None and counts["split"] == 0:
        raise InputError.at(source, None, "split", f"no items with split {split!r}")
    if counts["kept"] == 0:
        raise InputError.at(source, None, "meta.disputed", "--disputed drop leaves no item")
    data: dict[str, Any] = {
        "path": source if bundled is not None else source_label(source),
        "sha256": file_sha256(bundled)
        if bundled is not None
        else source_sha256(source, _Lazy(lambda: iter_references(source, settings.encoding))),
        "split": split,
        "disputed": {"mode": settings.disputed, "items": counts["disputed"]},
        "n": counts["kept"],
        "train": train_source(settings),
    }
    return references, data


class _Lazy(Iterable[VarmReference]):
    """An iterable that reads its source only if it is iterated (a file's sha256 needs no items)."""

    def __init__(self, make: Callable[[], Iterator[VarmReference]]) -> None:
        self._make = make

    def __iter__(self) -> Iterator[VarmReference]:
        return self._make()


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
    repeats: int = 1,
) -> list[ModelRequest]:
    """Every request of ``references`` (one per item and repeat), as a list: for small sets and
    tests; a run streams them (:class:`~verimod.tasks.varm.run_items.RequestPlan`)."""
    return list(RequestPlan(references, template, examples, params, repeats))


def _run_id(settings: EvalSettings) -> str:
    """``<UTC time>-<model>[-lora]-<setting>``; :meth:`RunStore.create` adds ``-2``, ``-3`` … when
    another run took it (two runs started in the same second)."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    lora = "-lora" if settings.backend_options.adapter else ""
    constrained = "" if settings.constrain == "none" else f"-{settings.constrain}"
    return f"{stamp}-{slug(settings.model.split('/')[-1])}{lora}-{settings.setting}{constrained}"


@dataclass(frozen=True)
class PreparedRun:
    """A new run's inputs, checked before any model is loaded. ``references`` and ``requests``
    are read on demand (:mod:`verimod.tasks.varm.run_items`), never all held."""

    references: ReferenceFile
    data: dict[str, Any]
    template: PromptTemplate
    examples: list[VarmReference]
    requests: RequestPlan


def prepare_run(settings: EvalSettings, spool_folder: str | Path | None = None) -> PreparedRun:
    """Read and check the data (spooled to a file in ``spool_folder``, default the system's
    temporary folder; :func:`start_run` moves it into the run), the prompt template and the
    k-shot examples; plan the requests.

    Raises :class:`InputError` for bad data or options, before anything is created."""
    references, data = _references(settings, spool_folder)
    template = load_prompt(settings.setting, settings.prompt_template)
    examples = _examples(settings, references)
    requests = RequestPlan(references, template, examples, constrained_params(settings), settings.repeats)
    return PreparedRun(references, data, template, examples, requests)


def start_run(
    settings: EvalSettings,
    prepared: PreparedRun,
    backend: ModelBackend,
    runs_root: str | Path,
    run_id: str | None = None,
    provenance: dict[str, Any] | None = None,
) -> RunStore:
    """Create the run directory of a prepared run, locked by this process (named ``run_id``
    when given: it must be new; else a new time-stamped id, never one another process took)."""
    root = Path(runs_root)
    template = prepared.template
    manifest = RunManifest(
        run_id=run_id or _run_id(settings),
        model=settings.model,
        backend=backend.identity(),
        setting=settings.setting,
        prompt={"version": template.version, "sha256": template.sha256, "file": settings.prompt_template},
        params=constrained_params(settings).model_dump(),
        engine=settings.engine.model_dump(),
        backend_options=settings.backend_options.model_dump(),
        data=prepared.data,
        limit=settings.limit,
        repeats=settings.repeats,
        constrain=settings.constrain,
        shots=len(prepared.examples),
        examples=[e.id for e in prepared.examples],
        verimod_version=__version__,
        parser_version=PARSER_VERSION,
        git_revision=git_revision(Path(__file__).parent),
        provenance=provenance,
    )
    manifest.counts.total = len(prepared.requests)
    spooled = prepared.references.take()
    rows = spooled if spooled is not None else (r.model_dump(exclude_none=True) for r in prepared.references)
    store = RunStore.create(root, manifest, rows, unique=run_id is None)
    prepared.references.relocate(store.references_path())
    return store


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
        repeats=manifest.repeats,
        constrain=constrain_mode(GenerationParams.model_validate(manifest.params).structured),
        params=GenerationParams.model_validate(manifest.params),
        engine=EngineConfig.model_validate(manifest.engine),
        backend_options=BackendOptions.model_validate(manifest.backend_options),
    )


def resume_run(run_dir: str | Path) -> tuple[RunStore, RequestPlan, PromptTemplate]:
    """Reopen a run (taking its lock); return its store, the requests still to send (built on
    demand) and the prompt template."""
    store = RunStore.open(run_dir)
    try:
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
        references = ReferenceFile.open(store.references_path())
        done = store.finished_keys()
        requests = RequestPlan(references, template, examples, settings.params, settings.repeats, skip=done)
    except BaseException:
        store.release()
        raise
    return store, requests, template


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
    requests: Iterable[ModelRequest],
    template: PromptTemplate,
    cache: ResponseCache | None,
    on_progress: Callable[[Outcome], None] | None = None,
) -> EngineStats:
    """Send ``requests``; every outcome is appended to the run's samples as it arrives; the
    engine's counters (:meth:`EngineStats.summary`) are added to the manifest's ``engine_phases``."""
    manifest = store.manifest
    manifest.status = "running"
    store.save_manifest()
    started = now()

    def on_outcome(outcome: Outcome) -> None:
        store.append(_record(outcome))
        if on_progress is not None:
            on_progress(outcome)

    try:
        stats = await run_requests(
            backend,
            requests,
            on_outcome,
            EngineConfig.model_validate(manifest.engine),
            cache,
            prompt_version=f"{template.version}:{template.sha256}",
        )
    finally:
        store.close()
    manifest.engine_phases.append({"started_at": started, **stats.summary()})
    store.save_manifest()
    return stats


@dataclass(frozen=True)
class ScoredRun:
    """A run re-scored from its files: its store, references, per-item scores (in reference
    order) and summary metrics — of repeat 0 for a run with repeats. Nothing is written."""

    store: RunStore
    references: list[VarmReference]
    items: list[ItemScore]
    scores: VarmScores
    errors: int
    finished: int
    answered: int


class _Scoring:
    """Scores a run's samples against its references, repeat by repeat, streaming (module
    docstring): one :class:`VarmScorer` and one set of counts per repeat."""

    def __init__(self, store: RunStore, repeats: int) -> None:
        self.store = store
        self.repeats = repeats
        self.scorers = [VarmScorer() for _ in range(repeats)]
        self.finished = [0] * repeats
        self.errors = [0] * repeats
        self.cache_hits = 0

    def items(self, references: Iterable[VarmReference]) -> Iterator[tuple[int, ItemScore]]:
        """(repeat, item score) for every item and repeat, in reference order."""
        index = self.store.sample_index()
        by_repeat = [index.get(repeat, {}) for repeat in range(self.repeats)]
        with self.store.sample_reader() as read:
            for reference in references:
                for repeat, offsets in enumerate(by_repeat):
                    offset = offsets.get(reference.id)
                    record: SampleRecord | None = None if offset is None else read(offset)
                    error = None if record is None else record.error
                    if record is not None:
                        self.finished[repeat] += 1
                        self.errors[repeat] += error is not None
                        self.cache_hits += record.cache_hit
                    output = None if record is None else record.output
                    finish = None if record is None else record.finish_reason
                    yield repeat, self.scorers[repeat].add(reference.id, reference, output, error, finish)


def rescore(store: RunStore) -> ScoredRun:
    """Score a run's stored outputs with the current parser (no model call, no file written);
    a run with repeats is scored on repeat 0."""
    references = list(ReferenceFile.open(store.references_path()))
    scoring = _Scoring(store, 1)
    items = [item for _, item in scoring.items(references)]
    errors, finished = scoring.errors[0], scoring.finished[0]
    return ScoredRun(store, references, items, scoring.scorers[0].scores(), errors, finished, finished - errors)


def load_run(run_dir: str | Path) -> ScoredRun:
    """Open a run directory read-only and re-score it (see :func:`rescore`): nothing in it is
    written, so it works on a read-only folder."""
    return rescore(RunStore.open(run_dir, read_only=True))


#: the metrics summarised over repeats (``scores.json`` → ``repeats``)
REPEAT_METRICS = (
    "jrem",
    "label_macro_f1",
    "category_macro_f1",
    "target_char_f1",
    "target_type_macro_f1",
    "explicitness_macro_f1",
    "stance_macro_f1",
    "parse_rate",
    "format_rate",
    "her_c",
    "her_l",
)


def repeat_summary(per_repeat: Sequence[VarmScores]) -> dict[str, Any]:
    """Mean, sample standard deviation (n − 1; None for one value), minimum, maximum and the
    per-repeat values of each of :data:`REPEAT_METRICS`, over the repeats where it is defined."""
    metrics: dict[str, Any] = {}
    for name in REPEAT_METRICS:
        values = [getattr(scores, name) for scores in per_repeat]
        defined = [v for v in values if v is not None]
        metrics[name] = {
            "mean": statistics.fmean(defined) if defined else None,
            "sd": statistics.stdev(defined) if len(defined) > 1 else None,
            "min": min(defined) if defined else None,
            "max": max(defined) if defined else None,
            "values": values,
        }
    return {"count": len(per_repeat), "metrics": metrics}


def score_run(store: RunStore, keep_items: bool = True) -> tuple[VarmScores, list[ItemScore]]:
    """Score a run from its files (no model call, each sample line parsed once); writes
    items.jsonl (every item and repeat, streamed) and scores.json (repeat 0, and ``repeats``:
    :func:`repeat_summary`) and updates the manifest's counts, status and end time. Returns the
    scores and, with ``keep_items``, the item scores of repeat 0 (else an empty list: memory
    stays O(items' scores))."""
    manifest = store.manifest
    repeats = manifest.repeats
    references = ReferenceFile.open(store.references_path())
    scoring = _Scoring(store, repeats)
    kept: list[ItemScore] = []

    def rows() -> Iterator[dict[str, Any]]:
        for repeat, item in scoring.items(references):
            if keep_items and repeat == 0:
                kept.append(item)
            row = item.to_dict()
            if repeats > 1:
                row["repeat"] = repeat
            yield row

    store.write_items(rows())
    per_repeat = [scorer.scores() for scorer in scoring.scorers]
    finished, errors = sum(scoring.finished), sum(scoring.errors)
    manifest.counts.total = len(references) * repeats
    manifest.counts.done = finished
    manifest.counts.errors = errors
    manifest.counts.cache_hits = scoring.cache_hits
    if finished < manifest.counts.total:
        manifest.status = "interrupted"
    elif finished == errors:
        manifest.status = "failed"
    elif errors:
        manifest.status = "completed_with_errors"
    else:
        manifest.status = "completed"
    manifest.finished_at = now()
    manifest.parser_version = PARSER_VERSION
    scores: dict[str, Any] = {**per_repeat[0].model_dump(), "run_id": manifest.run_id}
    if repeats > 1:
        scores["repeats"] = repeat_summary(per_repeat)
    store.write_scores(scores)
    store.save_manifest()
    return per_repeat[0], kept
