"""The results store: one SQLite file per workspace: runs, items, model calls, verdicts, generations, reviews.

Plain SQLite (readable with `sqlite3`), WAL mode, one transaction per item so
a killed run loses at most the items in flight. The schema is versioned with
`PRAGMA user_version` and upgraded by ordered migrations when opened.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from datasets_io.errors import BongardError
from datasets_io.records import (
    REFUSAL_STOPS,
    STOP_KINDS,
    STOP_WORDS,
    STOPPED_OUTCOMES,
    Answer,
    CallTrace,
    Verdict,
)
from datasets_io.sqlite_errors import STORE, SQLiteFileError, reading_uri

STORE_FILE = "store.sqlite"
SQL_VARIABLES = 900
"""Values bound in one statement: below the 999 older SQLite builds allow."""
MIGRATIONS: Sequence[str] = (
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        finished_at REAL,
        toolkit_version TEXT NOT NULL,
        config TEXT NOT NULL
    );
    CREATE TABLE items (
        run_id TEXT NOT NULL REFERENCES runs(id),
        problem TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
        answer TEXT,
        answer_text TEXT,
        parse_status TEXT,
        correct INTEGER,
        error TEXT,
        finished_at REAL NOT NULL,
        PRIMARY KEY (run_id, problem, attempt)
    );
    CREATE TABLE calls (
        run_id TEXT NOT NULL,
        problem TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        role TEXT, agent TEXT, task TEXT, conversation TEXT, step INTEGER,
        images TEXT, prompt TEXT, reply TEXT,
        input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL, latency_s REAL, cache_hit INTEGER,
        PRIMARY KEY (run_id, problem, attempt, seq)
    );
    CREATE TABLE verdicts (
        run_id TEXT NOT NULL,
        problem TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        judging TEXT NOT NULL,
        judge TEXT NOT NULL,
        label TEXT NOT NULL,
        raw_text TEXT,
        input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL,
        PRIMARY KEY (run_id, problem, attempt, judging, judge)
    );
    CREATE TABLE decisions (
        run_id TEXT NOT NULL,
        problem TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        judging TEXT NOT NULL,
        policy TEXT NOT NULL,
        ok INTEGER NOT NULL,
        PRIMARY KEY (run_id, problem, attempt, judging)
    );
    """,
    """
    CREATE TABLE generations (
        id TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        finished_at REAL,
        config TEXT NOT NULL
    );
    CREATE TABLE reviews (
        generation_id TEXT NOT NULL REFERENCES generations(id),
        image_id INTEGER NOT NULL,
        source TEXT NOT NULL,
        side TEXT NOT NULL,
        path TEXT NOT NULL,
        concept TEXT NOT NULL,
        decision TEXT CHECK (decision IN ('left', 'right', 'none')),
        reviewer TEXT,
        decided_at REAL,
        PRIMARY KEY (generation_id, image_id)
    );
    """,
    # The trace is stored once, as `calls` rows: they gain what only the answer JSON held, and
    # the answers lose their copy.
    """
    ALTER TABLE calls ADD COLUMN parsed TEXT;
    ALTER TABLE calls ADD COLUMN parse_status TEXT NOT NULL DEFAULT 'not-requested';
    UPDATE calls SET
        parsed = (SELECT json_extract(i.answer, '$.trace[' || calls.seq || '].parsed') FROM items i
                  WHERE i.run_id = calls.run_id AND i.problem = calls.problem AND i.attempt = calls.attempt),
        parse_status = COALESCE((SELECT json_extract(i.answer, '$.trace[' || calls.seq || '].parse_status')
                  FROM items i WHERE i.run_id = calls.run_id AND i.problem = calls.problem
                  AND i.attempt = calls.attempt), 'not-requested');
    UPDATE items SET answer = json_remove(answer, '$.trace') WHERE answer IS NOT NULL;
    """,
    # A judging's decisions say when they were made, so the latest judging of a run is the one
    # that counts (older stores' judgings count as made at time 0, in the order they were stored).
    """
    ALTER TABLE decisions ADD COLUMN decided_at REAL NOT NULL DEFAULT 0;
    UPDATE decisions SET decided_at = rowid * 1e-9;
    """,
    # A run knows how many items it plans and which process is running it, so an interrupted run
    # is never shown as complete (older runs: unknown plan, no owner).
    """
    ALTER TABLE runs ADD COLUMN planned INTEGER;
    ALTER TABLE runs ADD COLUMN owner TEXT;
    """,
    # What produced a run: one provenance record per session that started or resumed it.
    """
    ALTER TABLE runs ADD COLUMN provenance TEXT NOT NULL DEFAULT '[]';
    """,
    # Each call's requests (1 plus its retries); NULL for calls stored before they were counted.
    """
    ALTER TABLE calls ADD COLUMN attempts INTEGER;
    """,
    # Why a reply stopped short (refused, blocked, cut at the token limit), with the provider's
    # words; NULL for calls that ended normally and for calls stored before stops were kept.
    """
    ALTER TABLE calls ADD COLUMN stop TEXT;
    ALTER TABLE calls ADD COLUMN stop_reason TEXT;
    """,
    # How each call's output schema went out (in the prompt, constrained, strict); NULL for calls
    # without one and for calls stored before it was recorded.
    """
    ALTER TABLE calls ADD COLUMN output_mode TEXT;
    """,
    # One scoring rule per strategy kind: an exactly scored reply that did not parse is wrong
    # (`correct` 0), so the store no longer reads a format failure as a score, which made a free-form
    # answer without `Left:`/`Right:` lines read wrong before any judge saw it. Free-form answers hold
    # no `expected`; exactly scored ones always do.
    """
    UPDATE items SET correct = 0, answer = json_set(answer, '$.correct', json('false'))
    WHERE status = 'done' AND correct IS NULL AND answer IS NOT NULL
    AND json_extract(answer, '$.expected') <> '{}';
    """,
    # Whether retrying a failed item can help (a call that failed: the service may answer later; a
    # panel that does not decode: once the file is fixed) or must fail the same way (an option or
    # problem the strategy refuses); NULL for done items and failures stored before it was kept.
    """
    ALTER TABLE items ADD COLUMN retryable INTEGER;
    """,
    # What each judge was asked, so a verdict can be read against it (issue 32); empty for verdicts
    # stored before it was kept, and for judges that read no prompt.
    """
    ALTER TABLE verdicts ADD COLUMN prompt TEXT NOT NULL DEFAULT '';
    """,
    # Experiments (issue 49): a grid's file, its plan and each cell's run, so a grid is resumed and
    # listed by name; `spent_before` is what a cell's run had cost when the grid took it over.
    """
    CREATE TABLE experiments (
        name TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        path TEXT NOT NULL,
        source TEXT NOT NULL,
        plan TEXT NOT NULL
    );
    CREATE TABLE experiment_cells (
        experiment TEXT NOT NULL REFERENCES experiments(name),
        cell TEXT NOT NULL,
        run_id TEXT NOT NULL,
        spent_before REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (experiment, cell)
    );
    """,
    # Why a verdict is not a plain ok or wrong (issue 50): an abstention's unreadable reply, a
    # judge's refusal with the provider's words; NULL for verdicts stored before it was kept.
    """
    ALTER TABLE verdicts ADD COLUMN reason TEXT;
    """,
    # Which judging counts (issue 52): chosen once (the first complete one, or one named), never by
    # which came last, so a new judging cannot replace it silently; a run judged before keeps the
    # judging that counted then, its latest.
    """
    CREATE TABLE counted_judgings (
        run_id TEXT PRIMARY KEY,
        judging TEXT NOT NULL,
        how TEXT NOT NULL,
        chosen_at REAL NOT NULL
    );
    INSERT INTO counted_judgings
        SELECT run_id, judging || '@' || policy, 'the latest when judgings came to be chosen',
               MAX(decided_at)
        FROM decisions GROUP BY run_id;
    """,
    # Judged runs read at scale (issue 53): each item looks up the judging that counts for its run (by
    # run and name, else the run's first by time). Without these, every item of a judged run scanned
    # all of the run's decisions: `bongard show` of a 5,000-item judged run took 19 s, not 0.8 s.
    """
    CREATE INDEX IF NOT EXISTS decisions_by_judging
        ON decisions (run_id, (judging || '@' || policy), problem, attempt);
    CREATE INDEX IF NOT EXISTS decisions_by_time ON decisions (run_id, decided_at);
    """,
    # Human studies (issue 54): a study's design by name (its dataset, task, problems in the order
    # shown, sessions, instructions problem, "I don't know", time limit), as JSON.
    """
    CREATE TABLE IF NOT EXISTS studies (
        name TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        design TEXT NOT NULL
    );
    """,
    # A study's participants and their answers (issue 54): a pseudonym, the hash of its link token
    # (the token itself is shown once and never kept), the participant's run; each answer as given,
    # with when its problem was first shown and when it was answered.
    """
    CREATE TABLE IF NOT EXISTS study_participants (
        study TEXT NOT NULL REFERENCES studies(name),
        pseudonym TEXT NOT NULL,
        token_sha256 TEXT NOT NULL UNIQUE,
        run_id TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (study, pseudonym)
    );
    CREATE TABLE IF NOT EXISTS study_answers (
        study TEXT NOT NULL,
        pseudonym TEXT NOT NULL,
        problem TEXT NOT NULL,
        shown_at REAL NOT NULL,
        answered_at REAL,
        answer TEXT,
        PRIMARY KEY (study, pseudonym, problem)
    );
    """,
    # An expert's verdicts on a study's free-form answers (issue 54), so the judging can be read
    # against them as paper 003 read its judge against two experts.
    """
    CREATE TABLE IF NOT EXISTS study_labels (
        study TEXT NOT NULL,
        expert TEXT NOT NULL,
        run_id TEXT NOT NULL,
        problem TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        ok INTEGER NOT NULL,
        labelled_at REAL NOT NULL,
        PRIMARY KEY (study, expert, run_id, problem, attempt)
    );
    """,
    # Prompt caching (issue 51): of each call's input tokens, those read from and written to the
    # provider's prompt cache, so a run reports its cached share and its cost as billed.
    """
    ALTER TABLE calls ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE calls ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
    """,
)
CALL_FIELDS = tuple(CallTrace.model_fields)
"""The `calls` columns that hold a `CallTrace`, in its field order."""
JSON_CALL_FIELDS = {"images", "parsed"}
ITEM_COLUMNS = (
    "run_id", "problem", "attempt", "status", "answer", "answer_text", "parse_status", "correct", "error",
    "finished_at", "retryable",
)  # fmt: skip
VERDICT_FIELDS = (
    "judge",
    "label",
    "raw_text",
    "prompt",
    "reason",
    "input_tokens",
    "output_tokens",
    "cost_usd",
)


