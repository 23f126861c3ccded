"""A checkpoint written without an fsync (`PRAGMA synchronous=NORMAL` under the WAL) survives SIGKILL.

A child process saves checkpoints through `open_checkpoints` one after the other and reports each
as saved; it is SIGKILLed mid-stream, its connection open and its last commits in the WAL alone,
and every checkpoint it reported is read back from the files it left.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from graphs.runs.checkpoints import open_checkpoints

WRITER = """
import asyncio, sys
from pathlib import Path
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from graphs.runs.checkpoints import open_checkpoints

async def main() -> None:
    async with open_checkpoints(Path(sys.argv[1])) as saver:
        for pragma in ("journal_mode", "synchronous"):
            mode = saver.saver.conn.execute(f"PRAGMA {pragma}").fetchone()
            print(pragma, mode[0], flush=True)
        for number in range(10_000):
            config = RunnableConfig(configurable={"thread_id": f"t{number}", "checkpoint_ns": ""})
            await saver.aput(config, empty_checkpoint(), {"step": number}, {})
            print("saved", number, flush=True)

asyncio.run(main())
"""


async def thread_steps(home: Path, count: int) -> list[int]:
    async with open_checkpoints(home) as saver:
        found = []
        for number in range(count):
            config = RunnableConfig(configurable={"thread_id": f"t{number}", "checkpoint_ns": ""})
            if (saved := await saver.aget_tuple(config)) is not None:
                found.append(saved.metadata["step"])
        return found


def test_checkpoints_reported_saved_survive_a_sigkill(tmp_path: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    assert writer.stdout.readline().split() == ["journal_mode", "wal"]
    assert writer.stdout.readline().split() == ["synchronous", "1"]  # NORMAL: no fsync per commit
    saved = 0
    while saved < 200:
        saved = int(writer.stdout.readline().split()[1]) + 1
    writer.send_signal(signal.SIGKILL)
    reported = saved + sum(line.startswith("saved") for line in writer.stdout)
    writer.wait()
    assert (tmp_path / "checkpoints.sqlite-wal").stat().st_size > 0
    assert asyncio.run(thread_steps(tmp_path, reported)) == list(range(reported))


def test_a_write_and_its_commit_are_one_trip_to_the_files_thread(tmp_path: Path) -> None:
    """Each trip to the file's thread wakes the event loop on its return: LangGraph's async saver
    took three or four per write (cursor, statement, commit, close), about a tenth of a run's CPU."""

    async def trips_and_statements() -> tuple[int, list[tuple[str, str]]]:
        async with open_checkpoints(tmp_path) as saver:
            statements: list[tuple[str, str]] = []
            saver.saver.conn.set_trace_callback(
                lambda sql: statements.append((threading.current_thread().name, sql.split()[0].upper()))
            )
            submitted = saver._thread.submit  # the file's one thread
            trips = 0

            def counted(*args: Any, **kwargs: Any) -> Any:
                nonlocal trips
                trips += 1
                return submitted(*args, **kwargs)

            saver._thread.submit = counted  # type: ignore[method-assign]
            config = RunnableConfig(configurable={"thread_id": "t", "checkpoint_ns": ""})
            saved = await saver.aput(config, empty_checkpoint(), {"step": 1}, {})
            await saver.aput_writes(saved, [("trace", ["a call"]), ("answer", "LEFT")], "task-1")
            return trips, statements

    trips, statements = asyncio.run(trips_and_statements())
    assert trips <= 2  # one each, or one for both where the second came while the thread was busy
    assert {verb for _, verb in statements} == {"BEGIN", "INSERT", "COMMIT"}
    assert all(name.startswith("checkpoints") for name, _ in statements)


def test_writes_that_arrive_together_share_one_commit_and_are_all_kept(tmp_path: Path) -> None:
    """A run's items write at once: those queued while the file's thread is busy are done in one
    transaction and committed once (a commit per write was a third of the checkpointer's CPU), and
    each caller is answered only after the commit that keeps its write."""

    async def written(count: int) -> tuple[list[str], int]:
        async with open_checkpoints(tmp_path) as saver:
            verbs: list[str] = []
            saver.saver.conn.set_trace_callback(lambda sql: verbs.append(sql.split()[0].upper()))

            async def one(number: int) -> None:
                config = RunnableConfig(configurable={"thread_id": f"t{number}", "checkpoint_ns": ""})
                saved = await saver.aput(config, empty_checkpoint(), {"step": number}, {})
                assert verbs.count("COMMIT") >= 1  # answered after a commit
                await saver.aput_writes(saved, [("answer", f"LEFT {number}")], f"task-{number}")

            await asyncio.gather(*(one(number) for number in range(count)))
            return verbs, verbs.count("INSERT")

    verbs, inserts = asyncio.run(written(32))
    assert inserts == 64
    assert verbs.count("COMMIT") < 16, verbs
    assert asyncio.run(thread_steps(tmp_path, 32)) == list(range(32))


CONCURRENT_WRITER = """
import asyncio, sys
from pathlib import Path
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from graphs.runs.checkpoints import open_checkpoints

async def main() -> None:
    async with open_checkpoints(Path(sys.argv[1])) as saver:
        async def one(number: int) -> None:
            config = RunnableConfig(configurable={"thread_id": f"t{number}", "checkpoint_ns": ""})
            await saver.aput(config, empty_checkpoint(), {"step": number}, {})
            print("saved", number, flush=True)

        for start in range(0, 100_000, 32):
            await asyncio.gather(*(one(number) for number in range(start, start + 32)))

asyncio.run(main())
"""


def test_checkpoints_saved_together_and_reported_survive_a_sigkill(tmp_path: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", CONCURRENT_WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    reported: set[int] = set()
    while len(reported) < 500:
        reported.add(int(writer.stdout.readline().split()[1]))
    writer.send_signal(signal.SIGKILL)
    reported |= {int(words[1]) for line in writer.stdout if len(words := line.split()) == 2}
    writer.wait()
    found = set(asyncio.run(thread_steps(tmp_path, max(reported) + 1)))
    assert reported <= found


def open_at_once(home: str, start: Any) -> str:
    """Open the checkpoints in `home` as soon as every opener is ready; what came of it."""

    async def opened() -> None:
        async with open_checkpoints(Path(home)):
            pass

    start.wait()
    try:
        asyncio.run(opened())
    except Exception as error:  # what each opener met is the finding
        return f"{type(error).__name__}: {error}"
    return "opened"


def test_workers_opening_a_new_checkpoints_file_at_once_all_open_it(tmp_path: Path) -> None:
    """A run's Ray workers open the workspace's checkpoints together; SQLite refuses all but one
    switch of a new file to the write-ahead log without waiting (4 openers: 7 of 30 rounds failed)."""
    openers, rounds = 4, 15
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(openers) as pool:
        for round_ in range(rounds):
            start = manager.Barrier(openers)
            home = str(tmp_path / f"round-{round_}")
            assert pool.starmap(open_at_once, [(home, start)] * openers) == ["opened"] * openers
