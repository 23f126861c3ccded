"""Per-item LangGraph checkpoints: a killed item resumes after its last finished model call.

One SQLite file per workspace (LangGraph's own `AsyncSqliteSaver`); each item of
a run is a thread named after the run, problem and attempt. Every finished
node, and every finished branch of a fan-out, is written before the graph moves
on, so a resumed item repeats no call that had returned, cached or not. A
thread is deleted once its item is in the results store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from datasets_io.records import CallTrace

CHECKPOINTS_FILE = "checkpoints.sqlite"
STATE_RECORDS = [("datasets_io.records", "CallTrace"), ("datasets_io.records", "AnswerParts")]
"""The pydantic records graph state holds, the only classes a checkpoint may rebuild."""


STATE_VERSION = 2
"""Raised when graph state changes shape, so a thread saved by an older toolkit is started afresh
instead of continued with keys its nodes no longer read (2: typed state keys, no `notes`)."""


def item_thread(run_id: str, problem_key: str, attempt: int) -> str:
    return f"{run_id}/{problem_key}/{attempt}/state-v{STATE_VERSION}"


@asynccontextmanager
async def open_checkpoints(home: Path) -> AsyncIterator[AsyncSqliteSaver]:
    """The workspace's checkpointer, open for the life of one run."""
    home.mkdir(parents=True, exist_ok=True)
    async with aiosqlite.connect(str(home / CHECKPOINTS_FILE)) as connection:
        saver = AsyncSqliteSaver(connection, serde=JsonPlusSerializer(allowed_msgpack_modules=STATE_RECORDS))
        await saver.setup()
        yield saver


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
