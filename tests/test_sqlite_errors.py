"""Every SQLite file the toolkit owns (results store, response cache, checkpoints) fails the same way:
a file that is not SQLite, a truncated one, a write lock held past the timeout, a full disk and a
read-only workspace each end in one `SQLiteFileError` naming the file and what to do, and the file
is left as it was (issue 18, item 6; before, the cache and the checkpoints ended in tracebacks).

Faults are real files: a full disk is SQLite's own page cap (`PRAGMA max_page_count`), or for a
whole run a 1 MiB tmpfs; a read-only workspace is a read-only bind mount when running as root
(where permissions stop no write), else a folder without write permission.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from agents.cache import ResponseCache
from agents.registry import CACHE_FILE
from datasets_io.sqlite_errors import SQLiteFileError
from graphs.runs.checkpoints import CHECKPOINTS_FILE, open_checkpoints
from results.store import STORE_FILE, ResultsStore, StoreError
from tests.cli import run_bongard, run_bongard_process
from tests.mounts import made_read_only, small_tmpfs

CONFIG = {"strategy": "direct", "dataset": "d", "agents": {}}
FILES = {"store": STORE_FILE, "cache": CACHE_FILE, "checkpoints": CHECKPOINTS_FILE}
NAMES = {"store": "results store", "cache": "response cache", "checkpoints": "checkpoints"}
PADDING = "x" * 2_000


async def _checkpoint(home: Path, busy_timeout_s: float, max_pages: int | None, count: int) -> None:
    async with open_checkpoints(home, busy_timeout_s) as saver:
        if max_pages is not None:
            saver.saver.conn.execute(f"PRAGMA max_page_count = {max_pages}")
        for number in range(count):
            config = RunnableConfig(configurable={"thread_id": f"t{number}", "checkpoint_ns": ""})
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"padding": PADDING}
            await saver.aput(config, checkpoint, {}, {})
        assert [item async for item in saver.alist(None, limit=1)]


def use(
    kind: str, home: Path, busy_timeout_s: float = 30.0, max_pages: int | None = None, count: int = 1
) -> None:
    """Open the file through the toolkit and write `count` records to it (then read one back)."""
    path = home / FILES[kind]
    if kind == "store":
        store = ResultsStore(path, busy_timeout_s)
        if max_pages is not None:
            store._db.execute(f"PRAGMA max_page_count = {max_pages}")
        for _ in range(count):
            store.create_run({**CONFIG, "padding": PADDING}, "test")
        assert store.run_ids()
        store.close()
    elif kind == "cache":
        cache = ResponseCache(path, busy_timeout_s=busy_timeout_s)
        if max_pages is not None:
            cache._connection.execute(f"PRAGMA max_page_count = {max_pages}")
        for number in range(count):
            cache.put(f"key-{number}", "agent", {"text": PADDING})
        assert cache.get("key-0") is not None
        cache.close()
    else:
        asyncio.run(_checkpoint(home, busy_timeout_s, max_pages, count))


def records(kind: str, path: Path) -> int:
    """How many records the file holds, read by plain SQLite after an integrity check."""
    table = {"store": "runs", "cache": "responses", "checkpoints": "checkpoints"}[kind]
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def fails(kind: str, path: Path, cause: str, action: Callable[[], None]) -> SQLiteFileError:
    with pytest.raises(SQLiteFileError) as raised:
        action()
    error = raised.value
    assert (error.path, error.cause) == (path, cause)
    assert str(error).startswith(f"{NAMES[kind]} {path}: ") and "\n" not in str(error)
    assert isinstance(error, StoreError) == (kind == "store")  # the store's is still a StoreError
    return error


@pytest.mark.parametrize("kind", FILES)
def test_a_file_that_is_not_sqlite_is_named_and_left_untouched(kind: str, tmp_path: Path) -> None:
    path = tmp_path / FILES[kind]
    garbage = b"this is not a database, it is a shopping list\n" * 200
    path.write_bytes(garbage)
    error = fails(kind, path, "corrupt", lambda: use(kind, tmp_path))
    assert "file is not a database: it is not a readable SQLite" in str(error) and "move it aside" in str(
        error
    )
    assert path.read_bytes() == garbage


@pytest.mark.parametrize("kind", FILES)
def test_a_truncated_file_is_named_and_left_untouched(kind: str, tmp_path: Path) -> None:
    path = tmp_path / FILES[kind]
    use(kind, tmp_path, count=100)
    for leftover in tmp_path.glob(f"{FILES[kind]}-*"):  # closed cleanly: no WAL content left
        assert leftover.stat().st_size == 0 or leftover.name.endswith("-shm")
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)
    cut = path.read_bytes()
    error = fails(kind, path, "corrupt", lambda: use(kind, tmp_path))
    assert "database disk image is malformed: it is not a readable SQLite" in str(error)
    assert path.read_bytes() == cut


@pytest.fixture
def lock_holder() -> Iterator[Callable[[Path], None]]:
    """Another process that holds a file's write lock until the test ends."""
    holders: list[subprocess.Popen[str]] = []

    def hold(path: Path) -> None:
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                (
                    "import sqlite3, sys\n"
                    f"db = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
                    "db.execute('BEGIN IMMEDIATE')\n"
                    "print('locked', flush=True)\n"
                    "sys.stdin.read()\n"
                ),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        holders.append(holder)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"

    yield hold
    for holder in holders:
        holder.communicate("")


