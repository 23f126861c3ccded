"""What the viewer reads from the results store, through a read-only connection and nothing else.

Every count comes from the toolkit's own rules: an item's outcome is the store's `ITEM_OUTCOME`
SQL (by the judging that counts for the run, `results.store.COUNTED_JUDGING`), a run's row by
`results.report_rows.comparison` (no pandas), a comparison by `write_report`, agreement by
`judges.agreement`. pandas, SciPy and the agreement statistics are imported when a page needs them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from datasets_io.errors import BongardError
from datasets_io.images import natural_key
from datasets_io.records import (
    STOPPED_OUTCOMES,
    VERDICT_LABELS,
    Answer,
    CallTrace,
    ItemOutcome,
    Verdict,
    VerdictLabel,
    format_note,
)
from results.counting import unscored_text
from results.store import (
    ITEM_OUTCOME,
    VERDICT_FIELDS,
    Judging,
    ResultsStore,
    RunSummary,
)

if TYPE_CHECKING:
    import pandas as pd


ItemVerdict = Literal["solved", "wrong", "unjudged", "failed"]
Shown = Literal["all", "solved", "unsolved", "wrong", "stopped", "unjudged", "failed"]
SHOWN: tuple[Shown, ...] = get_args(Shown)
"""The run page's filters: `unsolved` is every done item not solved (wrong or not judged yet);
`stopped` the unsolved items whose last call was refused, blocked or cut off."""
COMPARED_POLICIES = ("all", "any", "majority")


def _number(value: Any) -> float | None:
    """A table cell as a float; None for a missing value (None, NaN)."""
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


@dataclass(frozen=True)
class Rate:
    """A rate with its 95% Wilson interval; `value` None where nothing was scored."""

    value: float | None
    low: float | None
    high: float | None

    @classmethod
    def of(cls, row: Mapping[str, Any], key: str) -> Rate:
        return cls(_number(row.get(key)), _number(row.get(f"{key}_low")), _number(row.get(f"{key}_high")))

    def text(self) -> str:
        return f"{self.value_text()} {self.interval_text()}".strip()

    def value_text(self) -> str:
        return "-" if self.value is None else f"{self.value:.3f}"

    def interval_text(self) -> str:
        """`[low, high]`, or nothing where there is no interval."""
        if self.value is None or self.low is None or self.high is None:
            return ""
        return f"[{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class ResultRow:
    """One comparison row (`results.report_rows`), as plain values."""

    strategy: str
    model: str
    dataset: str
    problems: int
    n: int
    failed: int
    solved: int | None
    """None when nothing is scored (an unjudged free-form run): shown "unjudged" (or "-" when every
    problem failed), never 0."""
    accuracy: Rate
    image_accuracy: Rate
    tokens: int
    cost_usd: float | None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> ResultRow:
        n = int(row["n"])
        solved = _number(row["solved"]) if n else None
        cost = _number(row.get("cost_usd"))
        return cls(
            strategy=str(row["strategy"]),
            model=str(row["model"]),
            dataset=str(row["dataset"]),
            problems=int(row["problems"]),
            n=n,
            failed=int(row["failed"]),
            solved=None if solved is None else round(solved),
            accuracy=Rate.of(row, "accuracy"),
            image_accuracy=Rate.of(row, "image_accuracy"),
            tokens=int(row["tokens"]),
            cost_usd=cost,
        )

    @property
    def solved_text(self) -> str:
        return unscored_text(dataclasses.asdict(self)) if self.solved is None else str(self.solved)


def result_rows(table: pd.DataFrame) -> list[ResultRow]:
    return [ResultRow.of(row) for row in table.to_dict("records")]


@dataclass(frozen=True)
class RunRow:
    """A run on the runs page: its summary, its result row and the judging that counts."""

    summary: RunSummary
    result: ResultRow | None
    """None for a run with no stored item yet (or whose table could not be made: `result_error`)."""
    result_error: str | None
    judging: Judging | None
    """The judging the run's counts use."""
    judging_how: str | None
    """How that judging came to count (`results.store.CountedJudging.how`)."""
    judgings: int
    seconds: float | None
    """From creation to the end of the run, or to its last stored item (or now, while it runs)."""

    @property
    def roles(self) -> list[tuple[str, str]]:
        return sorted(self.summary.config.get("agents", {}).items())

    @property
    def strategy(self) -> str:
        return str(self.summary.config.get("strategy", "?"))

    @property
    def dataset(self) -> str:
        return str(self.summary.config.get("dataset", "?"))

    def matches(self, text: str) -> bool:
        words = [self.summary.id, self.strategy, self.dataset, *(spec for _, spec in self.roles)]
        return text.lower() in " ".join(words).lower()

    def as_json(self) -> dict[str, Any]:
        return {
            **self.summary.as_json(),
            "strategy": self.strategy,
            "dataset": self.dataset,
            "agents": dict(self.roles),
            "result": None if self.result is None else dataclasses.asdict(self.result),
            "solved_text": "-" if self.result is None else self.result.solved_text,
            "result_error": self.result_error,
            "judging": None if self.judging is None else self.judging.name,
            "judging_id": None if self.judging is None else self.judging.short_id,
            "judgings": self.judgings,
            "seconds": self.seconds,
        }


