"""The results store as a user meets it: loaded as DataFrames, and faults that leave it intact.

Faults are real: a write lock held by another process, a file that is not a
database, a filesystem that runs out of space (a 512 KiB tmpfs where mounting
is allowed, otherwise SQLite's own page cap, which fails the same way).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from datasets_io.records import Answer, Verdict
from results.frames import store_frame, store_frames
from results.store import CALL_FIELDS, MIGRATIONS, STORE_FILE, ResultsStore, StoreError
from tests.cli import run_bongard

CONFIG = {"strategy": "descriptive", "dataset": "bongard-rwr", "agents": {"reasoner": "m"}, "seed": 3}


def call(n: int, padding: int = 0) -> dict[str, Any]:
    return {
        "role": "describer",
        "agent": "m",
        "task": "describe",
        "conversation": "c",
        "step": n,
        "images": [["left-1"]],
        "prompt": "p" * padding,
        "reply": "r",
        "input_tokens": 10,
        "output_tokens": 2,
        "cost_usd": 0.001,
        "latency_s": 0.1,
        "cache_hit": n == 1,
    }


def answer(calls: int, padding: int = 0) -> Answer:
    return Answer.model_validate(
        {
            "strategy": "descriptive",
            "problem": "bongard-rwr/1",
            "text": "Left: a\nRight: b",
            "parse_status": "ok",
            "trace": [call(n, padding) for n in range(calls)],
        }
    )


def filled_store(path: Path) -> tuple[ResultsStore, str, str]:
    store = ResultsStore(path)
    first = store.create_run(CONFIG, "test")
    second = store.create_run({**CONFIG, "strategy": "contrastive"}, "test")
    store.save_item(first, "bongard-rwr/1", 0, answer(3), None)
    store.save_item(first, "bongard-rwr/2", 0, None, "a 400 from the model")
    store.save_item(second, "bongard-rwr/1", 0, answer(2), None)
    verdict = {"judge": "a", "label": "ok", "raw_text": "OK", "input_tokens": 5, "output_tokens": 1}
    verdicts = [Verdict.model_validate({**verdict, "cost_usd": None})]
    store.save_judging(first, "bongard-rwr/1", 0, "j1", "vote:1", True, verdicts)
    return store, first, second


def test_every_table_loads_as_a_dataframe_with_json_parsed(tmp_path: Path) -> None:
    _, first, second = filled_store(tmp_path / STORE_FILE)
    frames = store_frames(tmp_path / STORE_FILE)
    assert {name: len(frame) for name, frame in frames.items()} == {
        "runs": 2, "items": 3, "calls": 5, "verdicts": 1, "decisions": 1,
    }  # fmt: skip
    runs = frames["runs"].set_index("id")
    assert runs.loc[second, "config.strategy"] == "contrastive" and runs.loc[first, "config.seed"] == 3
    items = frames["items"]
    done = items[items["status"] == "done"]
    assert all(isinstance(a, dict) and a["parse_status"] == "ok" for a in done["answer"])
    assert items.loc[items["status"] == "failed", "error"].tolist() == ["a 400 from the model"]
    assert frames["calls"]["images"].iloc[0] == [["left-1"]]
    only_first = store_frame(tmp_path / STORE_FILE, "calls", [first])
    assert len(only_first) == 3 and only_first["cache_hit"].sum() == 1
    assert only_first["input_tokens"].sum() == 30


def test_frames_name_the_tables_and_the_missing_store(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tables: runs, items, calls"):
        store_frame(tmp_path / STORE_FILE, "answers")
    with pytest.raises(StoreError, match="no results store at"):
        store_frame(tmp_path / STORE_FILE, "runs")


@pytest.fixture
def writer_holding_the_lock(tmp_path: Path) -> Iterator[Path]:
    """Another process that holds the store's write lock until the test ends."""
    path = tmp_path / STORE_FILE
    ResultsStore(path).close()
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
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    yield path
    holder.communicate("")


