"""The response cache: SQLite in WAL mode under the user cache directory.

The key (:func:`cache_key`) is the sha256 of a canonical JSON of everything that can change a
response: the backend identity (backend, model, model file hash, adapter …), the full
messages, every generation parameter, the sample id, the repeat index and the prompt-template
version and hash. A cached response is therefore never served for different parameters.

Writes are batched (committed every ``commit_every`` puts and on :meth:`ResponseCache.flush`
/ close); a crash loses at most the uncommitted tail, which only costs a repeated request —
run files, not the cache, are the record of a run.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from verimod.core.paths import cache_dir
from verimod.models.base import ModelRequest, ModelResponse

SCHEMA_VERSION = 1


def cache_key(identity: dict[str, Any], request: ModelRequest, prompt_version: str) -> str:
    """sha256 hex of the canonical JSON of identity, messages, params, sample id, repeat, labels,
    input text (and input pair when set), prompt."""
    payload = {
        "identity": identity,
        "messages": [m.model_dump() for m in request.messages],
        "params": request.params.model_dump(),
        "sample_id": request.sample_id,
        "repeat": request.repeat,
        "labels": request.labels,
        "input_text": request.input_text,
        "prompt": prompt_version,
    }
    if request.input_pair is not None:  # only when set, so earlier keys stay valid
        payload["input_pair"] = list(request.input_pair)
    canonical = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _enable_wal(db: sqlite3.Connection, wait_s: float = 30.0, pause_s: float = 0.05) -> None:
    """``PRAGMA journal_mode=WAL``, retried for up to ``wait_s`` while SQLite answers "database is
    locked": switching the journal mode needs the file to itself, and SQLite can report it busy
    at once, without its busy timeout, while other connections (the concurrent cells of a sweep)
    open or write the same cache."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(pause_s)


class ResponseCache:
    """A persistent map from :func:`cache_key` to :class:`ModelResponse`."""

    def __init__(self, path: str | Path | None = None, commit_every: int = 64) -> None:
        self.path = Path(path) if path is not None else cache_dir() / "responses.sqlite3"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        _enable_wal(self._db)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, response TEXT NOT NULL, "
            "backend TEXT, model TEXT, created REAL NOT NULL)"
        )
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        self._pending = 0
        self._commit_every = commit_every
        self._in_transaction = False

    def get(self, key: str) -> ModelResponse | None:
        """The cached response for ``key``, or None."""
        row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else ModelResponse.model_validate_json(row[0])

    def put(self, key: str, response: ModelResponse, identity: dict[str, Any]) -> None:
        """Store a response (committed in batches)."""
        if not self._in_transaction:
            self._db.execute("BEGIN")
            self._in_transaction = True
        self._db.execute(
            "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
            (key, response.model_dump_json(), identity.get("backend"), identity.get("model"), time.time()),
        )
        self._pending += 1
        if self._pending >= self._commit_every:
            self.flush()

    def flush(self) -> None:
        """Commit pending writes."""
        if self._in_transaction:
            self._db.execute("COMMIT")
            self._in_transaction = False
        self._pending = 0

    def info(self) -> dict[str, Any]:
        """Location, size on disk and entry counts per backend and model."""
        self.flush()
        rows = self._db.execute(
            "SELECT backend, model, COUNT(*) FROM responses GROUP BY backend, model ORDER BY 3 DESC"
        ).fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return {
            "path": str(self.path),
            "bytes": size,
            "entries": sum(r[2] for r in rows),
            "by_model": [{"backend": r[0], "model": r[1], "entries": r[2]} for r in rows],
        }

    def clear(self, model: str | None = None) -> int:
        """Delete every entry (or those of one model); return how many were deleted."""
        self.flush()
        if model is None:
            deleted = self._db.execute("DELETE FROM responses").rowcount
        else:
            deleted = self._db.execute("DELETE FROM responses WHERE model = ?", (model,)).rowcount
        self._db.execute("VACUUM")
        return int(deleted)

    def close(self) -> None:
        """Commit and close."""
        self.flush()
        self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
