"""Per-item LangGraph checkpoints: a killed item resumes after its last finished model call.

One SQLite file per workspace (LangGraph's own `AsyncSqliteSaver`); each item of
a run is a thread named after the run, problem and attempt. Every finished
node, every finished branch of a fan-out and every turn of a conversation
(`graphs.turns`) is written before the graph moves on, so a resumed item repeats
no call that had returned, cached or not, however the process was stopped (not
a power loss: see `SYNCHRONOUS`). A thread is deleted once its item is in the
results store.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from datasets_io.records import CallTrace
from datasets_io.sqlite_errors import CHECKPOINTS, SQLiteFileError

CHECKPOINTS_FILE = "checkpoints.sqlite"
STATE_RECORDS = [("datasets_io.records", "CallTrace"), ("datasets_io.records", "AnswerParts")]
"""The pydantic records graph state holds, the only classes a checkpoint may rebuild."""


STATE_VERSION = 3
"""Raised when graph state changes shape, so a thread saved by an older toolkit is started afresh
instead of continued with keys its nodes no longer read (2: typed state keys, no `notes`;
3: conversations one checkpointed step per turn, `graphs.turns`)."""


SYNCHRONOUS = "NORMAL"
"""Under the write-ahead log, NORMAL writes every commit to the file before the graph moves on but
fsyncs only at WAL checkpoints: a finished step survives the process being killed (SIGKILL, what a
resume promises to survive) though not a power loss or an OS crash, which may take the last steps
back; those items then repeat their last calls. FULL, SQLite's default, fsyncs every commit: about
20 per problem, 1-2 ms of CPU per model call on one thread (`benchmarks.profile`)."""


def item_thread(run_id: str, problem_key: str, attempt: int) -> str:
    return f"{run_id}/{problem_key}/{attempt}/state-v{STATE_VERSION}"


class _FailedFileLock(asyncio.Lock):
    """The saver's lock, refusing once the file has failed: what waits on it fails at once."""

    failed: sqlite3.Error | None = None

    async def acquire(self) -> Literal[True]:
        await super().acquire()
        if self.failed is not None:
            self.release()
            raise self.failed
        return True


class _Checkpointer(AsyncSqliteSaver):
    """LangGraph's saver that stops using its file once a write has failed. With its own, every
    write queued behind a failed one tries the file again and, where SQLite answers "busy" (another
    writer, or a full disk's WAL index), waits out the busy timeout in turn: a run that filled its
    disk hung for minutes. Here every call after the first failure fails at once with it."""

    lock: _FailedFileLock

    def __init__(self, connection: aiosqlite.Connection) -> None:
        super().__init__(connection, serde=JsonPlusSerializer(allowed_msgpack_modules=STATE_RECORDS))
        self.lock = _FailedFileLock()

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:  # fmt: skip
        try:
            return await super().aput(config, checkpoint, metadata, new_versions)
        except sqlite3.Error as error:
            self.lock.failed = self.lock.failed or error
            raise

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        try:
            await super().aput_writes(config, writes, task_id, task_path)
        except sqlite3.Error as error:
            self.lock.failed = self.lock.failed or error
            raise


@asynccontextmanager
async def open_checkpoints(home: Path, busy_timeout_s: float = 5.0) -> AsyncIterator[AsyncSqliteSaver]:
    """The workspace's checkpointer, open for the life of one run. A fault of its file (full disk,
    corrupt, locked past `busy_timeout_s`, read-only), met on opening or by any checkpoint read or
    write in the block, is one `SQLiteFileError` naming it: the toolkit's other SQLite files raise
    their own, so a bare SQLite error here is the checkpointer's."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / CHECKPOINTS_FILE
    try:
        async with aiosqlite.connect(str(path), timeout=busy_timeout_s) as connection:
            saver = _Checkpointer(connection)
            await saver.setup()  # write-ahead log
            await connection.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
            yield saver
    except sqlite3.Error as error:
        raise SQLiteFileError(CHECKPOINTS, path, error) from None


async def run_threads(checkpoints: AsyncSqliteSaver, run_id: str) -> set[str]:
    """The threads a run's items hold in the checkpointer."""
    return {
        thread
        async for item in checkpoints.alist(None)
        if (thread := item.config["configurable"]["thread_id"]).startswith(f"{run_id}/")
    }


async def checkpointed_calls(
    home: Path, run_id: str, strategy: str, stored: Collection[tuple[str, int]] = ()
) -> int:
    """Model calls whose results sit in the checkpoints of a run's items not yet in the store.

    An item's thread is deleted just after the item is stored, so a kill in
    between leaves both: the threads of `stored` items are skipped, not counted twice.
    """
    from graphs.solve import compiled

    skipped = {item_thread(run_id, problem, attempt) for problem, attempt in stored}
    async with open_checkpoints(home) as checkpoints:
        graph = compiled(strategy).copy(update={"checkpointer": checkpoints})
        threads = await run_threads(checkpoints, run_id)
        total = 0
        for thread in sorted(threads - skipped):
            state = await graph.aget_state(RunnableConfig(configurable={"thread_id": thread}))
            total += len(state.values.get("trace", []))  # finished branches' writes included
        return total


async def checkpointed_trace(checkpoints: AsyncSqliteSaver, strategy: str, thread: str) -> list[CallTrace]:
    """The calls an item's checkpoint holds: those of its finished nodes and branches."""
    from graphs.solve import compiled

    graph = compiled(strategy).copy(update={"checkpointer": checkpoints})
    state = await graph.aget_state(RunnableConfig(configurable={"thread_id": thread}))
    return list(state.values.get("trace", []))


async def delete_run_threads(home: Path, run_id: str) -> int:
    """Delete the checkpoints a run's unfinished items left; how many there were."""
    if not (home / CHECKPOINTS_FILE).is_file():
        return 0
    async with open_checkpoints(home) as checkpoints:
        threads = await run_threads(checkpoints, run_id)
        for thread in threads:
            await checkpoints.adelete_thread(thread)
    return len(threads)
