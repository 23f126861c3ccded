"""Experiments in the results store: each grid's file and plan, and the run that holds each cell.

A cell's run is recorded as soon as it is started (or adopted: a run stored with the same
settings), before any of its calls, so a grid killed mid-way resumes every cell in the run it
began; what the grid spent is what its cells' runs cost beyond what they had cost when it took
them over.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from results.store import ResultsStore, StoreError


@dataclass(frozen=True)
class StoredExperiment:
    name: str
    created_at: float
    updated_at: float
    path: str
    source: str
    plan: dict[str, Any]
    cells: dict[str, str]
    """Cell key -> run id."""


class ExperimentRecords:
    """The experiment tables of one results store."""

    def __init__(self, store: ResultsStore) -> None:
        self.store = store

    def save(self, name: str, path: str, source: str, plan: dict[str, Any]) -> None:
        """Record the experiment's file and plan (a later run of the same name updates them)."""
        now = time.time()
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO experiments (name, created_at, updated_at, path, source, plan) "
                "VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET updated_at = excluded.updated_at, path = excluded.path, "
                "source = excluded.source, plan = excluded.plan",
                (name, now, now, path, source, json.dumps(plan, sort_keys=True)),
            )

    def set_cell(self, name: str, cell: str, run_id: str, spent_before: float) -> None:
        with self.store.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO experiment_cells (experiment, cell, run_id, spent_before) "
                "VALUES (?, ?, ?, ?)",
                (name, cell, run_id, spent_before),
            )

    def cell_run(self, name: str, cell: str) -> str | None:
        with self.store.reading() as db:
            row = db.execute(
                "SELECT run_id FROM experiment_cells WHERE experiment = ? AND cell = ?", (name, cell)
            ).fetchone()
        return None if row is None else str(row[0])

    def spent(self, name: str) -> tuple[float, int]:
        """What the grid's cells' runs cost since the grid took them over, and how many calls of
        them have no known cost."""
        with self.store.reading() as db:
            cost, unknown = db.execute(
                "SELECT COALESCE(SUM(c.cost_usd), 0), COALESCE(SUM(c.cost_usd IS NULL), 0) "
                "FROM calls c JOIN experiment_cells e ON e.run_id = c.run_id WHERE e.experiment = ?",
                (name,),
            ).fetchone()
            before = db.execute(
                "SELECT COALESCE(SUM(spent_before), 0) FROM experiment_cells WHERE experiment = ?", (name,)
            ).fetchone()[0]
        return float(cost) - float(before), int(unknown)

    def get(self, name: str) -> StoredExperiment:
        with self.store.reading() as db:
            row = db.execute(
                "SELECT name, created_at, updated_at, path, source, plan FROM experiments WHERE name = ?",
                (name,),
            ).fetchone()
            cells = db.execute(
                "SELECT cell, run_id FROM experiment_cells WHERE experiment = ? ORDER BY rowid", (name,)
            ).fetchall()
        if row is None:
            raise StoreError(f"no experiment {name!r} in {self.store.path}")
        return StoredExperiment(
            str(row[0]),
            float(row[1]),
            float(row[2]),
            str(row[3]),
            str(row[4]),
            json.loads(row[5]),
            {str(cell): str(run) for cell, run in cells},
        )

    def names(self) -> list[str]:
        with self.store.reading() as db:
            return [str(r[0]) for r in db.execute("SELECT name FROM experiments ORDER BY created_at")]