def counted_judging_of(run: str) -> str:
    """SQL for the name of the judging that counts for the run `run` (an SQL expression): the one
    chosen (`counted_judgings`: the first complete, or one named) while its decisions are stored,
    else the first. (`+c.judging` drops the column's text affinity, so the comparison finds the
    decision through the `decisions_by_judging` index, whose expression has none.)"""
    return f"""COALESCE((SELECT c.judging FROM counted_judgings c WHERE c.run_id = {run} AND EXISTS (
        SELECT 1 FROM decisions k WHERE k.run_id = c.run_id AND k.judging || '@' || k.policy = +c.judging)),
    (SELECT f.judging || '@' || f.policy FROM decisions f WHERE f.run_id = {run}
     ORDER BY f.decided_at LIMIT 1))"""


COUNTED_JUDGING = counted_judging_of("i.run_id")
"""SQL for `items i`: the name of the judging that counts for its run (judges and style, and policy)."""
ITEM_SOLVED = f"""(i.correct = 1 OR EXISTS (
    SELECT 1 FROM decisions d
    WHERE d.run_id = i.run_id AND d.problem = i.problem AND d.attempt = i.attempt AND d.ok = 1
    AND d.judging || '@' || d.policy = COALESCE(:judging, {COUNTED_JUDGING})))"""
