"""Where a workspace keeps the batches it submitted: each batch's id and the custom ids of its
requests, written before anyone waits for it.

A run killed while its batches are in progress is resumed by the usual command: a call whose custom
id is in a batch kept here waits for that batch and takes its result, so no request goes out twice;
a call its batch did not answer goes in a new one. A custom id names the run, the problem and the
attempt a call belongs to (`BatchScope`) besides its body, so a later run's calls are never answered
from an earlier run's batch. One SQLite file beside the response cache, each write one transaction.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import time
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

LEDGER_FILE = "batches.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY,
    base_url TEXT NOT NULL,
    submitted_at REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'submitted'
);
CREATE TABLE IF NOT EXISTS batch_requests (
    custom_id TEXT NOT NULL,
    batch_id TEXT NOT NULL REFERENCES batches(id),
    PRIMARY KEY (custom_id, batch_id)
);
"""
ENDED = ("failed", "cancelled", "expired")
"""Statuses of a batch that will answer none of its requests (again): its calls go in a new one."""


@dataclass(frozen=True)
class BatchScope:
    """The item a call belongs to, and where its workspace keeps its batches."""

    ledger: Path
    item: str
    """`RUN/PROBLEM/ATTEMPT`."""


BATCH_SCOPE: ContextVar[BatchScope | None] = ContextVar("batch_scope", default=None)
"""Set by the runner for each item it solves; the batching transport reads it (None: a call of no
run, as `bongard ask` makes, is batched but not kept)."""


class BatchLedger:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)

    def record(self, batch_id: str, base_url: str, custom_ids: Sequence[str]) -> None:
        """A batch just submitted, with its requests' custom ids."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute(
                "INSERT OR IGNORE INTO batches (id, base_url, submitted_at) VALUES (?, ?, ?)",
                (batch_id, base_url, time.time()),
            )
            self._db.executemany(
                "INSERT OR IGNORE INTO batch_requests (custom_id, batch_id) VALUES (?, ?)",
                [(cid, batch_id) for cid in custom_ids],
            )
            self._db.execute("COMMIT")

    def ended(self, batch_id: str, status: str) -> None:
        with self._lock:
            self._db.execute("UPDATE batches SET status = ? WHERE id = ?", (status, batch_id))

    def statuses(self) -> dict[str, str]:
        """Each kept batch's last known status (`submitted` while no process has seen it end)."""
        with self._lock:
            return dict(self._db.execute("SELECT id, status FROM batches ORDER BY submitted_at").fetchall())

    def batch_of(self, custom_id: str, base_url: str) -> str | None:
        """The latest batch holding this request at this endpoint that may still answer it."""
        marks = ", ".join("?" * len(ENDED))
        with self._lock:
            row = self._db.execute(
                "SELECT b.id FROM batch_requests r JOIN batches b ON b.id = r.batch_id "
                f"WHERE r.custom_id = ? AND b.base_url = ? AND b.status NOT IN ({marks}) "
                "ORDER BY b.submitted_at DESC LIMIT 1",
                (custom_id, base_url, *ENDED),
            ).fetchone()
        return None if row is None else str(row[0])


@functools.cache
def ledger_at(path: Path) -> BatchLedger:
    """The process's ledger of a workspace, opened once."""
    return BatchLedger(path)