@pytest.mark.parametrize("kind", FILES)
def test_a_lock_held_past_the_timeout_is_named_and_nothing_is_half_written(
    kind: str, tmp_path: Path, lock_holder: Callable[[Path], None]
) -> None:
    path = tmp_path / FILES[kind]
    use(kind, tmp_path)
    before = records(kind, path)
    lock_holder(path)
    error = fails(kind, path, "locked", lambda: use(kind, tmp_path, busy_timeout_s=0.3))
    assert "database is locked: it is locked by another process" in str(error)
    assert records(kind, path) == before


@pytest.mark.parametrize("kind", FILES)
def test_a_full_disk_is_named_and_what_was_written_stays_intact(kind: str, tmp_path: Path) -> None:
    path = tmp_path / FILES[kind]
    error = fails(kind, path, "full", lambda: use(kind, tmp_path, max_pages=64, count=10_000))
    assert "database or disk is full: the disk is full;" in str(error) and "intact" in str(error)
    assert records(kind, path) > 3  # every record written before the disk filled, readable


async def _queued_writes(home: Path) -> tuple[list[BaseException | None], float]:
    """20 checkpoint writes at once while another process holds the write lock: each one's outcome,
    and the seconds they took in all."""
    async with open_checkpoints(home, busy_timeout_s=0.5) as saver:

        async def write(number: int) -> None:
            config = RunnableConfig(configurable={"thread_id": f"t{number}", "checkpoint_ns": ""})
            await saver.aput(config, empty_checkpoint(), {}, {})

        started = time.monotonic()
        outcomes = await asyncio.gather(*(write(n) for n in range(20)), return_exceptions=True)
        return outcomes, time.monotonic() - started


def test_after_a_failed_checkpoint_write_the_queued_ones_fail_at_once(
    tmp_path: Path, lock_holder: Callable[[Path], None]
) -> None:
    """With LangGraph's saver each queued write waited out the busy timeout in turn (here 20 x 0.5 s;
    on a full tmpfs, where SQLite answers "busy", a run hung for minutes)."""
    use("checkpoints", tmp_path)
    lock_holder(tmp_path / CHECKPOINTS_FILE)
    outcomes, took = asyncio.run(_queued_writes(tmp_path))
    assert all(isinstance(outcome, sqlite3.OperationalError) for outcome in outcomes)
    assert took < 2


@pytest.fixture
def read_only_home(tmp_path: Path) -> Iterator[Path]:
    """A workspace holding a store, a cache and checkpoints, that nothing may write."""
    home = tmp_path / "home"
    home.mkdir()
    for kind in FILES:
        use(kind, home)
    with made_read_only(home, tmp_path) as read_only:
        yield read_only


def test_cache_stats_reads_a_read_only_home(read_only_home: Path) -> None:
    before = {file.name: file.read_bytes() for file in read_only_home.iterdir()}
    shown = run_bongard("cache", "stats", "--home", read_only_home)
    assert shown.returncode == 0 and f"{read_only_home / CACHE_FILE}: 1 replies" in shown.stdout
    assert {file.name: file.read_bytes() for file in read_only_home.iterdir()} == before


@pytest.mark.parametrize("kind", FILES)
def test_writing_in_a_read_only_home_is_named_and_says_what_to_do(kind: str, read_only_home: Path) -> None:
    path = read_only_home / FILES[kind]
    before = path.read_bytes()
    error = fails(kind, path, "read-only", lambda: use(kind, read_only_home))
    assert "read-only: make both writable, or use --home" in str(error)
    assert path.read_bytes() == before