"""SQL for `items i`: a classification answer that is correct, or a free-form answer accepted by the
judging named `:judging`, or when that is NULL by the judging that counts for the run
(`COUNTED_JUDGING`: a later judging changes no score until it is chosen)."""
LAST_STOP = """(SELECT c.stop FROM calls c WHERE c.run_id = i.run_id AND c.problem = i.problem
    AND c.attempt = i.attempt ORDER BY c.seq DESC LIMIT 1)"""
"""SQL for `items i`: how its last call stopped, the call its answer came from (NULL for none). An
earlier call a strategy got past (a refused describe step, say) does not decide the item."""
REFUSAL_LIST = ", ".join(f"'{stop}'" for stop in REFUSAL_STOPS)
ITEM_REFUSAL = f"({LAST_STOP} IN ({REFUSAL_LIST}))"
"""SQL for `items i`: its answer is a refusal or a block (its last call stopped so): no judge sees it."""
ITEM_SCORED = f"""(i.status = 'done' AND (i.correct IS NOT NULL OR {ITEM_REFUSAL} OR EXISTS (
    SELECT 1 FROM decisions d
    WHERE d.run_id = i.run_id AND d.problem = i.problem AND d.attempt = i.attempt
    AND d.judging || '@' || d.policy = COALESCE(:judging, {COUNTED_JUDGING}))))"""
"""SQL for `items i`: the item has a score, by its strategy kind's one rule. An exactly scored
answer scores itself (`correct`; a reply that did not parse is wrong); a free-form answer has a score
only once the counting judging decided it, whatever its format, or when it is a refusal (unsolved,
never judged). A failed item has none: it is counted apart, outside n."""
ITEM_STOP = f"""(CASE {LAST_STOP} {
    " ".join(f"WHEN '{kind}' THEN '{STOP_WORDS[kind]}'" for kind in STOP_KINDS)
} END)"""
"""SQL for `items i`: refused, blocked or cut off where its last call stopped so (the same rule that
keeps a refusal from the judges, `ITEM_REFUSAL`); NULL for none."""
ITEM_OUTCOME = f"""(CASE WHEN i.status = 'failed' THEN 'failed' WHEN {ITEM_SOLVED} THEN 'solved'
    ELSE COALESCE({ITEM_STOP}, CASE WHEN i.parse_status = 'failed' AND i.correct = 0 THEN 'format error'
    WHEN {ITEM_SCORED} THEN 'wrong' ELSE 'unjudged' END) END)"""
"""SQL for `items i`: its `ItemOutcome`. An unsolved item whose last call was refused, blocked or cut
off is counted as that, apart from format errors and wrong answers (it still counts as unsolved). A
format error is an exactly scored reply that did not parse; a free-form answer's format is shown
beside its verdict (`parse_status`), never as one."""
SOLVED_ITEMS = f"""SELECT COUNT(*) FROM items i WHERE i.run_id = :run_id AND i.status = 'done'
    AND {ITEM_SOLVED}"""
SCORED_ITEMS = f"""SELECT COUNT(*) FROM items i WHERE i.run_id = :run_id AND i.status = 'done'
    AND {ITEM_SCORED}"""


RUN_ID_PREFIX = "run-%Y%m%d-%H%M%S-"
RUN_ID = re.compile(r"run-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}")
"""A stored run's id: its creation time and six hex digits."""


@dataclass(frozen=True)
class Judging:
    """One judging of a run: its name (`STYLE|JUDGE,...@POLICY`), when it ended, what it decided.

    A name holds every judge's full spec, local servers' URLs included, so it can run to hundreds
    of characters (issue 32): `short_id` is a stable handle `--judging` takes in its place, and
    `label` says what the judging is in a few words."""

    name: str
    decided_at: float
    items: int
    accepted: int

    @property
    def short_id(self) -> str:
        return judging_id(self.name)

    @property
    def judged(self) -> str:
        """The name without its policy (`STYLE|JUDGE,...`), as the decisions and verdicts store it."""
        return judging_parts(self.name)[0]

    @property
    def policy(self) -> str:
        return judging_parts(self.name)[1]

    @property
    def style(self) -> str:
        return self.judged.partition("|")[0]

    @property
    def judges(self) -> list[str]:
        """The judges' specs, in the order the judging named them."""
        return [judge for judge in self.judged.partition("|")[2].split(",") if judge]

    @property
    def panel(self) -> str:
        """The prompt style and how many judges: `strict · 2 judges`."""
        count = len(self.judges)
        return f"{self.style} · {count} judge{'s' if count != 1 else ''}"

    @property
    def label(self) -> str:
        """Style, number of judges and policy: `strict · 2 judges · vote:2`."""
        return f"{self.panel} · {self.policy}"


