"""Per-item LangGraph checkpoints: a killed item resumes after its last finished model call.

One SQLite file per workspace (LangGraph's own `AsyncSqliteSaver`); each item of
a run is a thread named after the run, problem and attempt. Every finished
node, and every finished branch of a fan-out, is written before the graph moves
on, so a resumed item repeats no call that had returned, cached or not. A
thread is deleted once its item is in the results store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

CHECKPOINTS_FILE = "checkpoints.sqlite"


def item_thread(run_id: str, problem_key: str, attempt: int) -> str:
    return f"{run_id}/{problem_key}/{attempt}"


@asynccontextmanager
async def open_checkpoints(home: Path) -> AsyncIterator[AsyncSqliteSaver]:
    """The workspace's checkpointer, open for the life of one run."""
    home.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(home / CHECKPOINTS_FILE)) as saver:
        await saver.setup()
        yield saver
