"""Review decisions in SQLite.

One table, ``decisions(id, item_id, reviewer, verdicts, corrections, notes, created_at)``;
``verdicts`` and ``corrections`` are JSON objects. Every save is one ``INSERT`` in its own
transaction on a connection opened for it (WAL journal, ``busy_timeout`` 10 s), so several
reviewers — several server workers or processes on one file — never lose a write. A reviewer's
current decision on an item is their latest row; earlier rows stay as the history.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verimod.tasks.varm.audit_review import Decision

SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    verdicts TEXT NOT NULL,
    corrections TEXT NOT NULL,
    notes TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS decisions_item ON decisions (item_id, reviewer, id);
"""


class DecisionStore:
    """The decisions of one review database (module docstring)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        try:
            db.execute("PRAGMA busy_timeout = 10000")
            yield db
        finally:
            db.close()

    def save(self, decision: Decision) -> int:
        """Append one decision; returns its row id."""
        row = (
            decision.item_id,
            decision.reviewer,
            json.dumps(decision.verdicts, ensure_ascii=False, sort_keys=True),
            json.dumps(decision.corrections, ensure_ascii=False, sort_keys=True),
            decision.notes,
            datetime.now(UTC).isoformat(timespec="milliseconds"),
        )
        with self._connect() as db:
            cursor = db.execute(
                "INSERT INTO decisions (item_id, reviewer, verdicts, corrections, notes, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                row,
            )
            return int(cursor.lastrowid or 0)

    def _rows(self, query: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._connect() as db:
            db.row_factory = sqlite3.Row
            return list(db.execute(query, params))

    @staticmethod
    def _decision(row: sqlite3.Row) -> Decision:
        return Decision(row["item_id"], row["reviewer"], json.loads(row["verdicts"]),
                        json.loads(row["corrections"]), row["notes"])  # fmt: skip

    def current(self) -> list[Decision]:
        """Every reviewer's latest decision on every item they decided, oldest first."""
        rows = self._rows(
            "SELECT * FROM decisions WHERE id IN (SELECT MAX(id) FROM decisions GROUP BY item_id, reviewer) ORDER BY id"
        )
        return [self._decision(r) for r in rows]

    def latest(self, item_id: str, reviewer: str) -> Decision | None:
        """``reviewer``'s latest decision on ``item_id``."""
        rows = self._rows(
            "SELECT * FROM decisions WHERE item_id = ? AND reviewer = ? ORDER BY id DESC LIMIT 1", (item_id, reviewer)
        )
        return self._decision(rows[0]) if rows else None

    def history(self) -> list[dict[str, Any]]:
        """Every row, oldest first (reviewer and time included)."""
        return [dict(r) for r in self._rows("SELECT * FROM decisions ORDER BY id")]

    def decided_items(self) -> dict[str, set[str]]:
        """Item id → the reviewers who decided it."""
        out: dict[str, set[str]] = {}
        for row in self._rows("SELECT DISTINCT item_id, reviewer FROM decisions"):
            out.setdefault(row["item_id"], set()).add(row["reviewer"])
        return out
