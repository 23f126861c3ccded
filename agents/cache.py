"""The response cache: SQLite in WAL mode, one row per deterministic request.

Only deterministic requests are cached (temperature 0 or a fixed seed, or an
agent that is deterministic by nature), only successful replies are stored,
and every write is one transaction, so a process killed mid-write leaves a
readable cache that simply lacks that row. A fault of the file (full disk, corrupt,
locked, read-only) is a `SQLiteFileError` naming it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from datasets_io.sqlite_errors import CACHE, SQLiteFileError, reading_uri

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    created_at REAL NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0,
    reply TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_agent ON responses (agent);
"""


def cache_key(payload: dict[str, Any]) -> str:
    """A digest of everything that determines a reply (canonical JSON, SHA-256)."""
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CacheStats:
    path: Path
    entries: int
    hits: int
    size_bytes: int
    by_agent: dict[str, int]


@runtime_checkable
class ReplyCache(Protocol):
    """What an agent reads and writes replies through: a `ResponseCache` file in this process, or
    the one a Ray run's cache actor holds for every worker (`graphs.cluster.services`)."""

    async def aget(self, key: str) -> dict[str, Any] | None: ...

    async def aput(self, key: str, agent: str, reply: dict[str, Any]) -> None: ...


class ResponseCache:
    def __init__(self, path: Path, *, read_only: bool = False, busy_timeout_s: float = 30.0) -> None:
        """Open (creating) the cache; `read_only` opens it only to read (`cache stats`), so a cache in
        a folder no one can write is still read: without the lock files WAL mode writes beside it, as
        nothing can be writing it there."""
        self.path = path
        self._lock = threading.Lock()
        with self._failing():
            if read_only:
                self._connection = sqlite3.connect(
                    reading_uri(path), uri=True, check_same_thread=False, isolation_level=None
                )
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            self._connection = sqlite3.connect(
                path, check_same_thread=False, timeout=busy_timeout_s, isolation_level=None
            )
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=NORMAL")
            self._connection.executescript(SCHEMA)

    @contextmanager
    def _failing(self) -> Iterator[None]:
        """Any fault of the file as one error naming it; SQLite has rolled the statement back."""
        try:
            yield
        except (sqlite3.Error, OSError) as error:
            raise SQLiteFileError(CACHE, self.path, error) from None

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock, self._failing():
            row = self._connection.execute("SELECT reply FROM responses WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            self._connection.execute("UPDATE responses SET hits = hits + 1 WHERE key = ?", (key,))
        reply: dict[str, Any] = json.loads(row[0])
        return reply

    def put(self, key: str, agent: str, reply: dict[str, Any]) -> None:
        with self._lock, self._failing():
            self._connection.execute(
                "INSERT OR REPLACE INTO responses (key, agent, created_at, reply) VALUES (?, ?, ?, ?)",
                (key, agent, time.time(), json.dumps(reply, ensure_ascii=False)),
            )

    async def aget(self, key: str) -> dict[str, Any] | None:
        """`get`, as a `ReplyCache`: a local file answers at once, so in the caller's loop."""
        return self.get(key)

    async def aput(self, key: str, agent: str, reply: dict[str, Any]) -> None:
        self.put(key, agent, reply)

    def stats(self) -> CacheStats:
        with self._lock, self._failing():
            entries, hits = self._connection.execute(
                "SELECT COUNT(*), COALESCE(SUM(hits), 0) FROM responses"
            ).fetchone()
            by_agent = dict(
                self._connection.execute(
                    "SELECT agent, COUNT(*) FROM responses GROUP BY agent ORDER BY agent"
                ).fetchall()
            )
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return CacheStats(self.path, entries, hits, size, by_agent)

    def clear(self, agent: str | None = None) -> int:
        """Delete every entry (or one agent's); returns how many went."""
        with self._lock, self._failing():
            if agent is None:
                cursor = self._connection.execute("DELETE FROM responses")
            else:
                cursor = self._connection.execute("DELETE FROM responses WHERE agent = ?", (agent,))
            self._connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return cursor.rowcount

    def close(self) -> None:
        with self._lock:
            self._connection.close()
