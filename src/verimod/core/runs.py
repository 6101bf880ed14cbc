"""The run store: one directory per evaluation run, crash-safe and re-scorable.

``runs/<run-id>/`` holds:

- ``manifest.json`` — task, model spec and backend identity (never secrets), prompt version and
  hash, generation and engine settings, data path and sha256, verimod and parser versions, git
  revision when available, start/end time, status, counts. Rewritten atomically.
- ``references.jsonl`` — the evaluated reference items, so a run can be re-scored even when the
  data file has moved.
- ``samples.jsonl`` — append-only, one line per finished sample (id, repeat, prompt hash, raw
  output, error, latency, tokens, cache hit, attempts), flushed as each sample finishes. A run
  killed at any moment, even by SIGKILL, loses at most the samples in flight (a torn last line
  is cut off when the run is reopened). The latest line of a sample is authoritative: a resumed
  run retries samples that ended in an error and appends their new line.
- ``scores.json`` and ``items.jsonl`` — the metrics (the ``verimod score`` keys) and the
  per-item results, written when the run completes or is re-scored.

A run opened with ``read_only=True`` is never written to — no repair, no touch, no mtime
change — so it can be read from a read-only folder; a torn last sample line is then skipped
while reading instead of cut off. :func:`resolve_run_dir` finds a run from its directory, its
id or a unique prefix of its id (under the runs folder, default ``./runs``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verimod.core.errors import InputError, did_you_mean
from verimod.core.hashing import file_sha256 as file_sha256
from verimod.data.jsonl import dumps_line, scan_jsonl, write_json, write_jsonl

RunStatus = Literal["running", "completed", "completed_with_errors", "failed", "interrupted"]
MANIFEST = "manifest.json"
SAMPLES = "samples.jsonl"
REFERENCES = "references.jsonl"
SCORES = "scores.json"
ITEMS = "items.jsonl"
DEFAULT_RUNS_DIR = Path("runs")


def now() -> str:
    """The current UTC time, ISO 8601 with seconds."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def git_revision(path: str | Path) -> str | None:
    """The git commit of the checkout containing ``path`` (None outside a checkout)."""
    try:
        result = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    revision = result.stdout.strip()
    return revision if result.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", revision) else None


class SampleRecord(BaseModel):
    """One line of ``samples.jsonl``."""

    model_config = ConfigDict(extra="forbid")

    id: str
    repeat: int = 0
    prompt_hash: str
    output: str | None = None
    label_probs: dict[str, float] | None = None
    error: str | None = None
    error_kind: str | None = None
    latency_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None  # as the backend reported it ("stop", "length" …)
    cache_hit: bool = False
    attempts: int = 0
    finished_at: str = Field(default_factory=now)


class RunCounts(BaseModel):
    """Progress counters kept in the manifest."""

    model_config = ConfigDict(extra="forbid")

    total: int = 0
    done: int = 0
    errors: int = 0
    cache_hits: int = 0


class RunManifest(BaseModel):
    """``manifest.json``: everything needed to understand, resume and reproduce a run."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    task: str = "varm"
    model: str
    backend: dict[str, Any]
    setting: str
    prompt: dict[str, Any]
    params: dict[str, Any]
    engine: dict[str, Any]
    backend_options: dict[str, Any] = Field(default_factory=dict)
    data: dict[str, Any]
    limit: int | None = None
    constrain: str = "none"  # constrained decoding: none | anchors (the grammar is in params.structured)
    shots: int = 0
    examples: list[str] = Field(default_factory=list)
    verimod_version: str
    parser_version: str
    git_revision: str | None = None
    started_at: str = Field(default_factory=now)
    finished_at: str | None = None
    status: RunStatus = "running"
    counts: RunCounts = Field(default_factory=RunCounts)
    message: str | None = None
    # Where a run made outside `verimod eval` came from (e.g. an imported inspect_ai log).
    provenance: dict[str, Any] | None = None

    @property
    def setting_label(self) -> str:
        """The prompt setting, with the decoding constraint when there is one (``zero-shot +anchors``),
        so constrained and unconstrained runs are told apart in tables."""
        return self.setting if self.constrain == "none" else f"{self.setting} +{self.constrain}"

    @property
    def model_label(self) -> str:
        """The model spec, with the LoRA adapter when the run used one (``hf:BASE + LoRA DIR``),
        so a fine-tuned run and its base model's run are told apart in tables."""
        adapter = self.backend_options.get("adapter") or self.backend.get("adapter")
        return f"{self.model} + LoRA {adapter}" if adapter else self.model