def test_commands_on_bad_files_end_in_one_line_naming_the_file(tmp_path: Path, shared_data: Path) -> None:
    """A run meets a corrupt cache, then (the cache moved aside) a corrupt checkpoint file: one line
    each naming it, exit 2 before the run is stored, no traceback; `cache stats` and `cache clear`
    name the cache too. With both moved aside, the run runs."""
    run = ("run", "--strategy", "direct", "--model", "perception", "--dataset", "bongard-classic",
           "--problems", "1", "--data-dir", shared_data, "--home", tmp_path)  # fmt: skip
    for kind in ("cache", "checkpoints"):
        (tmp_path / FILES[kind]).write_bytes(b"not a database\n" * 100)
    for kind in ("cache", "checkpoints"):
        path = tmp_path / FILES[kind]
        failed = run_bongard(*run)
        [line] = [line for line in failed.stderr.splitlines() if line.startswith("error:")]
        assert failed.returncode == 2 and f"error: {NAMES[kind]} {path}: file is not a database" in line
        if kind == "cache":
            for command in ("stats", "clear"):
                shown = run_bongard("cache", command, "--home", tmp_path)
                assert shown.returncode == 2 and "it is not a readable SQLite cache" in shown.stderr
        path.rename(path.with_suffix(".aside"))
        assert not ResultsStore(tmp_path / STORE_FILE).run_ids()  # refused before it was stored
    ran = run_bongard(*run)
    assert ran.returncode == 0 and "1/1 items done" in ran.stdout


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A workspace on a 1 MiB tmpfs."""
    why = "no tmpfs can be mounted here (not root); the page-cap tests above cover a full disk"
    with small_tmpfs(tmp_path / "small", "1m", why) as mount:
        yield mount


def test_a_run_that_fills_the_disk_ends_in_one_line_and_resumes_once_there_is_space(
    small_disk: Path, shared_data: Path
) -> None:
    failed = run_bongard(
        "run",
        "--strategy",
        "descriptive",
        "--model",
        "perception",
        "--dataset",
        "bongard-classic",
        "--problems",
        "1-30",
        "--data-dir",
        shared_data,
        "--home",
        small_disk,
    )
    [line] = [line for line in failed.stderr.splitlines() if line.startswith("error:")]
    assert "database or disk is full: the disk is full;" in line
    stored = ResultsStore(small_disk / STORE_FILE)
    done = stored.summary(stored.resolve_run("latest")).done
    assert failed.returncode == (3 if done else 4)  # it stopped after it started: not a refusal (2)
    assert "resume with `bongard run --resume" in failed.stdout
    assert any(f"{NAMES[kind]} {small_disk / FILES[kind]}" in line for kind in FILES)
    for kind in FILES:
        records(kind, small_disk / FILES[kind])  # every file passes SQLite's integrity check
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    resumed = run_bongard("run", "--resume", "latest", "--home", small_disk)
    assert resumed.returncode == 0 and "30/30 items done" in resumed.stdout


@pytest.fixture
def read_only_workspace(tmp_path: Path, shared_data: Path) -> Iterator[Path]:
    """A workspace with a finished run in it (an archived results folder), that nothing may write."""
    home = tmp_path / "archive"  # run in a process of its own: its files closed, as an archive's are
    ran = run_bongard_process("run", "--problems", "1-3", "--data-dir", shared_data, "--home", home)
    assert ran.returncode == 0, ran.stderr
    with made_read_only(home, tmp_path) as read_only:
        yield read_only


def test_every_reading_command_and_the_viewer_read_a_read_only_workspace(
    read_only_workspace: Path, tmp_path: Path
) -> None:
    """Each refused before (`unable to open database file`), the viewer answering 500."""
    home = ("--home", read_only_workspace)
    before = {file.name: file.read_bytes() for file in read_only_workspace.iterdir() if file.is_file()}
    commands = [
        ("runs", "list"), ("runs", "show", "latest"), ("show", "latest"), ("show", "latest", "1"),
        ("compare", "--out", tmp_path / "report"), ("export", "latest", "--out", tmp_path / "logs"),
        ("analyze", "categories", "latest"),
    ]  # fmt: skip
    for command in commands:
        shown = run_bongard(*command, *home)
        assert shown.returncode == 0, (command, shown.stderr)
        assert "read-only workspace: reading" in shown.stderr
    assert "3 solved" in run_bongard("runs", "show", "latest", *home).stdout
    from starlette.testclient import TestClient

    from graphs.view.app import create_app

    with TestClient(create_app(read_only_workspace / STORE_FILE), base_url="http://127.0.0.1") as client:
        run_id = client.get("/api/runs").json()[0]["id"]
        for path in ("/", f"/runs/{run_id}", f"/runs/{run_id}/bongard-classic/1", f"/compare?runs={run_id}"):
            assert client.get(path).status_code == 200, path
    assert {
        file.name: file.read_bytes() for file in read_only_workspace.iterdir() if file.is_file()
    } == before
