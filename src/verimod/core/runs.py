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
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verimod.core.errors import InputError
from verimod.core.hashing import file_sha256 as file_sha256
from verimod.data.jsonl import dumps_line, read_jsonl, write_json, write_jsonl

RunStatus = Literal["running", "completed", "completed_with_errors", "failed", "interrupted"]
MANIFEST = "manifest.json"
SAMPLES = "samples.jsonl"
REFERENCES = "references.jsonl"
SCORES = "scores.json"
ITEMS = "items.jsonl"


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

    def __init__(self, directory: Path, manifest: RunManifest) -> None:
        self.directory = directory
        self.manifest = manifest
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
    def open(cls, directory: str | Path) -> RunStore:
        """Open an existing run directory; a torn last sample line is cut off."""
        path = Path(directory)
        manifest_path = path / MANIFEST
        if not manifest_path.is_file():
            raise InputError.at(str(path), None, None, f"not a run directory (no {MANIFEST})")
        try:
            manifest = RunManifest.model_validate_json(manifest_path.read_text(encoding="utf-8"))
        except (ValidationError, ValueError) as exc:
            raise InputError.at(str(manifest_path), None, None, f"unreadable manifest: {exc}") from None
        store = cls(path, manifest)
        store._repair_torn_tail()
        return store

    def _repair_torn_tail(self) -> None:
        """Cut a last line that has no newline (a sample being written when the run died)."""
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
        write_json(self.directory / MANIFEST, self.manifest.model_dump())

    # -- samples ----------------------------------------------------------------------------
    def samples(self) -> dict[tuple[str, int], SampleRecord]:
        """The authoritative (latest) record of every finished sample."""
        latest: dict[tuple[str, int], SampleRecord] = {}
        path = self.directory / SAMPLES
        for line, obj in read_jsonl(path):
            try:
                record = SampleRecord.model_validate(obj)
            except ValidationError as exc:
                raise InputError.at(str(path), line, None, f"not a sample record: {exc.errors()[0]['msg']}") from None
            latest[(record.id, record.repeat)] = record
        return latest

    def append(self, record: SampleRecord | dict[str, Any]) -> None:
        """Append one finished sample (a record, or a dict of its fields) and flush it to the OS."""
        if self._samples_handle is None:
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
        write_jsonl(self.directory / ITEMS, items)
        write_json(self.directory / SCORES, scores)

    def scores(self) -> dict[str, Any] | None:
        """The stored metrics, or None when the run has not been scored."""
        path = self.directory / SCORES
        if not path.is_file():
            return None
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data