FIRST_COMPLETE = "the first complete judging"
NAMED = "named with `bongard runs count`"
PROVISIONAL = "the first, until a judging is complete"
REPLACED = "the same judges, in place of the policy"


@dataclass(frozen=True)
class CountedJudging:
    """The judging a run's counts use, and how it came to: the first that decided every answer
    (`FIRST_COMPLETE`), one named (`NAMED`), or for now the first (`PROVISIONAL`)."""

    judging: Judging
    how: str


def judging_parts(name: str) -> tuple[str, str]:
    """A judging's name (`STYLE|JUDGE,...@POLICY`) as its judges and style, and its policy."""
    judged, _, policy = name.rpartition("@")  # a policy holds no @; a judge's URL may
    return judged, policy


def judging_id(name: str) -> str:
    """A judging's short, stable handle: `j-` and the first 6 hex digits of its name's SHA-256."""
    return "j-" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:6]


class StoreError(BongardError):
    """The store cannot give what was asked (no such run, a run being run elsewhere), or its file
    fails (`StoreFileError`)."""


class StoreFileError(SQLiteFileError, StoreError):
    """The store's file cannot be opened, read or written (locked, corrupt, disk full, read-only);
    nothing is half-written."""


def explain(path: Path, error: sqlite3.Error | OSError) -> StoreFileError:
    """A store error that says what happened to which file and what to do."""
    return StoreFileError(STORE, path, error)


RunStatus = Literal["running", "interrupted", "complete", "partial", "failed"]
RESUME_HINT = "bongard run --resume {run_id}"


def this_process() -> str:
    """The owner name a run holds while this process runs it: `host:pid`."""
    return f"{socket.gethostname()}:{os.getpid()}"


def process_alive(owner: str | None) -> bool:
    """Whether the process `host:pid` that holds a run still runs (a process elsewhere counts as alive)."""
    if not owner:
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


def run_status(planned: int | None, stored: int, failed: int, finished: bool, held: bool) -> RunStatus:
    """running: a live process holds it; interrupted: items it planned are missing; partial: all are
    stored, some done and some failed (`bongard run` exits 3; `--resume RUN --retry-errors`); failed:
    all stored, none done (exit 4); complete: every planned item done (exit 0)."""
    if held:
        return "running"
    if (planned is not None and stored < planned) or (planned is None and not finished):
        return "interrupted"
    if not failed:
        return "complete"
    return "partial" if stored > failed else "failed"


@dataclass(frozen=True)
class RunSummary:
    id: str
    created_at: float
    finished_at: float | None
    config: dict[str, Any]
    status: RunStatus
    planned: int | None
    """Items the run set out to solve (problems x attempts); None for runs stored before it was kept."""
    items: int
    done: int
    failed: int
    """Items that failed: counted apart, outside `scored`."""
    retryable: int
    """Failed items a retry can help (`--retry-errors`); the others fail the same way again."""
    solved: int
    scored: int
    """Done items with a score: exactly scored (an unparseable reply is wrong), or free-form and
    decided by the counted judging. An unjudged free-form answer has none, so a run nobody judged has
    `solved` 0 of `scored` 0."""
    format_errors: int
    """Done, exactly scored items whose reply did not parse (and no call stopped short): wrong
    answers, counted apart so a reader sees why. A free-form answer without `Left:`/`Right:` lines is
    not one: judges decide it."""
    stopped: dict[str, int]
    """Unsolved items by why a call stopped short (`refused`, `blocked`, `cut off`), counted apart
    from format errors and wrong answers: only the kinds that occurred."""
    calls: int
    cached_calls: int
    tokens: int
    cost_usd: float | None
    """Every solving call's cost, failed items' included; None when some call had no price."""
    judge_verdicts: int
    judge_cost_usd: float | None
    """Every judging's judge calls; None when some judge had no price."""
    input_tokens: int = 0
    cache_read_tokens: int = 0
    """Of the input tokens, those the providers read from their prompt caches."""
    cache_write_tokens: int = 0

    @property
    def solved_text(self) -> str:
        """`12 solved`, `12 solved of 30 scored (18 unjudged)`, or `unjudged`: never a bare 0 for a
        run whose answers nobody has judged."""
        if self.done and not self.scored:
            return "unjudged"
        unjudged = self.done - self.scored
        return f"{self.solved} solved" + (
            f" of {self.scored} scored ({unjudged} unjudged)" if unjudged else ""
        )

    @property
    def unsolved_text(self) -> str:
        """Why items went unsolved, beside the wrong answers: `2 format errors, 1 refused, 3 cut off`."""
        return ", ".join(
            [f"{self.format_errors} format errors", *(f"{n} {w}" for w, n in self.stopped.items())]
        )

    @property
    def total_cost_usd(self) -> float | None:
        if self.cost_usd is None or self.judge_cost_usd is None:
            return None
        return self.cost_usd + self.judge_cost_usd

    def as_json(self) -> dict[str, Any]:
        return {**self.__dict__}


