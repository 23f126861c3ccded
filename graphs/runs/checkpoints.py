"""Per-item LangGraph checkpoints: a killed item resumes after its last finished model call.

One SQLite file per workspace (LangGraph's own tables, `Checkpoints`); each item of
a run is a thread named after the run, problem and attempt. Every finished
node, every finished branch of a fan-out and every turn of a conversation
(`graphs.blocks.turns`) is written before the graph moves on, so a resumed item repeats
no call that had returned, cached or not, however the process was stopped (not
a power loss: see `SYNCHRONOUS`). A thread is deleted once its item is in the
results store.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from datasets_io.records import CallTrace
from datasets_io.sqlite_errors import CHECKPOINTS, SQLiteFileError

T = TypeVar("T")
CHECKPOINTS_FILE = "checkpoints.sqlite"
STATE_RECORDS = [("datasets_io.records", "CallTrace"), ("datasets_io.records", "AnswerParts")]
"""The pydantic records graph state holds, the only classes a checkpoint may rebuild."""


STATE_VERSION = 3
"""Raised when graph state changes shape, so a thread saved by an older toolkit is started afresh
instead of continued with keys its nodes no longer read (2: typed state keys, no `notes`;
3: conversations one checkpointed step per turn, `graphs.blocks.turns`)."""


SYNCHRONOUS = "NORMAL"
"""Under the write-ahead log, NORMAL writes every commit to the file before the graph moves on but
fsyncs only at WAL checkpoints: a finished step survives the process being killed (SIGKILL, what a
resume promises to survive) though not a power loss or an OS crash, which may take the last steps
back; those items then repeat their last calls. FULL, SQLite's default, fsyncs every commit: about
20 per problem, 1-2 ms of CPU per model call on one thread (`benchmarks.profile`)."""


SETUP_RETRY_S = 0.02


def item_thread(run_id: str, problem_key: str, attempt: int) -> str:
    return f"{run_id}/{problem_key}/{attempt}/state-v{STATE_VERSION}"


class BatchedSaver(SqliteSaver):
    """LangGraph's SQLite saver whose operations leave the commit to their caller while `batching`."""

    batching = False

    @contextmanager
    def cursor(self, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        with super().cursor(transaction=transaction and not self.batching) as cursor:
            yield cursor


Outcome = tuple[bool, Any]
"""An operation's result (True, value) or its error (False, exception)."""


class Checkpoints(BaseCheckpointSaver[str]):
    """LangGraph's SQLite saver, its operations done on the file's own thread, those queued together
    in one transaction with one commit.

    LangGraph's async saver (on aiosqlite) went to its thread three or four times per write (a
    cursor, the statement, the commit, closing the cursor), each return a wake-up of the event
    loop: about a tenth of a run's CPU per call (`benchmarks.profile`). Here the sync saver does
    the writes; those that arrive while the thread is busy (a run's items write at once) are done
    together and committed once, and their callers woken together, each after the commit that
    keeps its write. The file and its tables are LangGraph's own.

    Once an operation has failed, every later one fails at once with its error: otherwise each
    write queued behind a failed one tried the file again and, where SQLite answers "busy"
    (another writer, or a full disk's WAL index), waited out the busy timeout in turn, and a run
    that filled its disk hung for minutes.
    """

    def __init__(self, saver: BatchedSaver, thread: ThreadPoolExecutor) -> None:
        super().__init__(serde=saver.serde)
        self.saver = saver
        self.failed: sqlite3.Error | None = None
        self._thread = thread
        self._queue_lock = threading.Lock()
        self._queued: list[tuple[Callable[[], Any], asyncio.Future[Any]]] = []
        self._draining = False

    async def _on_file(self, operation: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        with self._queue_lock:
            self._queued.append((operation, done))
            start, self._draining = not self._draining, True
        if start:
            self._thread.submit(self._drain, loop)
        return await done

    def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the file's thread: what is queued, batch after batch, until nothing is."""
        while True:
            with self._queue_lock:
                batch, self._queued = self._queued, []
                if not batch:
                    self._draining = False
                    return
            outcomes = self._together([operation for operation, _ in batch])
            loop.call_soon_threadsafe(_settle, [done for _, done in batch], outcomes)

    def _together(self, operations: list[Callable[[], Any]]) -> list[Outcome]:
        """Each operation in turn in one transaction, then its commit: a write's outcome is its
        error unless the commit kept it."""
        self.saver.batching = True
        try:
            outcomes = [self._outcome(operation) for operation in operations]
        finally:
            self.saver.batching = False
        if any(ok for ok, _ in outcomes):
            try:
                self.saver.conn.commit()
            except sqlite3.Error as error:  # nothing of the batch was kept
                self.failed = self.failed or error
                return [(False, self.failed)] * len(outcomes)
        return outcomes

    def _outcome(self, operation: Callable[[], Any]) -> Outcome:
        if self.failed is not None:
            return False, self.failed
        try:
            return True, operation()
        except sqlite3.Error as error:
            self.failed = error
            return False, error
        except Exception as error:  # the caller's to raise (a state that cannot be written)
            return False, error

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._on_file(lambda: self.saver.get_tuple(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = self.saver.list
        listed = await self._on_file(lambda: list(found(config, filter=filter, before=before, limit=limit)))
        for item in listed:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self._on_file(lambda: self.saver.put(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await self._on_file(lambda: self.saver.put_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._on_file(lambda: self.saver.delete_thread(thread_id))

    def get_next_version(self, current: str | None, channel: None) -> str:
        return self.saver.get_next_version(current, channel)


def _settle(waiting: list[asyncio.Future[Any]], outcomes: list[Outcome]) -> None:
    """On the event loop: each caller of a batch woken with its outcome (unless it stopped waiting)."""
    for done, (ok, value) in zip(waiting, outcomes, strict=True):
        if done.cancelled():
            continue
        if ok:
            done.set_result(value)
        else:
            done.set_exception(value)


def _connected(path: Path, busy_timeout_s: float) -> BatchedSaver:
    """The saver on its file (tables made, write-ahead log on), from the file's own thread.

    Processes opening one new file at once (a run's Ray workers) race to switch it to the
    write-ahead log, and SQLite refuses the losers at once, without its busy wait: "database is
    locked" in 7 of 30 trials of four openers. Each tries again until `busy_timeout_s` has passed."""
    connection = sqlite3.connect(path, timeout=busy_timeout_s, check_same_thread=False)
    saver = BatchedSaver(connection, serde=JsonPlusSerializer(allowed_msgpack_modules=STATE_RECORDS))
    deadline = time.monotonic() + busy_timeout_s
    try:
        while True:
            try:
                saver.setup()  # write-ahead log
                break
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(SETUP_RETRY_S)
        connection.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
    except sqlite3.Error:
        connection.close()
        raise
    return saver


@asynccontextmanager
async def open_checkpoints(home: Path, busy_timeout_s: float = 5.0) -> AsyncIterator[Checkpoints]:
    """The workspace's checkpointer, open for the life of one run. A fault of its file (full disk,
    corrupt, locked past `busy_timeout_s`, read-only), met on opening or by any checkpoint read or
    write in the block, is one `SQLiteFileError` naming it: the toolkit's other SQLite files raise
    their own, so a bare SQLite error here is the checkpointer's."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / CHECKPOINTS_FILE
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoints") as thread:
        try:
            saver = await loop.run_in_executor(thread, _connected, path, busy_timeout_s)
            try:
                yield Checkpoints(saver, thread)
            finally:
                await loop.run_in_executor(thread, saver.conn.close)
        except sqlite3.Error as error:
            raise SQLiteFileError(CHECKPOINTS, path, error) from None


async def run_threads(checkpoints: Checkpoints, run_id: str) -> set[str]:
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


async def checkpointed_trace(checkpoints: Checkpoints, strategy: str, thread: str) -> list[CallTrace]:
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