def test_a_store_locked_by_another_process_is_named_and_nothing_is_half_written(
    writer_holding_the_lock: Path,
) -> None:
    store = ResultsStore(writer_holding_the_lock, busy_timeout_s=0.3)
    with pytest.raises(
        StoreError, match=r"store\.sqlite: database is locked: it is locked by another process"
    ):
        store.create_run(CONFIG, "test")
    assert store.run_ids() == []  # reading still works while another process writes


def test_a_corrupt_store_is_named_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / STORE_FILE
    garbage = b"this is not a database, it is a shopping list\n" * 200
    path.write_bytes(garbage)
    with pytest.raises(StoreError, match="file is not a database: it is not a readable SQLite store"):
        ResultsStore(path)
    result = run_bongard("runs", "list", "--home", tmp_path)
    assert result.returncode == 2 and "not a readable SQLite store" in result.stderr
    assert path.read_bytes() == garbage


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[tuple[Path, bool]]:
    """A folder on a 512 KiB filesystem, or a plain folder whose store gets a page cap instead."""
    mount = tmp_path / "small"
    mount.mkdir()
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)], capture_output=True
        ).returncode
        == 0
    )
    yield mount, mounted
    if mounted:
        subprocess.run(["umount", "--lazy", str(mount)], check=True)


def test_a_full_disk_is_named_and_the_items_already_saved_stay_intact(small_disk: tuple[Path, bool]) -> None:
    folder, mounted = small_disk
    store = ResultsStore(folder / STORE_FILE)
    if not mounted:
        store._db.execute("PRAGMA max_page_count = 128")  # no tmpfs here: SQLite's own cap
    run_id = store.create_run(CONFIG, "test")
    saved = 0
    with pytest.raises(StoreError, match="the disk is full; the items saved so far are intact"):
        for saved in range(10_000):  # the count is read after the failure
            store.save_item(run_id, f"bongard-rwr/{saved}", 0, answer(4, padding=2_000), None)
    assert saved > 3
    store.close()
    with closing(sqlite3.connect(folder / STORE_FILE)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        items = db.execute("SELECT COUNT(*) FROM items").fetchone()[0]
        calls = db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    assert items == saved and calls == 4 * saved  # every saved item whole, the failed one absent


def test_a_version_2_store_moves_each_trace_out_of_its_answer_into_the_calls_rows(tmp_path: Path) -> None:
    path = tmp_path / STORE_FILE
    old = sqlite3.connect(path)
    for script in MIGRATIONS[:2]:
        old.executescript(script)
    old.execute("PRAGMA user_version = 2")
    traced = answer(2).model_dump(mode="json")
    traced["trace"][1] |= {"parsed": {"answer": "LEFT"}, "parse_status": "ok"}
    old.execute("INSERT INTO runs VALUES ('r', 0, NULL, 'old', ?)", (json.dumps(CONFIG),))
    old.execute(
        "INSERT INTO items VALUES ('r', 'bongard-rwr/1', 0, 'done', ?, 'x', 'ok', NULL, NULL, 0)",
        (json.dumps(traced),),
    )
    for seq, call_json in enumerate(traced["trace"]):  # the old column layout, without parsed
        values = [
            call_json[k]
            for k in CALL_FIELDS
            if k not in ("parsed", "parse_status", "attempts", "stop", "stop_reason", "output_mode")
            and k not in ("cache_read_tokens", "cache_write_tokens")  # migration 20
        ]
        values[CALL_FIELDS.index("images")] = json.dumps(values[CALL_FIELDS.index("images")])
        old.execute(
            f"INSERT INTO calls VALUES ('r', 'bongard-rwr/1', 0, {seq}, {', '.join('?' * 13)})", values
        )
    old.commit()
    old.close()
    store = ResultsStore(path)
    [(_, _, record)] = store.answer_records("r")
    assert [c.parse_status for c in record.trace] == ["not-requested", "ok"]
    assert record.trace[1].parsed == {"answer": "LEFT"} and record.trace[0].images == [["left-1"]]
    uncounted = [call | {"attempts": None} for call in traced["trace"]]  # requests were not counted then
    assert record.model_dump(mode="json")["trace"] == uncounted
    with sqlite3.connect(path) as db:
        [(stored,)] = db.execute("SELECT answer FROM items").fetchall()
    assert "trace" not in json.loads(stored)  # kept once, in the calls rows