def run_results(store: ResultsStore, run_ids: Sequence[str]) -> tuple[dict[str, ResultRow], dict[str, str]]:
    """Each run's row of the comparison table (the runs apart, never pooled), and the runs whose
    table could not be made, with why."""
    from results.report_rows import ROW_KEY, comparison

    def rows_of(chosen: Sequence[str]) -> dict[str, ResultRow]:
        rows = comparison(store, list(chosen), by=("run_id", *ROW_KEY))
        return {str(row["run_id"]): ResultRow.of(row) for row in rows}

    if not run_ids:
        return {}, {}
    try:
        return rows_of(run_ids), {}
    except BongardError:  # one run spoils the frame of all: make them one by one
        results: dict[str, ResultRow] = {}
        errors: dict[str, str] = {}
        for run_id in run_ids:
            try:
                results |= rows_of([run_id])
            except BongardError as error:
                errors[run_id] = str(error)
        return results, errors


def run_rows(store: ResultsStore, run_ids: Sequence[str] | None = None) -> list[RunRow]:
    """The runs (by default every stored run, oldest first)."""
    run_ids = store.run_ids() if run_ids is None else run_ids
    results, errors = run_results(store, run_ids)
    with store.reading() as db:
        last_items = dict(db.execute("SELECT run_id, MAX(finished_at) FROM items GROUP BY run_id").fetchall())
    rows = []
    for run_id in run_ids:
        summary = store.summary(run_id)
        judgings = store.judgings(run_id)
        counted = store.counted_judging(run_id)
        end = summary.finished_at or (time.time() if summary.status == "running" else last_items.get(run_id))
        rows.append(
            RunRow(
                summary=summary,
                result=results.get(run_id),
                result_error=errors.get(run_id),
                judging=None if counted is None else counted.judging,
                judging_how=None if counted is None else counted.how,
                judgings=len(judgings),
                seconds=None if end is None else max(0.0, float(end) - summary.created_at),
            )
        )
    return rows


@dataclass(frozen=True)
class ItemRow:
    """One item (a problem's attempt) of a run, with its verdict under the judging the run's counts use."""

    problem: str
    attempt: int
    status: str
    outcome: ItemOutcome
    answer_text: str | None
    parse_status: str | None
    error: str | None
    finished_at: float
    calls: int
    tokens: int
    cost_usd: float | None

    @property
    def verdict(self) -> ItemVerdict:
        """Solved, wrong (whatever the reason), unjudged or failed."""
        return self.outcome if self.outcome in ("solved", "unjudged", "failed") else "wrong"

    @property
    def note(self) -> str | None:
        """Why a wrong item is wrong where that is more than a wrong answer: a format error, or a
        call refused, blocked or cut off; beside a free-form verdict, a reply without rule lines."""
        if self.outcome in ("solved", "wrong", "unjudged", "failed"):
            return format_note(self.outcome, self.parse_status)
        return self.outcome

    def shown(self, show: Shown) -> bool:
        return (
            show == "all"
            or self.verdict == show
            or (show == "unsolved" and self.verdict in ("wrong", "unjudged"))
            or (show == "stopped" and self.outcome in STOPPED_OUTCOMES)
        )


ITEM_ROWS = f"""
SELECT i.problem, i.attempt, i.status, i.answer_text, i.parse_status, i.error, i.finished_at,
       {ITEM_OUTCOME},
       (SELECT COUNT(*) FROM calls c
        WHERE c.run_id = i.run_id AND c.problem = i.problem AND c.attempt = i.attempt),
       (SELECT COALESCE(SUM(c.input_tokens + c.output_tokens), 0) FROM calls c
        WHERE c.run_id = i.run_id AND c.problem = i.problem AND c.attempt = i.attempt),
       (SELECT CASE WHEN COUNT(*) = COUNT(c.cost_usd) THEN COALESCE(SUM(c.cost_usd), 0) END FROM calls c
        WHERE c.run_id = i.run_id AND c.problem = i.problem AND c.attempt = i.attempt)
FROM items i WHERE i.run_id = :run_id AND (:problem IS NULL OR i.problem = :problem)
"""