class ResultsStore:
    def __init__(self, path: Path, busy_timeout_s: float = 30.0) -> None:
        """Open (creating and migrating) the store; a writer waits `busy_timeout_s` for another's lock."""
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                path, check_same_thread=False, timeout=busy_timeout_s, isolation_level=None
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA foreign_keys=ON")
        except (sqlite3.Error, OSError) as error:
            raise explain(path, error) from None
        self._migrate()

    def _migrate(self) -> None:
        """Bring the schema up to date. An up-to-date store takes no write lock (so it opens while a
        run writes); otherwise the version is re-read inside the write lock, so two processes opening
        a new store at once cannot both create it."""
        with self.reading() as db:
            if db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS):
                return
        with self.transaction() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in script.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {number}")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All or nothing: any failure rolls the whole transaction back."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                self._db.execute("COMMIT")
            except sqlite3.Error as error:
                self._rollback()
                raise explain(self.path, error) from None
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._db
            except sqlite3.Error as error:
                raise explain(self.path, error) from None

    def data_version(self) -> int:
        """SQLite's count of changes other connections committed, as this connection sees it: equal
        while the store is unchanged (a reader's cache key)."""
        with self.reading() as db:
            return int(db.execute("PRAGMA data_version").fetchone()[0])

    def create_run(self, config: dict[str, Any], toolkit_version: str) -> str:
        run_id = time.strftime(RUN_ID_PREFIX) + uuid.uuid4().hex[:6]
        with self.transaction() as db:
            db.execute(
                "INSERT INTO runs (id, created_at, toolkit_version, config) VALUES (?, ?, ?, ?)",
                (run_id, time.time(), toolkit_version, json.dumps(config, sort_keys=True)),
            )
        return run_id

    def resolve_run(self, run: str, *, resumable: bool = False) -> str:
        """A run id, accepting `latest` for the newest run. `resumable`: a run no other live process
        holds, so `latest` skips the runs being run and a named one being run is refused."""
        with self.reading() as db:
            if run == "latest":
                rows = db.execute("SELECT id, owner FROM runs ORDER BY created_at DESC").fetchall()
            else:
                rows = db.execute("SELECT id, owner FROM runs WHERE id = ?", (run,)).fetchall()
        if not rows:
            raise StoreError(f"no run {run!r} in {self.path}" + (" (no runs yet)" if run == "latest" else ""))
        if not resumable:
            return str(rows[0][0])
        free = [str(run_id) for run_id, owner in rows if not _held_elsewhere(owner)]
        if not free:
            run_id, owner = rows[0]
            raise StoreError(
                _held_message(str(run_id), str(owner))
                + ("; every stored run is being run" if run == "latest" else "")
            )
        return free[0]

    def run_config(self, run_id: str) -> dict[str, Any]:
        with self.reading() as db:
            row = db.execute("SELECT config FROM runs WHERE id = ?", (run_id,)).fetchone()
        config: dict[str, Any] = json.loads(row[0])
        return config

    def finished_items(self, run_id: str) -> set[tuple[str, int]]:
        """(problem, attempt) pairs already done (failed ones are retried only on request)."""
        with self.reading() as db:
            rows = db.execute(
                "SELECT problem, attempt FROM items WHERE run_id = ? AND status = 'done'", (run_id,)
            )
            return {(str(p), int(a)) for p, a in rows}

    def failed_items(self, run_id: str) -> set[tuple[str, int]]:
        with self.reading() as db:
            rows = db.execute(
                "SELECT problem, attempt FROM items WHERE run_id = ? AND status = 'failed'", (run_id,)
            )
            return {(str(p), int(a)) for p, a in rows}

    def save_item(
        self,
        run_id: str,
        problem: str,
        attempt: int,
        answer: Answer | None,
        error: str | None,
        failed_trace: Sequence[CallTrace] = (),
        retryable: bool = True,
    ) -> None:
        """One item and its calls, in one transaction: the answer without its trace, the trace as rows
        (for a failed item, the calls it made before failing: they were paid for, and whether a
        retry can help)."""
        with self.transaction() as db:
            db.execute(
                "DELETE FROM calls WHERE run_id = ? AND problem = ? AND attempt = ?",
                (run_id, problem, attempt),
            )
            db.execute(
                _insert("items", ITEM_COLUMNS, replace=True),
                (
                    run_id,
                    problem,
                    attempt,
                    "failed" if error else "done",
                    None if answer is None else answer.model_dump_json(exclude={"trace"}),
                    None if answer is None else answer.text,
                    None if answer is None else answer.parse_status,
                    None if answer is None or answer.correct is None else int(answer.correct),
                    error,
                    time.time(),
                    None if not error else int(retryable),
                ),
            )
            db.executemany(
                _insert("calls", ("run_id", "problem", "attempt", "seq", *CALL_FIELDS)),
                [
                    (run_id, problem, attempt, seq, *_call_row(call))
                    for seq, call in enumerate(answer.trace if answer else failed_trace)
                ],
            )

    def hold_run(self, run_id: str, planned: int) -> None:
        """This process runs the run now, planning `planned` items in all. One process at a time: a
        run another live process holds is refused, naming it; a killed holder's run is taken over.
        Checked and taken in one write transaction, so two processes cannot both take it."""
        with self.transaction() as db:
            row = db.execute("SELECT owner FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise StoreError(f"no run {run_id!r} in {self.path}")
            if _held_elsewhere(row[0]):
                raise StoreError(_held_message(run_id, row[0]))
            db.execute(
                "UPDATE runs SET planned = ?, owner = ? WHERE id = ?", (planned, this_process(), run_id)
            )

    def release_run(self, run_id: str, *, finished: bool) -> None:
        """This process holds the run no more; `finished`: its pass over the pending items ended.
        A run another process has taken over since is left to it."""
        with self.transaction() as db:
            db.execute(
                "UPDATE runs SET owner = NULL, finished_at = CASE WHEN ? THEN ? ELSE finished_at END "
                "WHERE id = ? AND (owner IS NULL OR owner = ?)",
                (finished, time.time(), run_id, this_process()),
            )

    def exclude_problems(self, run_id: str, config: dict[str, Any], problems: Sequence[str]) -> None:
        """Drop `problems` (items' problem keys) from a run for good: its configuration becomes `config`
        (which names them, so later resumes plan without them) and their stored items leave its counts;
        the calls they paid for stay in its cost."""
        with self.transaction() as db:
            db.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(config), run_id))
            db.executemany(
                "DELETE FROM items WHERE run_id = ? AND problem = ?", [(run_id, key) for key in problems]
            )

    def provenance(self, run_id: str) -> list[dict[str, Any]]:
        """The run's sessions, oldest first: code, packages, prompts and data (`graphs.runs.provenance`)."""
        with self.reading() as db:
            row = db.execute("SELECT provenance FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id}")
        sessions: list[dict[str, Any]] = json.loads(row[0])
        return sessions

    def save_provenance(self, run_id: str, sessions: list[dict[str, Any]]) -> None:
        with self.transaction() as db:
            db.execute("UPDATE runs SET provenance = ? WHERE id = ?", (json.dumps(sessions), run_id))

    def answer_records(self, run_id: str) -> list[tuple[str, int, Answer]]:
        """Every done item's answer with its trace, in the order the items finished."""
        with self.reading() as db:
            items = db.execute(
                "SELECT problem, attempt, answer FROM items WHERE run_id = ? AND status = 'done' "
                "ORDER BY rowid",
                (run_id,),
            ).fetchall()
            calls = db.execute(
                f"SELECT problem, attempt, {', '.join(CALL_FIELDS)} FROM calls WHERE run_id = ? "
                "ORDER BY problem, attempt, seq",
                (run_id,),
            ).fetchall()
        traces: dict[tuple[str, int], list[CallTrace]] = {}
        for problem, attempt, *values in calls:
            traces.setdefault((problem, attempt), []).append(_call_record(values))
        return [
            (str(p), int(a), Answer.model_validate({**json.loads(answer), "trace": traces.get((p, a), [])}))
            for p, a, answer in items
        ]

    def answers_of(self, run_id: str, items: Sequence[tuple[str, int]]) -> dict[tuple[str, int], Answer]:
        """The answers of these done items only, without their traces: what a page of a run shows,
        read in time and memory independent of the run's size."""
        with self.reading() as db:
            rows = _rows_of_items(
                db,
                "SELECT problem, attempt, answer FROM items WHERE run_id = ? AND status = 'done' AND {among}",
                run_id,
                set(items),
            )
            return {item: Answer.model_validate_json(answer) for item, (answer,) in rows}

    def calls_of(
        self, run_id: str, items: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], list[CallTrace]]:
        """The calls of these items (done or failed), each item's in order: what an export writes a
        few items at a time, so it never holds a large run's traces at once."""
        found: dict[tuple[str, int], list[CallTrace]] = {}
        with self.reading() as db:
            for item, values in _rows_of_items(
                db,
                f"SELECT problem, attempt, {', '.join(CALL_FIELDS)} FROM calls "
                "WHERE run_id = ? AND {among} ORDER BY problem, attempt, seq",
                run_id,
                set(items),
            ):
                found.setdefault(item, []).append(_call_record(values))
        return found

    def call_totals(self, run_id: str) -> dict[str, CallTotals]:
        """Tokens and cost of every call of the run (failed items' included), per agent."""
        with self.reading() as db:
            rows = db.execute(
                "SELECT agent, SUM(input_tokens), SUM(output_tokens), "
                "CASE WHEN COUNT(cost_usd) = COUNT(*) THEN TOTAL(cost_usd) END "
                "FROM calls WHERE run_id = ? GROUP BY agent ORDER BY MIN(rowid)",
                (run_id,),
            ).fetchall()
        return {str(agent): CallTotals(int(i), int(o), c) for agent, i, o, c in rows}

    def paid_usage(self, run_id: str) -> list[tuple[str, int, int, int, int, float | None]]:
        """Each paid call of the run (a cached reply is not one): agent, input, output, cache read
        and cache write tokens, and its stored cost (None: unknown)."""
        with self.reading() as db:
            rows = db.execute(
                "SELECT agent, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd "
                "FROM calls WHERE run_id = ? AND cache_hit = 0 ORDER BY rowid",
                (run_id,),
            ).fetchall()
        return [(str(a), int(i), int(o), int(r), int(w), c) for a, i, o, r, w, c in rows]

    def sends_images(self, run_id: str) -> bool:
        """Whether any call of the run sent an image."""
        with self.reading() as db:
            row = db.execute(
                "SELECT EXISTS (SELECT 1 FROM calls WHERE run_id = ? AND images <> '[]')", (run_id,)
            ).fetchone()
        return bool(row[0])

    def delete_run(self, run_id: str) -> None:
        """The run and everything stored for it, in one transaction."""
        with self.transaction() as db:
            delete_run_rows(db, run_id)

    def item_errors(self, run_id: str) -> dict[tuple[str, int], str]:
        """Each failed item's error."""
        with self.reading() as db:
            rows = db.execute(
                "SELECT problem, attempt, error FROM items WHERE run_id = ? AND status = 'failed'", (run_id,)
            ).fetchall()
        return {(str(p), int(a)): str(e) for p, a, e in rows}

    def item_calls(self, run_id: str, problem: str, attempt: int) -> list[CallTrace]:
        """One item's calls in order: a done item's trace, or what a failed item paid for."""
        with self.reading() as db:
            rows = db.execute(
                f"SELECT {', '.join(CALL_FIELDS)} FROM calls "
                "WHERE run_id = ? AND problem = ? AND attempt = ? ORDER BY seq",
                (run_id, problem, attempt),
            ).fetchall()
        return [_call_record(values) for values in rows]

    def item_decision(
        self, run_id: str, problem: str, attempt: int, judging: str | None = None
    ) -> tuple[bool, list[Verdict]] | None:
        """The named judging's (else the one that counts for the run) decision on one item and its
        verdicts; None when that judging decided nothing about it."""
        return self.decisions_of(run_id, [(problem, attempt)], judging).get((problem, attempt))

    def decisions_of(
        self, run_id: str, items: Sequence[tuple[str, int]], judging: str | None = None
    ) -> dict[tuple[str, int], tuple[bool, list[Verdict]]]:
        """`item_decision` of these items, read together (an export reads a run a few items at a
        time); the items that judging did not decide are left out."""
        wanted = set(items)
        verdicts: dict[tuple[tuple[str, int], str], list[Verdict]] = {}
        with self.reading() as db:
            (chosen,) = db.execute(
                f"SELECT COALESCE(:judging, {counted_judging_of(':run_id')})",
                {"run_id": run_id, "judging": judging},
            ).fetchone()
            for item, (name, *values) in _rows_of_items(
                db,
                f"SELECT problem, attempt, judging, {', '.join(VERDICT_FIELDS)} FROM verdicts "
                "WHERE run_id = ? AND {among} ORDER BY rowid",
                run_id,
                wanted,
            ):
                verdicts.setdefault((item, name), []).append(
                    Verdict.model_validate(dict(zip(VERDICT_FIELDS, values, strict=True)))
                )
            decided = _rows_of_items(
                db,
                "SELECT problem, attempt, judging, ok FROM decisions WHERE run_id = ? AND {among} "
                "AND judging || '@' || policy = ?",
                run_id,
                wanted,
                chosen,
            )
            return {item: (bool(ok), verdicts.get((item, name), [])) for item, (name, ok) in decided}

    def save_judging(
        self,
        run_id: str,
        problem: str,
        attempt: int,
        judging: str,
        policy: str,
        ok: bool,
        verdicts: Sequence[Verdict],
    ) -> None:
        """A judging's decision on one item, when it was made, and every judge's verdict behind it."""
        item = ("run_id", "problem", "attempt", "judging")
        with self.transaction() as db:
            db.execute(
                _insert("decisions", (*item, "policy", "ok", "decided_at"), replace=True),
                (run_id, problem, attempt, judging, policy, int(ok), time.time()),
            )
            db.executemany(
                _insert("verdicts", (*item, *VERDICT_FIELDS), replace=True),
                [
                    (run_id, problem, attempt, judging, *(getattr(v, name) for name in VERDICT_FIELDS))
                    for v in verdicts
                ],
            )

    def judged_items(self, run_id: str) -> int:
        """How many of the run's items some judging has decided."""
        with self.reading() as db:
            query = "SELECT COUNT(DISTINCT problem || '#' || attempt) FROM decisions WHERE run_id = ?"
            return int(db.execute(query, (run_id,)).fetchone()[0])

    def judgings(self, run_id: str) -> list[Judging]:
        """The run's judgings, oldest first (`counted_judging` says which one counts)."""
        with self.reading() as db:
            rows = db.execute(
                "SELECT judging || '@' || policy, MAX(decided_at), COUNT(*), COALESCE(SUM(ok), 0) "
                "FROM decisions WHERE run_id = ? GROUP BY judging, policy ORDER BY MAX(decided_at)",
                (run_id,),
            ).fetchall()
        return [Judging(str(name), float(at), int(n), int(ok)) for name, at, n, ok in rows]

    def counted_judging(self, run_id: str) -> CountedJudging | None:
        """The judging the run's counts use, and how it came to count; None while none is stored."""
        with self.reading() as db:
            (name,) = db.execute(f"SELECT {counted_judging_of(':run_id')}", {"run_id": run_id}).fetchone()
            chosen = db.execute(
                "SELECT judging, how FROM counted_judgings WHERE run_id = ?", (run_id,)
            ).fetchone()
        judging = next((j for j in self.judgings(run_id) if j.name == name), None)
        if judging is None:
            return None
        return CountedJudging(judging, chosen[1] if chosen is not None and chosen[0] == name else PROVISIONAL)

    def count_judging(self, run_id: str, name: str, how: str) -> None:
        """Make the judging `name` the one the run's counts use, saying `how` it was chosen."""
        with self.transaction() as db:
            db.execute(
                _insert("counted_judgings", ("run_id", "judging", "how", "chosen_at"), replace=True),
                (run_id, name, how, time.time()),
            )

    def chosen_judging(self, run_id: str) -> str | None:
        """The name of the judging chosen to count for the run; None where none was (the first
        counts, for now)."""
        with self.reading() as db:
            row = db.execute("SELECT judging FROM counted_judgings WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else str(row[0])

    def summary(self, run_id: str) -> RunSummary:
        with self.reading() as db:
            created, finished, config, planned, owner = db.execute(
                "SELECT created_at, finished_at, config, planned, owner FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            items, done, failed, retryable = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(status = 'done'), 0), COALESCE(SUM(status = 'failed'), 0), "
                "COALESCE(SUM(status = 'failed' AND COALESCE(retryable, 1)), 0) FROM items WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            solved = db.execute(SOLVED_ITEMS, {"run_id": run_id, "judging": None}).fetchone()[0]
            scored = db.execute(SCORED_ITEMS, {"run_id": run_id, "judging": None}).fetchone()[0]
            verdicts, judge_cost, unpriced = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(cost_usd), 0), COALESCE(SUM(cost_usd IS NULL), 0) "
                "FROM verdicts WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            outcomes = dict(
                db.execute(
                    f"SELECT {ITEM_OUTCOME} AS outcome, COUNT(*) FROM items i WHERE i.run_id = :run_id "
                    "GROUP BY outcome",
                    {"run_id": run_id, "judging": None},
                ).fetchall()
            )
            calls, cached, tokens, cost, unknown, inputs, read, written = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(cache_hit), 0), "
                "COALESCE(SUM(input_tokens + output_tokens), 0), COALESCE(SUM(cost_usd), 0), "
                "COALESCE(SUM(cost_usd IS NULL), 0), COALESCE(SUM(input_tokens), 0), "
                "COALESCE(SUM(cache_read_tokens), 0), COALESCE(SUM(cache_write_tokens), 0) "
                "FROM calls WHERE run_id = ?",
                (run_id,),
            ).fetchone()
        return RunSummary(
            id=run_id,
            created_at=created,
            finished_at=finished,
            config=json.loads(config),
            status=run_status(planned, done + failed, failed, finished is not None, process_alive(owner)),
            planned=planned,
            items=items,
            done=done,
            failed=failed,
            retryable=retryable,
            solved=solved,
            scored=scored,
            format_errors=int(outcomes.get("format error", 0)),
            stopped={word: int(outcomes[word]) for word in STOPPED_OUTCOMES if outcomes.get(word)},
            calls=calls,
            cached_calls=cached,
            tokens=tokens,
            cost_usd=None if unknown else float(cost),
            judge_verdicts=verdicts,
            judge_cost_usd=None if unpriced else float(judge_cost),
            input_tokens=inputs,
            cache_read_tokens=read,
            cache_write_tokens=written,
        )

    def run_ids(self) -> list[str]:
        with self.reading() as db:
            return [str(r[0]) for r in db.execute("SELECT id FROM runs ORDER BY created_at")]

    def close(self) -> None:
        with self._lock:
            self._db.close()


