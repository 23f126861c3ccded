"""Human studies in the results store: each study's design by name, kept as it was created.

A study is created once and never changed: its participants' answers (runs of `human:` agents) are
read against the problems and order it named, so a second design under the same name is refused.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from results.store import ResultsStore, StoreError


@dataclass(frozen=True)
class StoredStudy:
    name: str
    created_at: float
    design: dict[str, Any]
    """The design as `graphs.studies.design.StudyDesign.to_json` wrote it."""


class StudyRecords:
    """The study table of one results store."""

    def __init__(self, store: ResultsStore) -> None:
        self.store = store

    def create(self, name: str, design: dict[str, Any]) -> StoredStudy:
        """Keep a new study; a name already taken is refused (its design stays as it was)."""
        created = StoredStudy(name, time.time(), design)
        with self.store.transaction() as db:
            if db.execute("SELECT 1 FROM studies WHERE name = ?", (name,)).fetchone() is not None:
                raise StoreError(
                    f"a study named {name!r} exists already: give another name, or see it with "
                    f"`bongard study show {name}`"
                )
            db.execute(
                "INSERT INTO studies (name, created_at, design) VALUES (?, ?, ?)",
                (name, created.created_at, json.dumps(design, sort_keys=True)),
            )
        return created

    def get(self, name: str) -> StoredStudy:
        with self.store.reading() as db:
            row = db.execute(
                "SELECT name, created_at, design FROM studies WHERE name = ?", (name,)
            ).fetchone()
        if row is None:
            known = ", ".join(study.name for study in self.all()) or "none"
            raise StoreError(f"no study named {name!r} (studies: {known})")
        return _stored(row)

    def all(self) -> list[StoredStudy]:
        """Every study, oldest first."""
        with self.store.reading() as db:
            rows = db.execute("SELECT name, created_at, design FROM studies ORDER BY created_at").fetchall()
        return [_stored(row) for row in rows]


def _stored(row: tuple[Any, ...]) -> StoredStudy:
    name, created_at, design = row
    return StoredStudy(str(name), float(created_at), json.loads(design))
