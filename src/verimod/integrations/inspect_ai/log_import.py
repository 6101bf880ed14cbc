"""An inspect_ai eval log as a verimod run directory (``verimod import inspect LOG``).

The run holds what ``verimod eval`` would have written, so ``runs show | compare (--paired)``,
``report``, ``diagnose`` and ``score --run`` work on it:

- ``references.jsonl``: the log's data set, in the log's sample order (``eval.dataset.sample_ids``,
  else the order the samples appear), each record from the sample's ``metadata["reference"]``
  (verimod's inspect tasks put it there) or, with ``references``, from that reference file by
  sample id (logs of other tasks).
- ``samples.jsonl``: one line per logged sample and epoch (``repeat`` = epoch − 1; verimod scores
  repeat 0): the completion as ``output``; a sample that ended in an error has no output and
  its error message (kind ``model``), so it is scored as wrong, never left out; the prompt hash
  of its input messages (equal to ``verimod eval``'s for the same prompt); time and tokens.
- ``manifest.json``: model ``inspect:<provider/model>``, the setting, prompt, data and examples
  from the task's metadata (verimod tasks) and the generation settings of the log, and a
  ``provenance`` record: the log file and its sha256, the eval and run ids, task, task version
  and arguments, inspect's version, the log's status and times. Model arguments are not
  copied (they may hold keys).

Then the run is scored with verimod's scorer (``scores.json``, ``items.jsonl``). A sample of the
data set missing from the log (a cancelled eval) counts as a missing prediction and leaves the
run ``interrupted``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verimod import __version__
from verimod.core.errors import InputError, MissingExtraError, install_hint, shown
from verimod.core.hashing import file_sha256
from verimod.core.runs import RunManifest, RunStore, SampleRecord, slug
from verimod.data.hf import rows_sha256
from verimod.models.base import ChatMessage, ModelRequest
from verimod.tasks.varm.evaluate import prompt_hash, score_run
from verimod.tasks.varm.io import load_references
from verimod.tasks.varm.parser import PARSER_VERSION
from verimod.tasks.varm.schema import VarmReference
from verimod.tasks.varm.scorer import VarmScores

_ROLES = {"system", "user", "assistant"}


@dataclass(frozen=True)
class ImportedRun:
    """The run directory made from a log, with its scores."""

    store: RunStore
    scores: VarmScores
    samples: int
    errors: int
    left_out_references: int


def _read_log(path: Path) -> Any:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise MissingExtraError(f"reading inspect logs needs inspect_ai: {install_hint('inspect')}") from None
    if not path.is_file():
        raise InputError.at(str(path), None, None, "file not found")
    try:
        return read_eval_log(str(path))
    except Exception as exc:  # inspect raises several types for a foreign or damaged file
        raise InputError.at(
            str(path), None, None, f"not a readable inspect log: {' '.join(str(exc).split())}"
        ) from None


def _text(content: Any) -> str:
    """The text of a message content (a string, or inspect's list of content parts)."""
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") or "" for part in content or ())


def _prompt_hash(sample: Any) -> str:
    messages = sample.input if isinstance(sample.input, list) else None
    chat: tuple[ChatMessage, ...]
    if messages is None:
        chat = (ChatMessage(role="user", content=str(sample.input)),)
    else:
        chat = tuple(
            ChatMessage(role=m.role if m.role in _ROLES else "user", content=_text(m.content)) for m in messages
        )
    return prompt_hash(ModelRequest(sample_id=str(sample.id), messages=chat))


def _tokens(sample: Any) -> tuple[int | None, int | None]:
    usage = sample.output.usage if sample.output is not None else None
    if usage is None and sample.model_usage:
        usage = next(iter(sample.model_usage.values()))
    if usage is None:
        return None, None
    return usage.input_tokens, usage.output_tokens


def sample_record(sample: Any) -> SampleRecord:
    """The ``samples.jsonl`` line of one logged sample."""
    error = sample.error
    prompt_tokens, completion_tokens = _tokens(sample)
    completed = str(sample.completed_at) if sample.completed_at else ""
    return SampleRecord(
        id=str(sample.id),
        repeat=max(int(sample.epoch) - 1, 0),
        prompt_hash=_prompt_hash(sample),
        output=None if error is not None or sample.output is None else sample.output.completion,
        error=None if error is None else (" ".join(str(error.message).split()) or "error"),
        error_kind=None if error is None else "model",
        latency_s=float(sample.total_time or 0.0),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cache_hit=False,
        attempts=1 + len(sample.error_retries or ()),
        **({"finished_at": completed} if completed else {}),
    )


def _references(log: Any, path: Path, reference_file: str | None) -> tuple[list[VarmReference], int]:
    """The evaluated references in the log's order, and how many of the reference file's items
    the log did not evaluate."""
    samples = log.samples or []
    order = [str(i) for i in (log.eval.dataset.sample_ids or [])]
    seen = set(order)
    for sample in samples:
        if str(sample.id) not in seen:
            seen.add(str(sample.id))
            order.append(str(sample.id))
    if not order:
        raise InputError.at(str(path), None, None, "the log holds no samples")
    if reference_file is not None:
        by_id = {r.id: r for r in load_references(reference_file)}
        missing = [i for i in order if i not in by_id]
        if missing:
            raise InputError.at(reference_file, None, "id", f"no reference for sample {shown(missing[0])} of {path}")
        return [by_id[i] for i in order], len(by_id) - len(order)
    found: dict[str, VarmReference] = {}
    for sample in samples:
        reference = (sample.metadata or {}).get("reference")
        if reference is not None and str(sample.id) not in found:
            try:
                found[str(sample.id)] = VarmReference.model_validate(reference)
            except ValueError as exc:
                message = f"sample {shown(str(sample.id))}: metadata.reference is not a VARM reference: {exc}"
                raise InputError.at(str(path), None, "reference", " ".join(message.split())) from None
    missing = [i for i in order if i not in found]
    if missing:
        raise InputError.at(
            str(path),
            None,
            "reference",
            f"sample {shown(missing[0])} carries no metadata.reference (not a verimod task): give --ref REFERENCES",
        )
    return [found[i] for i in order], 0


def _params(log: Any, task_meta: dict[str, Any]) -> dict[str, Any]:
    """The task's generation defaults, overridden by the settings the log was run with."""
    config = log.eval.model_generate_config.model_dump(exclude_none=True)
    return {**task_meta.get("params", {}), **config}


def _run_id(log: Any) -> str:
    """``<created>-inspect-<model>-<task>-<eval id>``: one run per log."""
    stamp = datetime.fromisoformat(str(log.eval.created)).astimezone(UTC).strftime("%Y%m%d-%H%M%S")
    task = str(log.eval.task).split("/")[-1]
    return f"{stamp}-inspect-{slug(str(log.eval.model).split('/')[-1])}-{slug(task)}-{slug(str(log.eval.eval_id))[:8]}"


def import_inspect_log(log_path: str | Path, runs_root: str | Path, reference_file: str | None = None) -> ImportedRun:
    """Make a scored verimod run directory under ``runs_root`` from an inspect log (module
    docstring for what goes where)."""
    path = Path(log_path)
    log = _read_log(path)
    references, left_out = _references(log, path, reference_file)
    task_meta: dict[str, Any] = dict((log.eval.metadata or {}).get("verimod") or {})
    ids = {r.id for r in references}
    records = [sample_record(s) for s in (log.samples or []) if str(s.id) in ids]
    data = dict(task_meta.get("data") or {})
    if reference_file is not None or not data:
        data = {"path": reference_file or f"<inspect dataset {log.eval.dataset.name}>", "split": None, "train": None}
        data["sha256"] = rows_sha256(r.model_dump(exclude_none=True) for r in references)
    data["n"] = len(references)
    stats = log.stats
    root = Path(runs_root)
    root.mkdir(parents=True, exist_ok=True)
    run_id = _run_id(log)
    if (root / run_id).exists():
        raise InputError.at(str(path), None, None, f"this log was imported already: {root / run_id}")
    manifest = RunManifest(
        run_id=run_id,
        model=f"inspect:{log.eval.model}",
        backend={"backend": "inspect_ai", "model": log.eval.model, "base_url": log.eval.model_base_url},
        setting=task_meta.get("setting") or str(log.eval.task).split("/")[-1],
        prompt=task_meta.get("prompt") or {"version": None, "sha256": None, "file": None},
        params=_params(log, task_meta),
        engine={},
        data=data,
        limit=task_meta.get("limit"),
        shots=int(task_meta.get("shots") or 0),
        examples=list(task_meta.get("examples") or []),
        verimod_version=__version__,
        parser_version=PARSER_VERSION,
        started_at=str(stats.started_at or log.eval.created),
        provenance={
            "source": "inspect_ai",
            "log": str(path.resolve()),
            "log_sha256": file_sha256(path),
            "log_status": log.status,
            "eval_id": log.eval.eval_id,
            "run_id": log.eval.run_id,
            "task": log.eval.task,
            "task_version": log.eval.task_version,
            "task_args": log.eval.task_args,
            "epochs": log.eval.config.epochs,
            "inspect_version": (log.eval.packages or {}).get("inspect_ai"),
            "created": str(log.eval.created),
            "completed_at": str(stats.completed_at) if stats.completed_at else None,
            "made_by_verimod": task_meta.get("verimod_version"),
            "references_left_out": left_out,
        },
    )
    manifest.counts.total = len(references)
    store = RunStore.create(root, manifest, (r.model_dump(exclude_none=True) for r in references))
    for record in records:
        store.append(record)
    store.close()
    scores, _ = score_run(store)
    errors = sum(1 for r in records if r.error is not None)
    return ImportedRun(store, scores, len(records), errors, left_out)


__all__: Sequence[str] = ("ImportedRun", "import_inspect_log", "sample_record")