@dataclass(frozen=True)
class CallTotals:
    """Calls' tokens summed, and their cost: None (unknown) where any call had no price, never a sum
    that reads as known."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0


class ReadOnlyStore(ResultsStore):
    """The results store opened read-only: a `mode=ro` URI connection (immutable where the file cannot
    be written) with `query_only` on, so every reading method of `ResultsStore` works and any write
    fails (the viewer, and every reading command on a read-only workspace). It never migrates: a store of
    another schema version is refused with what to do."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(
                reading_uri(path), uri=True, check_same_thread=False, isolation_level=None
            )
            self._db.execute("PRAGMA query_only = ON")
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.Error as error:
            raise explain(path, error) from None
        if version != len(MIGRATIONS):
            self._db.close()
            raise StoreError(
                f"results store {path}: schema version {version}, this toolkit reads {len(MIGRATIONS)}: "
                + (
                    "it was written by a newer bongard-agents; view it with that version"
                    if version > len(MIGRATIONS)
                    else "open it once with `bongard runs list` (which upgrades it), then view it"
                )
            )


def delete_run_rows(db: sqlite3.Connection, run_id: str) -> None:
    """Delete a run and everything stored for it, inside the caller's transaction."""
    for table in ("counted_judgings", "verdicts", "decisions", "calls", "items", "runs"):
        db.execute(f"DELETE FROM {table} WHERE {'id' if table == 'runs' else 'run_id'} = ?", (run_id,))


