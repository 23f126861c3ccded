"""Human studies in the results store: each study's design by name, kept as it was created, its
participants and every answer as it was given.

A study is created once and never changed: its participants' answers (runs of `human:` agents) are
read against the problems and order it named, so a second design under the same name is refused.
A participant's link token is kept only as its SHA-256: the store alone cannot open anyone's pages.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from results.store import ResultsStore, StoreError, delete_run_rows

ItemKey = tuple[str, str, int]
"""An answer: its run, problem key and attempt."""


@dataclass(frozen=True)
class StoredStudy:
    name: str
    created_at: float
    design: dict[str, Any]
    """The design as `graphs.studies.design.StudyDesign.to_json` wrote it."""


@dataclass(frozen=True)
class Participant:
    study: str
    pseudonym: str
    run_id: str
    """The participant's answers as a run of agent `human:PSEUDONYM`."""
    created_at: float


@dataclass(frozen=True)
class GivenAnswer:
    """One problem as a participant met it: first shown at `shown_at`, answered (the form's values,
    as given) at `answered_at`; both None while it waits for an answer."""

    problem: str
    shown_at: float
    answered_at: float | None
    answer: dict[str, Any] | None

    @property
    def seconds(self) -> float | None:
        """From the problem's first showing to its answer (reopening the page does not restart it)."""
        return None if self.answered_at is None else self.answered_at - self.shown_at


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


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

    def add_participant(self, study: str, pseudonym: str, token: str, run_id: str) -> Participant:
        """A participant of `study`, reached by `token` (kept hashed); a pseudonym is taken once."""
        added = Participant(study, pseudonym, run_id, time.time())
        with self.store.transaction() as db:
            taken = db.execute(
                "SELECT 1 FROM study_participants WHERE study = ? AND pseudonym = ?", (study, pseudonym)
            ).fetchone()
            if taken is not None:
                raise StoreError(
                    f"study {study!r} has a participant {pseudonym!r} already: choose another pseudonym, "
                    f"or give them a new link with `bongard study invite {study} {pseudonym} --new-link`"
                )
            db.execute(
                "INSERT INTO study_participants (study, pseudonym, token_sha256, run_id, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (study, pseudonym, token_digest(token), run_id, added.created_at),
            )
        return added

    def new_link(self, study: str, pseudonym: str, token: str) -> None:
        """A participant's link replaced: the old token opens nothing from now on."""
        with self.store.transaction() as db:
            changed = db.execute(
                "UPDATE study_participants SET token_sha256 = ? WHERE study = ? AND pseudonym = ?",
                (token_digest(token), study, pseudonym),
            ).rowcount
        if not changed:
            raise StoreError(f"study {study!r} has no participant {pseudonym!r}")

    def participant(self, study: str, pseudonym: str) -> Participant:
        found = self._participants("study = ? AND pseudonym = ?", (study, pseudonym))
        if not found:
            raise StoreError(f"study {study!r} has no participant {pseudonym!r}")
        return found[0]

    def participant_of_token(self, study: str, token: str) -> Participant | None:
        """Whose link `token` is, in `study`; None for a token of nobody's (or of another study)."""
        found = self._participants("study = ? AND token_sha256 = ?", (study, token_digest(token)))
        return found[0] if found else None

    def participants(self, study: str) -> list[Participant]:
        """Every participant of `study`, in the order they were invited."""
        return self._participants("study = ?", (study,))

    def _participants(self, where: str, values: tuple[str, ...]) -> list[Participant]:
        with self.store.reading() as db:
            rows = db.execute(
                "SELECT study, pseudonym, run_id, created_at FROM study_participants "
                f"WHERE {where} ORDER BY created_at, pseudonym",
                values,
            ).fetchall()
        return [Participant(*row) for row in rows]

    def shown(self, study: str, pseudonym: str, problem: str) -> GivenAnswer:
        """A problem shown to a participant: the first showing's time is kept, a later one changes
        nothing (its answer's time counts from the first)."""
        with self.store.transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO study_answers (study, pseudonym, problem, shown_at) "
                "VALUES (?, ?, ?, ?)",
                (study, pseudonym, problem, time.time()),
            )
        return self.answers(study, pseudonym)[problem]

    def answer(self, study: str, pseudonym: str, problem: str, given: dict[str, Any]) -> GivenAnswer | None:
        """Keep an answer as given, once: None where the problem was never shown to the participant
        or has an answer already (a second one, a form sent twice, is not kept)."""
        with self.store.transaction() as db:
            changed = db.execute(
                "UPDATE study_answers SET answered_at = ?, answer = ? "
                "WHERE study = ? AND pseudonym = ? AND problem = ? AND answered_at IS NULL",
                (time.time(), json.dumps(given, sort_keys=True), study, pseudonym, problem),
            ).rowcount
        return self.answers(study, pseudonym)[problem] if changed else None

    def answers(self, study: str, pseudonym: str) -> dict[str, GivenAnswer]:
        """The problems shown to a participant, by id, with their answers where given."""
        with self.store.reading() as db:
            rows = db.execute(
                "SELECT problem, shown_at, answered_at, answer FROM study_answers "
                "WHERE study = ? AND pseudonym = ?",
                (study, pseudonym),
            ).fetchall()
        return {
            str(problem): GivenAnswer(
                str(problem), float(shown), answered, None if answer is None else json.loads(answer)
            )
            for problem, shown, answered, answer in rows
        }

    def forget(self, study: str, pseudonym: str) -> Participant:
        """A participant taken out of the store: their answers, their link, their run and any
        expert's verdicts on it."""
        participant = self.participant(study, pseudonym)
        with self.store.transaction() as db:
            db.execute("DELETE FROM study_answers WHERE study = ? AND pseudonym = ?", (study, pseudonym))
            db.execute("DELETE FROM study_participants WHERE study = ? AND pseudonym = ?", (study, pseudonym))
            db.execute("DELETE FROM study_labels WHERE study = ? AND run_id = ?", (study, participant.run_id))
            delete_run_rows(db, participant.run_id)
        return participant

    def label(self, study: str, expert: str, verdicts: Mapping[ItemKey, bool]) -> None:
        """An expert's verdicts on answers of the study's solvers (a later verdict on an answer
        replaces theirs), in one transaction."""
        now = time.time()
        with self.store.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO study_labels "
                "(study, expert, run_id, problem, attempt, ok, labelled_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(study, expert, *key, int(ok), now) for key, ok in verdicts.items()],
            )

    def labels(self, study: str) -> dict[str, dict[ItemKey, bool]]:
        """Each expert's verdicts on the study's answers, by (run, problem, attempt)."""
        with self.store.reading() as db:
            rows = db.execute(
                "SELECT expert, run_id, problem, attempt, ok FROM study_labels WHERE study = ? "
                "ORDER BY expert, labelled_at",
                (study,),
            ).fetchall()
        found: dict[str, dict[ItemKey, bool]] = {}
        for expert, run_id, problem, attempt, ok in rows:
            found.setdefault(str(expert), {})[(str(run_id), str(problem), int(attempt))] = bool(ok)
        return found


def _stored(row: tuple[Any, ...]) -> StoredStudy:
    name, created_at, design = row
    return StoredStudy(str(name), float(created_at), json.loads(design))