def item_rows(store: ResultsStore, run_id: str, problem: str | None = None) -> list[ItemRow]:
    """The run's items (or one problem's attempts), problems in natural order."""
    with store.reading() as db:
        rows = db.execute(ITEM_ROWS, {"run_id": run_id, "problem": problem, "judging": None}).fetchall()
    items = [
        ItemRow(
            problem=str(p),
            attempt=int(a),
            status=str(status),
            outcome=cast(ItemOutcome, outcome),
            answer_text=text,
            parse_status=parse_status,
            error=error,
            finished_at=float(finished),
            calls=int(calls),
            tokens=int(tokens),
            cost_usd=None if cost is None else float(cost),
        )
        for p, a, status, text, parse_status, error, finished, outcome, calls, tokens, cost in rows
    ]
    return sorted(items, key=lambda item: (natural_key(item.problem), item.attempt))


@dataclass
class ItemJudging:
    """One judging's decision on an item, with every judge's verdict behind it."""

    judging: str
    policy: str
    ok: bool
    decided_at: float
    counts: bool
    """Whether this is the judging the run's counts use."""
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.judging}@{self.policy}"

    @property
    def shown(self) -> Judging:
        """The judging as the runs page names it (label, short id), with this decision's counts."""
        return Judging(self.name, self.decided_at, 1, int(self.ok))

    @property
    def votes(self) -> int:
        return sum(verdict.label == "ok" for verdict in self.verdicts)


@dataclass
class Attempt:
    """Everything stored of one attempt at a problem: its row, answer, calls in order and judgings."""

    row: ItemRow
    answer: Answer | None
    calls: list[CallTrace]
    judgings: list[ItemJudging]


def problem_attempts(store: ResultsStore, run_id: str, problem: str) -> list[Attempt]:
    """The problem's attempts in the run, each with its calls in the order they were made."""
    rows = item_rows(store, run_id, problem)
    counted = store.counted_judging(run_id)
    counting = None if counted is None else counted.judging.name
    with store.reading() as db:
        answers = dict(
            db.execute(
                "SELECT attempt, answer FROM items WHERE run_id = ? AND problem = ?", (run_id, problem)
            ).fetchall()
        )
        decisions = db.execute(
            "SELECT attempt, judging, policy, ok, decided_at FROM decisions WHERE run_id = ? AND problem = ? "
            "ORDER BY decided_at",
            (run_id, problem),
        ).fetchall()
        verdicts = db.execute(
            f"SELECT attempt, judging, {', '.join(VERDICT_FIELDS)} "
            "FROM verdicts WHERE run_id = ? AND problem = ? ORDER BY rowid",
            (run_id, problem),
        ).fetchall()
    judged: dict[tuple[int, str], list[Verdict]] = {}
    for attempt, judging, *fields in verdicts:
        verdict = Verdict.model_validate(dict(zip(VERDICT_FIELDS, fields, strict=True)))
        judged.setdefault((int(attempt), str(judging)), []).append(verdict)
    judgings: dict[int, list[ItemJudging]] = {}
    for attempt, judging, policy, ok, decided_at in decisions:
        judgings.setdefault(int(attempt), []).append(
            ItemJudging(
                judging=judging,
                policy=policy,
                ok=bool(ok),
                decided_at=float(decided_at),
                counts=f"{judging}@{policy}" == counting,
                verdicts=judged.get((int(attempt), str(judging)), []),
            )
        )
    return [
        Attempt(
            row=row,
            answer=Answer.model_validate(json.loads(text)) if (text := answers.get(row.attempt)) else None,
            calls=store.item_calls(run_id, problem, row.attempt),
            judgings=judgings.get(row.attempt, []),
        )
        for row in rows
    ]


def kappa_text(kappa: float, labels: AbstractSet[str]) -> str:
    """A kappa for reading: "undefined" where every rating is one label (chance agreement is 1, so
    kappa is 0/0 however an implementation returns it), else three decimals."""
    return "undefined" if len(labels) < 2 or math.isnan(kappa) else f"{kappa:.3f}"


@dataclass
class JudgingStats:
    """A judging of a run and the agreement of its judges, as `graphs.runs.judging.JudgingReport` shows it."""

    judging: Judging
    counts: str | None
    """How it came to count, where it is the judging the run's counts use; None for the others."""
    silent: dict[str, str]
    """Each judge that gave no verdict on most answers, and what to say of it (`judges.verdict.silence`)."""
    style: str
    policy: str
    judges: list[str]
    answers: int
    """Answers this judging decided."""
    rated: int
    """Of those, answers with a verdict from every judge (the agreement statistics' rows)."""
    per_judge: dict[str, dict[str, int]]
    accepted: dict[str, int]
    """Answers accepted under this judging's policy, then under all, any and majority."""
    unanimity: float | None
    fleiss: str | None
    cohen: list[tuple[str, str, str]]


