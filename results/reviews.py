"""Generation runs and their image reviews in the results store.

A generation run records its settings; each image waiting for a human
reviewer is a row without a decision until `bongard review` (or the automatic
review) fills it in. The generation graph resumes from these stored decisions.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from datasets_io.generation.generated import Decision
from results.store import ResultsStore, StoreError


@dataclass(frozen=True)
class Review:
    image_id: int
    source: str
    side: str
    path: str
    concept: str
    """The concept of the image's side, which the reviewer checks it against."""
    decision: Decision | None
    reviewer: str | None


class GenerationRecords:
    """The generation tables of one results store."""

    def __init__(self, store: ResultsStore) -> None:
        self.store = store

    def create(self, config: Mapping[str, Any]) -> str:
        generation_id = time.strftime("gen-%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO generations (id, created_at, config) VALUES (?, ?, ?)",
                (generation_id, time.time(), json.dumps(config, sort_keys=True)),
            )
        return generation_id

    def resolve(self, generation: str) -> str:
        """A generation id, accepting `latest`."""
        with self.store.reading() as db:
            row = (
                db.execute("SELECT id FROM generations ORDER BY created_at DESC LIMIT 1").fetchone()
                if generation == "latest"
                else db.execute("SELECT id FROM generations WHERE id = ?", (generation,)).fetchone()
            )
        if row is None:
            raise StoreError(f"no generation {generation!r} in {self.store.path}")
        return str(row[0])

    def config(self, generation_id: str) -> dict[str, Any]:
        with self.store.reading() as db:
            row = db.execute("SELECT config FROM generations WHERE id = ?", (generation_id,)).fetchone()
        found: dict[str, Any] = json.loads(row[0])
        return found

    def finish(self, generation_id: str) -> None:
        with self.store.transaction() as db:
            db.execute("UPDATE generations SET finished_at = ? WHERE id = ?", (time.time(), generation_id))

    def add_pending(self, generation_id: str, reviews: Sequence[Review]) -> None:
        """Images waiting for a reviewer; decisions already stored are kept."""
        with self.store.transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO reviews (generation_id, image_id, source, side, path, concept) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(generation_id, r.image_id, r.source, r.side, r.path, r.concept) for r in reviews],
            )

    def save(self, generation_id: str, reviews: Sequence[Review]) -> None:
        """Reviews with their decisions (an automatic review's), replacing any stored before."""
        with self.store.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO reviews VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        generation_id,
                        r.image_id,
                        r.source,
                        r.side,
                        r.path,
                        r.concept,
                        r.decision,
                        r.reviewer,
                        time.time(),
                    )
                    for r in reviews
                ],
            )

    def decide(self, generation_id: str, decisions: Mapping[int, Decision], reviewer: str) -> int:
        """Store decisions for images of the generation; returns how many were stored. An image id
        the generation does not have is an error naming it."""
        known = {r.image_id for r in self.reviews(generation_id)}
        unknown = sorted(set(decisions) - known)
        if unknown:
            raise StoreError(
                f"generation {generation_id} has no images {', '.join(map(str, unknown))} to review"
            )
        with self.store.transaction() as db:
            db.executemany(
                "UPDATE reviews SET decision = ?, reviewer = ?, decided_at = ? "
                "WHERE generation_id = ? AND image_id = ?",
                [(d, reviewer, time.time(), generation_id, i) for i, d in decisions.items()],
            )
        return len(decisions)

    def reviews(self, generation_id: str, source: str | None = None) -> list[Review]:
        query = "SELECT image_id, source, side, path, concept, decision, reviewer FROM reviews "
        query += "WHERE generation_id = ?"
        params: tuple[str, ...] = (generation_id,)
        if source is not None:
            query, params = query + " AND source = ?", (generation_id, source)
        with self.store.reading() as db:
            rows = db.execute(query + " ORDER BY image_id", params).fetchall()
        return [Review(int(i), str(s), str(sd), str(p), str(c), d, r) for i, s, sd, p, c, d, r in rows]
