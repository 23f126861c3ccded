"""Runs made through the real runner into a results store, and what tests read back from it."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from datasets_io.records import Answer
from graphs.runs.runner import RunConfig, start_run
from results.store import ResultsStore


class Stored:
    """One finished run: its answers by problem and its calls in order."""

    def __init__(self, store: ResultsStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id

    def answers(self) -> dict[str, Answer]:
        return {problem: answer for problem, _, answer in self.store.answer_records(self.run_id)}

    def errors(self) -> list[tuple[str, str]]:
        """(problem, error) of every failed item."""
        with sqlite3.connect(self.store.path) as db:
            query = "SELECT problem, error FROM items WHERE run_id = ? AND status = 'failed'"
            return [(str(p), str(e)) for p, e in db.execute(query, (self.run_id,))]

    def calls(self) -> list[tuple[str, str, list[list[str]]]]:
        """(agent, task, panels behind each image) of every call, by problem and order."""
        with sqlite3.connect(self.store.path) as db:
            rows = db.execute(
                "SELECT agent, task, images FROM calls WHERE run_id = ? ORDER BY problem, seq", (self.run_id,)
            ).fetchall()
        return [(agent, task, json.loads(images)) for agent, task, images in rows]


def run_into_store(home: Path, config: RunConfig) -> Stored:
    """Run `config` to the end in the workspace `home`; every item must finish."""
    store = ResultsStore(home / "store.sqlite")
    run_id, runner = start_run(config, store, home)
    asyncio.run(runner.run(run_id))
    summary = store.summary(run_id)
    stored = Stored(store, run_id)
    expected = (len(runner.problems) * config.attempts, 0)
    assert (summary.done, summary.failed) == expected, stored.errors()
    return stored