def judging_stats(store: ResultsStore, run_id: str) -> list[JudgingStats]:
    """The run's judgings, oldest first (`counts` marks the one the run's counts use), each with its
    agreement statistics."""
    from judges.agreement import fleiss_kappa, pairwise_cohen, unanimity
    from judges.verdict import decide, silence

    judgings = store.judgings(run_id)
    counted = store.counted_judging(run_id)
    stats = []
    for judging in judgings:
        judged, policy, named = judging.judged, judging.policy, judging.judged.partition("|")[2]
        with store.reading() as db:
            rows = db.execute(
                "SELECT v.problem, v.attempt, v.judge, v.label FROM verdicts v JOIN decisions d "
                "ON d.run_id = v.run_id AND d.problem = v.problem AND d.attempt = v.attempt "
                "AND d.judging = v.judging WHERE v.run_id = ? AND v.judging = ? AND d.policy = ? "
                "ORDER BY v.rowid",
                (run_id, judged, policy),
            ).fetchall()
        by_item: dict[tuple[str, int], dict[str, VerdictLabel]] = {}
        for problem, attempt, judge, label in rows:
            by_item.setdefault((problem, attempt), {})[judge] = Verdict(judge=judge, label=label).label
        present = {judge for labels in by_item.values() for judge in labels}
        judges = sorted(present, key=lambda judge: (named.find(judge) < 0, named.find(judge), judge))
        per_judge: dict[str, dict[str, int]] = {j: {label: 0 for label in VERDICT_LABELS} for j in judges}
        for labels in by_item.values():
            for judge, label in labels.items():
                per_judge[judge][label] += 1
        policies = [policy, *(p for p in COMPARED_POLICIES if p != policy)]
        accepted = {
            p: sum(
                decide([Verdict(judge=j, label=label) for j, label in labels.items()], p).ok
                for labels in by_item.values()
            )
            for p in policies
        }
        matrix = [[labels[j] for j in judges] for labels in by_item.values() if set(labels) == set(judges)]
        seen = {label for row in matrix for label in row}
        several = bool(matrix) and len(judges) > 1
        cohen = []
        if several:
            columns = dict(zip(judges, zip(*matrix, strict=True), strict=True))
            for (a, b), kappa in pairwise_cohen(matrix, judges).items():
                cohen.append((a, b, kappa_text(kappa, {*columns[a], *columns[b]})))
        stats.append(
            JudgingStats(
                judging=judging,
                counts=counted.how if counted is not None and counted.judging == judging else None,
                silent={j: flag for j in judges if (flag := silence(per_judge[j])) is not None},
                style=judging.style,
                policy=policy,
                judges=judges,
                answers=judging.items,
                rated=len(matrix),
                per_judge=per_judge,
                accepted=accepted,
                unanimity=unanimity(matrix) if matrix else None,
                fleiss=kappa_text(fleiss_kappa(matrix), seen) if several else None,
                cohen=cohen,
            )
        )
    return stats


def fingerprint(store: ResultsStore, run_ids: Sequence[str]) -> str:
    """A key that changes whenever the runs gain an item or a judging: a cached report is current."""
    marks = ", ".join("?" * len(run_ids))
    with store.reading() as db:
        items = db.execute(
            f"SELECT COUNT(*), MAX(finished_at) FROM items WHERE run_id IN ({marks})", list(run_ids)
        ).fetchone()
        decisions = db.execute(
            f"SELECT COUNT(*), MAX(decided_at) FROM decisions WHERE run_id IN ({marks})", list(run_ids)
        ).fetchone()
    text = json.dumps([list(run_ids), list(items), list(decisions)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


ProblemVerdict = Literal["solved", "wrong", "unjudged", "failed"]


def problem_verdicts(store: ResultsStore, run_ids: Sequence[str]) -> dict[str, dict[str, ProblemVerdict]]:
    """Problem -> run -> its verdict there, counted as the comparison table counts it (the majority
    of attempts; failed where an attempt failed); problems in natural order."""
    from results.report import problems_frame

    problems = problems_frame(store, list(run_ids))
    table: dict[str, dict[str, ProblemVerdict]] = {}
    for run_id, problem, solved, scored, failed in zip(
        problems["run_id"],
        problems["problem"],
        problems["solved"],
        problems["scored"],
        problems["failed"],
        strict=True,
    ):
        verdict: ProblemVerdict
        if failed:
            verdict = "failed"
        elif float(solved) > 0:
            verdict = "solved"
        else:
            verdict = "wrong" if scored else "unjudged"
        table.setdefault(str(problem), {})[str(run_id)] = verdict
    return {problem: table[problem] for problem in sorted(table, key=natural_key)}


def verdict_counts(rows: Sequence[ItemRow]) -> dict[str, int]:
    """How many items each filter of the run page shows, and the unsolved among them by why (format
    errors, refused, blocked, cut off)."""
    return {show: sum(row.shown(show) for row in rows) for show in SHOWN} | {
        note: sum(row.note == note for row in rows) for note in ("format error", *STOPPED_OUTCOMES)
    }
