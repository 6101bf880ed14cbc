"""The run store: one directory per evaluation run, crash-safe, locked and re-scorable.

``runs/<run-id>/`` holds:

- ``manifest.json`` — task, model spec and backend identity (never secrets), prompt version and
  hash, generation and engine settings, data path and sha256, verimod and parser versions, git
  revision when available, start/end time, status, counts, and the counters of each engine
  phase (``engine_phases``: one per start or resume). Rewritten atomically and durably (fsync'd
  before it replaces the previous version).
- ``references.jsonl`` — the evaluated reference items, so a run can be re-scored even when the
  data file has moved.
- ``samples.jsonl`` — append-only, one line per finished sample (id, repeat, prompt hash, raw
  output, error, latency, tokens, cache hit, attempts), flushed as each sample finishes. A run
  killed at any moment, even by SIGKILL, loses at most the samples in flight (a torn last line
  is cut off when the run is reopened). The latest line of a sample is authoritative: a resumed
  run retries samples that ended in an error and appends their new line.
- ``scores.json`` and ``items.jsonl`` — the metrics (the ``verimod score`` keys) and the
  per-item results, written when the run completes or is re-scored.
- ``.lock`` — the lock of the process writing the run (:mod:`verimod.core.runlock`).

A run directory appears complete or not at all: :meth:`RunStore.create` writes the manifest
(first), the references, the empty samples file and the lock into a hidden staging folder
(``.creating-…``) and publishes it with one rename, retrying another id when two processes
chose the same one (``unique=True``). A staging folder left by a killed process is removed by
a later creation in the same folder. Opening a run for writing takes its lock (a second writer
gets a one-line error naming the holder's PID) and removes the temporary files (``*.tmp``) an
atomic write left behind when its process was killed.

A run opened with ``read_only=True`` is never written to — no lock, no repair, no touch, no
mtime change — so it can be read from a read-only folder; a torn last sample line is then
skipped while reading instead of cut off. :func:`resolve_run_dir` finds a run from its
directory, its id or a unique prefix of its id (under the runs folder, default ``./runs``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verimod.core.errors import InputError, did_you_mean
from verimod.core.hashing import file_sha256 as file_sha256
from verimod.core.runlock import RunLock, lock_holder
from verimod.data.jsonl import dumps_line, fsync_folder, scan_jsonl, write_json, write_jsonl

RunStatus = Literal["running", "completed", "completed_with_errors", "failed", "interrupted"]
MANIFEST = "manifest.json"
SAMPLES = "samples.jsonl"
REFERENCES = "references.jsonl"
SCORES = "scores.json"
ITEMS = "items.jsonl"
DEFAULT_RUNS_DIR = Path("runs")
STAGING_PREFIX = ".creating-"
#: spool files (a new run's references, written before its folder exists): SPOOL_PREFIX, the
#: writing process's id, "-", a random part, SPOOL_SUFFIX
SPOOL_PREFIX = ".references-"
SPOOL_SUFFIX = ".jsonl.spool"
#: a staging folder older than this and unlocked was left by a killed process
STALE_STAGING_S = 60.0


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
    repeats: int = Field(1, ge=1)  # samples per item (temperature > 0)
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
    engine_phases: list[dict[str, Any]] = Field(default_factory=list)  # EngineStats.summary() per phase
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
        self._lock: RunLock | None = None

    # -- creation and opening ---------------------------------------------------------------
    @classmethod
    def create(
        cls,
        root: str | Path,
        manifest: RunManifest,
        references: Iterable[dict[str, Any]] | Path,
        *,
        unique: bool = False,
    ) -> RunStore:
        """Make ``root/<run_id>/``, complete or not at all (module docstring), locked by this
        process. ``references``: rows, or a JSONL file to move in. A taken id is an
        :class:`InputError`, or with ``unique=True`` gets the first free suffix ``-2``, ``-3`` …
        (``manifest.run_id`` is updated)."""
        base = Path(root)
        base.mkdir(parents=True, exist_ok=True)
        _remove_leftovers(base)
        staging = Path(tempfile.mkdtemp(dir=base, prefix=STAGING_PREFIX))
        store = cls(staging, manifest)
        try:
            store._lock = RunLock.acquire(staging, manifest.started_at)
            store.save_manifest()
            if isinstance(references, Path):
                shutil.move(references, staging / REFERENCES)
            else:
                write_jsonl(staging / REFERENCES, references, durable=True)
            (staging / SAMPLES).touch()
            store.directory = _publish(staging, base, manifest, store, unique)
        except BaseException:
            store.release()
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return store

    @classmethod
    def open(cls, directory: str | Path, *, read_only: bool = False) -> RunStore:
        """Open an existing run directory. For writing, this process takes the run's lock (an
        :class:`InputError` names the process holding it), a torn last sample line is cut off
        and stray temporary files are removed; read-only, nothing is written and a torn line is
        skipped when reading. An unreadable file is an :class:`InputError`."""
        path = Path(directory)
        manifest_path = path / MANIFEST
        if not manifest_path.is_file():
            raise InputError.at(str(path), None, None, f"not a run directory (no {MANIFEST})")
        lock = None if read_only else RunLock.acquire(path, now())
        try:
            try:
                manifest = RunManifest.model_validate_json(manifest_path.read_text(encoding="utf-8"))
            except (ValidationError, ValueError) as exc:
                raise InputError.at(str(manifest_path), None, None, f"unreadable manifest: {exc}") from None
            except PermissionError:
                raise InputError.at(str(manifest_path), None, None, "permission denied") from None
            store = cls(path, manifest, read_only)
            store._lock = lock
            if not read_only:
                store._repair_torn_tail()
                for stray in path.glob(".*.tmp"):  # an atomic write whose process was killed
                    stray.unlink(missing_ok=True)
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        return store

    def release(self) -> None:
        """Close the samples file and free the run's lock (the process's end frees it too)."""
        self.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def holder(self) -> dict[str, Any] | None:
        """The live process holding this run's lock (``{"pid", "host", "since"}``), or None."""
        return lock_holder(self.directory)

    def shown_status(self) -> str:
        """The status as lists show it: a ``running`` run whose process is gone (killed) and an
        ``interrupted`` one are ``interrupted (resumable)``; a live one names its process."""
        status = self.manifest.status
        if status == "running":
            holder = self.holder()
            if holder is not None:
                return f"running (pid {holder.get('pid', '?')})"
            return "interrupted (resumable)"
        if status == "interrupted":
            return "interrupted (resumable)"
        return status

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
        """Write the manifest atomically and durably."""
        self._writable()
        write_json(self.directory / MANIFEST, self.manifest.model_dump(), durable=True)

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

    def sample_index(self) -> dict[int, dict[str, int]]:
        """Where the authoritative (latest) line of every finished sample starts in
        ``samples.jsonl``: ``{repeat: {id: byte offset}}``, read with :meth:`read_sample`.
        Only the id and repeat of each line are decoded, so a million samples cost an index,
        not their outputs."""
        index: dict[int, dict[str, int]] = {}
        for item_id, repeat, offset, _line in self._sample_lines():
            index.setdefault(repeat, {})[item_id] = offset
        return index

    @contextlib.contextmanager
    def sample_reader(self) -> Iterator[Callable[[int], SampleRecord]]:
        """A function reading the sample record whose line starts at a byte offset (from
        :meth:`sample_index`), on one open file."""
        path = self.directory / SAMPLES
        with open(path, "rb") as handle:

            def read(offset: int) -> SampleRecord:
                handle.seek(offset)
                return _sample_record(handle.readline(), path, offset)

            yield read

    def finished_keys(self) -> set[tuple[str, int]]:
        """The (id, repeat) of the samples whose latest line holds an answer (no error)."""
        latest: dict[tuple[str, int], bool] = {}
        path = self.directory / SAMPLES
        for item_id, repeat, offset, line in self._sample_lines():
            ok = _NO_ERROR in line or (_ERROR_FIELD not in line and _sample_record(line, path, offset).error is None)
            latest[(item_id, repeat)] = ok
        return {key for key, ok in latest.items() if ok}

    def _sample_lines(self) -> Iterator[tuple[str, int, int, bytes]]:
        """(id, repeat, byte offset, line) of every complete line of ``samples.jsonl``."""
        path = self.directory / SAMPLES
        if not path.exists():
            return
        offset = 0
        with open(path, "rb") as handle:
            for line in handle:
                start, offset = offset, offset + len(line)
                if not line.endswith(b"\n"):  # a torn last line (read-only stores only)
                    break
                if not line.strip():
                    continue
                found = _KEY.match(line)
                if found is not None:
                    item_id, repeat = json.loads(found[1]), int(found[2])
                else:
                    record = _sample_record(line, path, start)
                    item_id, repeat = record.id, record.repeat
                yield item_id, repeat, start, line

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
        """Write ``items.jsonl`` then ``scores.json`` (atomically and durably each)."""
        self.write_items(items)
        self.write_scores(scores)

    def write_items(self, items: Iterable[dict[str, Any]]) -> None:
        """Write ``items.jsonl`` (atomically and durably; ``items`` is read as it is written)."""
        self._writable()
        write_jsonl(self.directory / ITEMS, items, durable=True)

    def write_scores(self, scores: dict[str, Any]) -> None:
        """Write ``scores.json`` (atomically and durably)."""
        self._writable()
        write_json(self.directory / SCORES, scores, durable=True)

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


