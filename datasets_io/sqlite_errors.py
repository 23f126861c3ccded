"""One error for every SQLite file the toolkit owns: the results store, the response cache, the checkpoints.

A full disk, a file that is not SQLite or is damaged, a write lock another process holds too long and
a read-only folder each end in one line that names the file, says what happened and what to do, never
a traceback. Nothing repairs or rewrites the file: SQLite rolls the failed transaction back, so what
was saved before stays as it was.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from datasets_io.errors import BongardError

Cause = Literal["locked", "full", "corrupt", "read-only", "other"]


@dataclass(frozen=True)
class OwnedFile:
    """A kind of SQLite file: its name in messages, and what is safe or to be done after each fault."""

    name: str
    noun: str
    """The file in a phrase: "a readable SQLite {noun}"."""
    kept: str
    """What a full disk leaves intact and how to go on."""
    if_corrupt: str
    """What to do with a file that cannot be read."""


STORE = OwnedFile(
    "results store",
    "store",
    kept="the items saved so far are intact: free space, then resume the run",
    if_corrupt="move it aside or use --home",
)
CACHE = OwnedFile(
    "response cache",
    "cache",
    kept="the replies cached so far are intact: free space, then run the command again",
    if_corrupt="move it aside or delete it (it only spares repeated requests; a new one is made)",
)
LEARNED = OwnedFile(
    "learned model rules",
    "rules file",
    kept="the rules learned so far are intact: free space, then run the command again",
    if_corrupt="move it aside or delete it (each model's refusals are learned again on its next run)",
)
CHECKPOINTS = OwnedFile(
    "checkpoints",
    "checkpoint file",
    kept="every call checkpointed so far is intact: free space, then resume the run",
    if_corrupt="move it aside (unfinished items then start again from their first call; stored items "
    "are kept)",
)


def cause_of(error: sqlite3.Error | OSError, path: Path) -> Cause:
    """Which fault an error from opening, reading or writing `path` is (by SQLite's error code)."""
    code = getattr(error, "sqlite_errorname", "")
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return "locked"
    if code == "SQLITE_FULL" or getattr(error, "errno", None) == errno.ENOSPC:
        return "full"
    if code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return "corrupt"
    if code.startswith("SQLITE_READONLY") or not writable(path):
        return "read-only"
    return "other"


def reading_uri(path: Path) -> str:
    """A URI that opens the SQLite file at `path` to read only. Where it cannot be written (a read-only
    mount, an archived workspace) nothing can be writing it either, so it is opened immutable (SQLite
    then needs none of the lock files WAL mode keeps beside it, which it could not create there),
    unless a write-ahead log left beside it holds the latest writes, which immutable would not read:
    then its lock files are there to read it with."""
    wal = path.with_name(f"{path.name}-wal")
    immutable = not writable(path) and not wal.exists()
    return f"{path.resolve().as_uri()}?mode=ro" + ("&immutable=1" if immutable else "")


def writable(path: Path) -> bool:
    """Whether the folder (SQLite writes its journal there) and the file, if there, can be written; a
    read-only mount counts, even for root."""
    return os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))


def require_writable(file: OwnedFile, path: Path) -> None:
    """Refuse now, before anything is sent or paid for, a file a command will have to write."""
    if not writable(path):
        raise SQLiteFileError(file, path, OSError(errno.EROFS, "it cannot be written"))


def advice(file: OwnedFile, cause: Cause) -> str:
    return {
        "locked": "it is locked by another process writing it (another bongard command?); try again when it "
        "ends",
        "full": f"the disk is full; {file.kept}",
        "corrupt": f"it is not a readable SQLite {file.noun} (corrupt?); it was left untouched: "
        f"{file.if_corrupt}",
        "read-only": "it or its folder is read-only: make both writable, or use --home (or BONGARD_HOME) for "
        "a writable workspace",
        "other": "nothing was half-written",
    }[cause]


class SQLiteFileError(BongardError):
    """A SQLite file the toolkit owns cannot be opened, read or written; it was left as it was."""

    def __init__(self, file: OwnedFile, path: Path, error: sqlite3.Error | OSError) -> None:
        self.file, self.path, self.cause = file, path, cause_of(error, path)
        detail = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        super().__init__(f"{file.name} {path}: {detail}: {advice(file, self.cause)}")