def slug(text: str, limit: int = 40) -> str:
    """A filesystem-safe fragment of ``text``."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return cleaned[:limit] or "run"


class RunStore:
    """One run directory (see the module docstring)."""

    def __init__(self, directory: Path, manifest: RunManifest, read_only: bool = False) -> None:
        self.directory = directory
        self.manifest = manifest
        self.read_only = read_only
        self._samples_handle: Any = None

    # -- creation and opening ---------------------------------------------------------------
    @classmethod
    def create(cls, root: str | Path, manifest: RunManifest, references: Iterable[dict[str, Any]]) -> RunStore:
        """Make ``root/<run_id>/`` with its manifest and references (the id must be new)."""
        directory = Path(root) / manifest.run_id
        directory.mkdir(parents=True, exist_ok=False)
        write_jsonl(directory / REFERENCES, references)
        store = cls(directory, manifest)
        store.save_manifest()
        (directory / SAMPLES).touch()
        return store

    @classmethod
    def open(cls, directory: str | Path, *, read_only: bool = False) -> RunStore:
        """Open an existing run directory; a torn last sample line is cut off (or, read-only,
        skipped when reading). An unreadable file is an :class:`InputError`."""
        path = Path(directory)
        manifest_path = path / MANIFEST
        if not manifest_path.is_file():
            raise InputError.at(str(path), None, None, f"not a run directory (no {MANIFEST})")
        try:
            manifest = RunManifest.model_validate_json(manifest_path.read_text(encoding="utf-8"))
        except (ValidationError, ValueError) as exc:
            raise InputError.at(str(manifest_path), None, None, f"unreadable manifest: {exc}") from None
        except PermissionError:
            raise InputError.at(str(manifest_path), None, None, "permission denied") from None
        store = cls(path, manifest, read_only)
        if not read_only:
            store._repair_torn_tail()
        return store

    def _writable(self) -> None:
        if self.read_only:
            raise RuntimeError(f"run {self.directory} was opened read-only")

    def _repair_torn_tail(self) -> None:
        """Cut a last line that has no newline (a sample being written when the run died)."""
        self._writable()
        samples = self.directory / SAMPLES
        samples.touch()
        with open(samples, "rb+") as handle:
            end = handle.seek(0, os.SEEK_END)
            position = end
            while position > 0:
                step = min(1 << 16, position)
                handle.seek(position - step)
                block = handle.read(step)
                if position == end and block.endswith(b"\n"):
                    return
                cut = block.rfind(b"\n")
                if cut >= 0:
                    handle.truncate(position - step + cut + 1)
                    return
                position -= step
            handle.truncate(0)

    # -- manifest ---------------------------------------------------------------------------
    def save_manifest(self) -> None:
        """Write the manifest atomically."""
        self._writable()
        write_json(self.directory / MANIFEST, self.manifest.model_dump())

    # -- samples ----------------------------------------------------------------------------
    def samples(self) -> dict[tuple[str, int], SampleRecord]:
        """The authoritative (latest) record of every finished sample (a torn last line, which
        only a read-only store can still see, is skipped)."""
        latest: dict[tuple[str, int], SampleRecord] = {}
        path = self.directory / SAMPLES
        if not path.exists():
            return latest
        complete = _complete_lines(path)
        try:
            for line, obj in scan_jsonl(path):
                if complete is not None and line > complete:
                    break
                if isinstance(obj, InputError):
                    raise obj
                try:
                    record = SampleRecord.model_validate(obj)
                except ValidationError as exc:
                    message = f"not a sample record: {exc.errors()[0]['msg']}"
                    raise InputError.at(str(path), line, None, message) from None
                latest[(record.id, record.repeat)] = record
        except InputError as exc:  # the torn line itself cannot even be decoded: ignore it
            if complete is None or exc.problem.line is None or exc.problem.line <= complete:
                raise
        return latest

    def append(self, record: SampleRecord | dict[str, Any]) -> None:
        """Append one finished sample (a record, or a dict of its fields) and flush it to the OS."""
        if self._samples_handle is None:
            self._writable()
            self._samples_handle = open(self.directory / SAMPLES, "ab")  # noqa: SIM115 - closed in close()
        row = record.model_dump() if isinstance(record, SampleRecord) else record
        self._samples_handle.write(dumps_line(row))
        self._samples_handle.flush()

    def close(self) -> None:
        """Close the samples file (fsync'd, so a finished run survives a power cut too)."""
        if self._samples_handle is not None:
            self._samples_handle.flush()
            os.fsync(self._samples_handle.fileno())
            self._samples_handle.close()
            self._samples_handle = None

    # -- references and results -------------------------------------------------------------
    def references_path(self) -> Path:
        """Path of the run's copy of the evaluated references."""
        return self.directory / REFERENCES

    def write_results(self, scores: dict[str, Any], items: Iterable[dict[str, Any]]) -> None:
        """Write ``items.jsonl`` then ``scores.json`` (atomically each)."""
        self._writable()
        write_jsonl(self.directory / ITEMS, items)
        write_json(self.directory / SCORES, scores)

    def scores(self) -> dict[str, Any] | None:
        """The stored metrics, or None when the run has not been scored."""
        path = self.directory / SCORES
        if not path.is_file():
            return None
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data


def _complete_lines(path: Path) -> int | None:
    """None when ``path`` ends with a newline (or is empty); otherwise the number of complete
    lines before its torn last one."""
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        if end == 0:
            return None
        handle.seek(end - 1)
        if handle.read(1) == b"\n":
            return None
        handle.seek(0)
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def run_ids(runs_dir: str | Path) -> list[str]:
    """The ids (folder names) of the run directories directly under ``runs_dir``, sorted."""
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    return sorted(p.parent.name for p in root.glob(f"*/{MANIFEST}"))


def resolve_run_dir(run: str | Path, runs_dir: str | Path = DEFAULT_RUNS_DIR) -> Path:
    """The run directory ``run`` denotes: a directory holding a manifest, else a run id under
    ``runs_dir``, its short id (:func:`short_ids`), or a unique prefix of one (``20261201-1348``
    for ``20261201-134846-baseline-zero-shot``; ``other/20261201-1348`` looks in ``other/``).

    Raises :class:`InputError` naming ``run``: a folder that is not a run directory, an
    ambiguous prefix (with the candidates), or no match (with the closest id, if any).
    """
    given = Path(run)
    text = str(run)
    if (given / MANIFEST).is_file():
        return given
    if given.is_dir():
        raise InputError.at(text, None, None, f"not a run directory (no {MANIFEST})")
    root = given.parent if len(given.parts) > 1 else Path(runs_dir)
    ids = run_ids(root)
    if given.name in ids:
        return root / given.name
    matches = _by_short_hash(given.name, ids) or ([i for i in ids if i.startswith(given.name)] if given.name else [])
    if len(matches) == 1:
        return root / matches[0]
    if matches:
        listed = ", ".join(matches[:5]) + (", …" if len(matches) > 5 else "")
        raise InputError.at(
            text, None, None, f"ambiguous run id: {len(matches)} runs in {root} start with it ({listed})"
        )
    if not ids:
        raise InputError.at(text, None, None, f"no such run: not a run directory, and {root} holds no runs")
    hint = did_you_mean(given.name, ids)
    raise InputError.at(text, None, None, f"no such run: not a run directory, nor a run id in {root}{hint}")


#: a short id longer than this is replaced by its first SHORT_ID_MIN characters, "~" and a hash
SHORT_ID_MAX = 20
SHORT_ID_MIN = 15  # YYYYMMDD-HHMMSS, the time stamp a run id starts with


def _id_hash(run_id: str) -> str:
    return hashlib.sha256(run_id.encode("utf-8")).hexdigest()


def short_ids(ids: Iterable[str]) -> dict[str, str]:
    """A short name for each run id that :func:`resolve_run_dir` resolves to it among ``ids``.

    It is the id's shortest prefix of at least :data:`SHORT_ID_MIN` characters (the time stamp
    ``YYYYMMDD-HHMMSS``) that no other id starts with; when that is longer than
    :data:`SHORT_ID_MAX` (runs started in the same second with the same model), the first
    :data:`SHORT_ID_MIN` characters, ``~`` and the first hex digits of the id's SHA-256 that
    tell it apart (``20261201-134846~3fa2``).
    """
    unique = sorted(set(ids))
    result: dict[str, str] = {}
    for index, run_id in enumerate(unique):
        length = min(SHORT_ID_MIN, len(run_id))
        for other in unique[max(0, index - 1) : index] + unique[index + 1 : index + 2]:
            common = next((k for k, (a, b) in enumerate(zip(run_id, other, strict=False)) if a != b), None)
            length = max(length, (min(len(run_id), len(other)) if common is None else common) + 1)
        if length <= SHORT_ID_MAX or len(run_id) <= SHORT_ID_MAX:
            result[run_id] = run_id[:length]
            continue
        stem = run_id[:SHORT_ID_MIN]
        rivals = [_id_hash(o) for o in unique if o != run_id and o.startswith(stem)]
        own, digits = _id_hash(run_id), 4
        while any(r.startswith(own[:digits]) for r in rivals):
            digits += 1
        result[run_id] = f"{stem}~{own[:digits]}"
    return result


def _by_short_hash(name: str, ids: Sequence[str]) -> list[str]:
    """The ids that a ``STEM~HASH`` short id (see :func:`short_ids`) denotes."""
    stem, _, digest = name.rpartition("~")
    if not stem or not re.fullmatch(r"[0-9a-f]{4,64}", digest):
        return []
    return [i for i in ids if i.startswith(stem) and _id_hash(i).startswith(digest)]