#: the start of a sample line as :meth:`RunStore.append` writes it: the id and repeat fields
_KEY = re.compile(rb'\{"id": ("(?:[^"\\]|\\.)*"), "repeat": (\d+),')
#: an answered sample's line holds this (quotes inside strings are escaped in JSON, so no
#: output can contain it); other lines are decoded to be sure
_NO_ERROR = b', "error": null, "error_kind": '
_ERROR_FIELD = b'"error": "'


def _sample_record(line: bytes, path: Path, offset: int) -> SampleRecord:
    """One decoded sample line; a bad one is an :class:`InputError` naming its line number."""
    try:
        return SampleRecord.model_validate_json(line)
    except ValidationError as exc:
        with open(path, "rb") as handle:
            number = handle.read(offset).count(b"\n") + 1
        error = exc.errors()[0]
        message = error["msg"] if error["type"].startswith("json") else f"not a sample record: {error['msg']}"
        raise InputError.at(str(path), number, None, message) from None


def _publish(staging: Path, root: Path, manifest: RunManifest, store: RunStore, unique: bool) -> Path:
    """Rename the staging folder to ``root/<run_id>`` (or, ``unique``, the first free
    ``<run_id>-N``): a rename onto an existing run fails, so two processes never share an id."""
    base, number = manifest.run_id, 1
    while True:
        target = root / manifest.run_id
        if not target.exists():
            try:
                os.rename(staging, target)
                fsync_folder(root)
                return target
            except OSError:  # created meanwhile by another process (ENOTEMPTY, EEXIST)
                if not target.exists():
                    raise
        if not unique:
            raise InputError.at(str(target), None, None, "a run with this id exists already")
        number += 1
        manifest.run_id = f"{base}-{number}"
        store.save_manifest()