def _held_elsewhere(owner: str | None) -> bool:
    """Whether another live process holds a run (this process's own hold is no obstacle to it)."""
    return owner != this_process() and process_alive(owner)


def _held_message(run_id: str, owner: str) -> str:
    host, _, pid = owner.rpartition(":")
    return (
        f"run {run_id} is being run by process {pid} on host {host}: wait for it to end or stop it "
        "(a run whose process was killed is taken over)"
    )


def _insert(table: str, columns: Sequence[str], replace: bool = False) -> str:
    """An INSERT naming its columns, so a record's values never depend on the table's column order."""
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def _call_row(call: CallTrace) -> list[Any]:
    """A `CallTrace` as `calls` column values (lists and objects as JSON, flags as 0/1)."""
    values = call.model_dump(mode="json")
    return [json.dumps(values[name]) if name in JSON_CALL_FIELDS else values[name] for name in CALL_FIELDS]


def _rows_of_items(
    db: sqlite3.Connection, sql: str, run_id: str, items: set[tuple[str, int]], *after: object
) -> Iterator[tuple[tuple[str, int], list[Any]]]:
    """The rows of `sql` for these items: `sql` selects `problem, attempt, ...` where `run_id = ?`,
    `{among}` (a `problem IN` list, `SQL_VARIABLES` problems a statement) and any `after` values; each
    row as its item and the rest, other attempts of the problems left out."""
    problems = sorted({problem for problem, _ in items})
    for start in range(0, len(problems), SQL_VARIABLES):
        chunk = problems[start : start + SQL_VARIABLES]
        among = f"problem IN ({', '.join('?' * len(chunk))})"
        for problem, attempt, *rest in db.execute(sql.format(among=among), (run_id, *chunk, *after)):
            if (item := (str(problem), int(attempt))) in items:
                yield item, rest


def _call_record(values: Sequence[Any]) -> CallTrace:
    row = dict(zip(CALL_FIELDS, values, strict=True))
    for name in JSON_CALL_FIELDS:
        row[name] = json.loads(row[name]) if row[name] is not None else None
    row["images"] = row["images"] or []
    return CallTrace.model_validate(row)
