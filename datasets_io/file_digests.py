"""Files' SHA-256 kept in the workspace by path and stat, so a run's data fingerprint reads only
the images that changed since a session last hashed them.

Every session fingerprints every image of its run (`graphs.runs.provenance`): at 5,000 problems,
70,000 files read and hashed, 1.1-7.8 s here as the machine's load moved, each run and each
resume. A digest is used again while the file's size, mtime, ctime and inode are those it was hashed
at, as git's index trusts its stat data: an edit changes the mtime and ctime, a copy over it or a
rename onto it the ctime or inode.
The file is a cache: any SQLite fault leaves every file read and hashed, as without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

DIGESTS_FILE = "digests.sqlite"
"""The workspace file the digests are kept in."""
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS digests (path TEXT PRIMARY KEY, stat TEXT NOT NULL, sha256 BLOB NOT NULL)"
)


class FileDigests:
    """SHA-256 digests of files, from the kept ones where a file is unchanged; what was hashed anew
    is kept when the block of `opened` ends. One thread uses it (a fingerprint's worker)."""

    def __init__(self, connection: sqlite3.Connection | None) -> None:
        self._connection = connection
        self._hashed: list[tuple[str, str, bytes]] = []
        self.read = 0
        """Files read and hashed (not found kept, or changed since)."""

    def sha256s(self, paths: Sequence[Path]) -> list[bytes]:
        """The digest of each file's bytes, looked up together (a problem's panels: one query for
        14 files, not 14); of `unreadable: REASON` where one cannot be read (the item that needs it
        fails with its own named error), which is never kept."""
        names = [os.fspath(path) for path in paths]
        kept = self._kept(names)
        return [self._digest(name, kept.get(name)) for name in names]

    def _digest(self, name: str, kept: tuple[str, bytes] | None) -> bytes:
        try:
            status = os.stat(name)
        except OSError as error:
            return _unreadable(error)
        stat = f"{status.st_size} {status.st_mtime_ns} {status.st_ctime_ns} {status.st_ino}"
        if kept is not None and kept[0] == stat:
            return kept[1]
        try:
            with open(name, "rb") as file:
                data = file.read()
        except OSError as error:
            return _unreadable(error)
        self.read += 1
        digest = hashlib.sha256(data).digest()
        self._hashed.append((name, stat, digest))
        return digest

    def _kept(self, names: list[str]) -> dict[str, tuple[str, bytes]]:
        if self._connection is None:
            return {}
        try:
            rows = self._connection.execute(
                "SELECT path, stat, sha256 FROM digests WHERE path IN (SELECT value FROM json_each(?))",
                (json.dumps(names),),
            ).fetchall()
        except sqlite3.Error:
            self._connection = None  # unreadable: every file is read, as without a cache
            return {}
        return {str(name): (str(stat), bytes(digest)) for name, stat, digest in rows}

    def keep(self) -> None:
        """Write what was hashed anew (done by `opened` as its block ends)."""
        if self._connection is None or not self._hashed:
            return
        with contextlib.suppress(sqlite3.Error), self._connection:  # a cache: unwritten, read again next time
            self._connection.executemany("INSERT OR REPLACE INTO digests VALUES (?, ?, ?)", self._hashed)


def _unreadable(error: OSError) -> bytes:
    return hashlib.sha256(f"unreadable: {error.strerror}".encode()).digest()


@contextlib.contextmanager
def opened(path: Path | None) -> Iterator[FileDigests]:
    """The digests kept at `path` (None: none kept, every file read), the new ones kept at the end."""
    connection = None
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(path, timeout=5)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(SCHEMA)
        except (OSError, sqlite3.Error):
            if connection is not None:
                connection.close()
            connection = None
    digests = FileDigests(connection)
    try:
        yield digests
        digests.keep()
    finally:
        if connection is not None:
            connection.close()