def _remove_leftovers(root: Path) -> None:
    """Remove what killed processes left in ``root``: staging folders (unlocked and old) and
    spooled reference files (``.references-<pid>-….jsonl.spool`` of a process that is gone)."""
    for folder in root.glob(f"{STAGING_PREFIX}*"):
        try:
            old = time.time() - folder.stat().st_mtime > STALE_STAGING_S
        except FileNotFoundError:
            continue
        if old and folder.is_dir() and lock_holder(folder) is None:
            shutil.rmtree(folder, ignore_errors=True)
    for spool in root.glob(f"{SPOOL_PREFIX}*{SPOOL_SUFFIX}"):
        pid = spool.name.split("-")[1]
        if pid.isdigit() and not _alive(int(pid)):
            spool.unlink(missing_ok=True)


def new_spool(folder: str | Path | None) -> tuple[int, Path]:
    """A new spool file (open descriptor, path) in ``folder`` when it exists, else in the
    system's temporary folder; named so that :meth:`RunStore.create` removes it once its
    process is gone."""
    directory = Path(folder) if folder is not None and Path(folder).is_dir() else Path(tempfile.gettempdir())
    fd, name = tempfile.mkstemp(dir=directory, prefix=f"{SPOOL_PREFIX}{os.getpid()}-", suffix=SPOOL_SUFFIX)
    return fd, Path(name)


def _alive(pid: int) -> bool:
    """True when a process ``pid`` exists (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


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
