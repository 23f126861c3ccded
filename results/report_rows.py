"""The comparison's arithmetic on plain rows, its per-problem sums made by SQLite.

`results.report` turns these rows into pandas tables for reports, plots and the viewer; a
command that shows one run's row (`bongard run`'s result table) takes them as they are, without
pandas' 0.2-0.3 s import. One rule either way: a problem is solved by the counting's aggregate of
its attempts, scored when every attempt is, `failed` (outside n) when one failed; a cost is unknown
where any of its parts' is.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from datasets_io.errors import BongardError, did_you_mean
from datasets_io.records import STOPPED_OUTCOMES
from datasets_io.sqlite_errors import reading_uri
from datasets_io.workspace import store_home_flag
from results.counting import DEFAULT_COUNTING, Counting, solved_count
from results.intervals import clustered_wilson, wilson
from results.run_compatibility import model_label
from results.store import ITEM_OUTCOME, ITEM_SCORED, ITEM_SOLVED, ResultsStore

ITEMS_SQL = f"""
SELECT i.run_id, i.problem, i.attempt, i.status, i.parse_status,
       CASE WHEN {ITEM_SOLVED} THEN 1 ELSE 0 END AS solved,
       CASE WHEN {ITEM_SCORED} THEN 1 ELSE 0 END AS scored,
       {ITEM_OUTCOME} AS outcome,
       (SELECT COALESCE(SUM(c.input_tokens + c.output_tokens), 0) FROM calls c
        WHERE c.run_id = i.run_id AND c.problem = i.problem AND c.attempt = i.attempt) AS tokens,
       (SELECT SUM(c.cost_usd) FROM calls c
        WHERE c.run_id = i.run_id AND c.problem = i.problem AND c.attempt = i.attempt) AS cost_usd,
       (SELECT CASE WHEN COUNT(*) = COUNT(v.cost_usd) THEN COALESCE(SUM(v.cost_usd), 0) END FROM verdicts v
        WHERE v.run_id = i.run_id AND v.problem = i.problem AND v.attempt = i.attempt) AS judge_cost_usd,
       (SELECT COUNT(*) FROM json_each(i.answer, '$.expected.sides')) AS images,
       (SELECT COUNT(*) FROM json_each(i.answer, '$.expected.sides') e
        WHERE json_extract(i.answer, '$.sides."' || e.key || '"') = e.value) AS images_right
FROM items i
"""
"""One row per item, with its `ItemOutcome`; `judge_cost_usd` is what every judging of it cost
(0 unjudged, None when a judge had no price); `images` and `images_right` count the test images an
answer put on a side (classification settings) and those it put on the true one."""


class ItemRow(NamedTuple):
    """An `ITEMS_SQL` row: an item with its outcome, solved and scored (1 or 0), tokens and costs."""

    run_id: str
    problem: str
    attempt: int
    status: str
    parse_status: str | None
    solved: int
    scored: int
    outcome: str
    tokens: int
    cost_usd: float | None
    judge_cost_usd: float | None
    images: int
    images_right: int


def item_rows(store: ResultsStore, run_ids: Sequence[str], judging: str | None = None) -> list[ItemRow]:
    """One `ItemRow` per item of these runs, in the order stored, solved by the judging named (its
    full name), else by the one that counts for each run; what `report.items_frame` tabulates,
    read without pandas (an export reads nothing else of it)."""
    with sqlite3.connect(reading_uri(store.path), uri=True) as connection:  # reading only
        rows = connection.execute(
            f"{ITEMS_SQL} WHERE i.run_id IN (SELECT value FROM json_each(:runs)) ORDER BY i.rowid",
            {"judging": judging, "runs": json.dumps(list(run_ids))},
        ).fetchall()
    return [ItemRow(*row) for row in rows]


UNSOLVED_COLUMNS = {"format error": "format_errors"} | {
    word: word.replace(" ", "_") for word in STOPPED_OUTCOMES
}
"""The columns that count attempts by why they went unsolved, apart from wrong answers: a reply that
did not parse, a call the model refused, a filter blocked or the token limit cut off."""

COSTS = ("cost_usd", "judge_cost_usd")
REFUSAL_OUTCOMES = "'refused', 'blocked'"
"""Outcomes that leave a problem unanswered (a refusal, a filter's block) where every attempt has one."""
UNSOLVED_SUMS = ", ".join(
    f"SUM(outcome = :outcome_{n}) AS {column}" for n, column in enumerate(UNSOLVED_COLUMNS.values())
)
COST_SUMS = ", ".join(f"CASE WHEN COUNT({c}) = COUNT(*) THEN SUM({c}) END AS {c}" for c in COSTS)
"""A problem's cost is unknown (NULL) where any of its attempts' is."""
PROBLEMS_SQL = f"""
WITH chosen AS MATERIALIZED ({ITEMS_SQL} WHERE i.run_id IN (SELECT value FROM json_each(:runs)))
SELECT run_id, problem, COUNT(*) AS attempts, SUM(solved) AS solved_attempts, MIN(scored) AS scored,
       MAX(status = 'failed') AS failed, MIN(outcome IN ({REFUSAL_OUTCOMES})) AS unanswered,
       SUM(tokens) AS tokens, {UNSOLVED_SUMS}, {COST_SUMS},
       SUM(images) AS images, SUM(images_right) AS images_right
FROM chosen GROUP BY run_id, problem ORDER BY run_id, problem
"""
"""One row per (run, problem) of the runs in `:runs`: its attempts summed, in the order pandas'
groupby gives (run, then problem, as strings). The items are made once (`MATERIALIZED`): merged into
the sums, each item's outcome was worked out again for every column that counts it."""
PROBLEM_COLUMNS = (
    "run_id", "problem", "attempts", "solved_attempts", "scored", "failed", "unanswered", "tokens",
    *UNSOLVED_COLUMNS.values(), *COSTS, "images", "images_right", "solved",
)  # fmt: skip
"""A problem row's keys, in the order of `report.problems_frame`'s columns before the run's own."""
ROW_KEY = ("strategy", "model", "dataset")
"""What a row of the comparison table is: runs of one strategy, model and dataset pooled."""
COMPARISON_COLUMNS = (
    "problems", "n", "solved", "failed", *UNSOLVED_COLUMNS.values(), "tokens", *COSTS, "images",
    "images_right", "accuracy", "accuracy_low", "accuracy_high", "refused_share", "image_accuracy",
    "image_accuracy_low", "image_accuracy_high", "tokens_per_solved", "total_cost_usd", "cost_per_solved_usd",
)  # fmt: skip
"""A comparison row's figures, after the keys it is grouped by."""
ANSWERED_COLUMNS = ("answered", "answered_accuracy", "answered_accuracy_low", "answered_accuracy_high")
"""Accuracy over the problems answered (n less those every attempt of which was refused or blocked),
for `compare --answered`: labelled apart, never in place of accuracy over n."""
FLOAT_COLUMNS = (
    *COSTS, "refused_share", "answered_accuracy", "image_accuracy", "tokens_per_solved", "total_cost_usd",
    "cost_per_solved_usd",
)  # fmt: skip
"""Figures that are numbers or unknown (NaN in a table) even where every row's is unknown."""


class UnknownJudging(BongardError, ValueError):
    """A judging named for counting that a judged run does not have; the message lists its judgings."""


def resolved_judging(store: ResultsStore, run_ids: list[str], judging: str) -> str:
    """The full name of the judging named by its name or its short id (`j-...`): every run that has
    been judged must have it (a run never judged has none to choose from; its free-form answers
    count as unsolved either way)."""
    for run_id in run_ids:
        judgings = store.judgings(run_id)
        by_id = {j.short_id: j.name for j in judgings}
        names = [j.name for j in judgings]
        judging = by_id.get(judging, judging)
        if names and judging not in names:
            listed = ", ".join(f"{j.short_id} {j.name}" for j in judgings)
            raise UnknownJudging(
                f"run {run_id} has no judging {judging!r}{did_you_mean(judging, names)}; "
                f"its judgings, oldest first: {listed} "
                f"(`bongard runs show {run_id}{store_home_flag(store.path.parent)}`)"
            )
    return judging


def run_keys(store: ResultsStore, run_ids: list[str]) -> list[dict[str, str]]:
    """Each run's keys of the comparison: its strategy, model (as labelled) and dataset."""
    rows = []
    for run_id in run_ids:
        config = store.run_config(run_id)
        rows.append(
            {
                "run_id": run_id,
                "strategy": config["strategy"],
                "model": model_label(config),
                "dataset": config["dataset"],
            }
        )
    return rows


def problem_rows(
    store: ResultsStore, run_ids: list[str], counting: Counting = DEFAULT_COUNTING
) -> list[dict[str, Any]]:
    """One row per (run, problem) with `PROBLEM_COLUMNS`: solved by the counting's aggregate (1 or 0,
    or the share of solved attempts under `mean`), its attempts' tokens and costs summed and counted
    by why they went unsolved. A problem not scored is solved by none."""
    for run_id in run_ids:
        counting.aggregate.check_attempts(run_id, int(store.run_config(run_id).get("attempts", 1)))
    judging = None if counting.judging is None else resolved_judging(store, run_ids, counting.judging)
    params: dict[str, Any] = {"judging": judging, "runs": json.dumps(run_ids)}
    params |= {f"outcome_{n}": word for n, word in enumerate(UNSOLVED_COLUMNS)}
    with sqlite3.connect(reading_uri(store.path), uri=True) as connection:  # reading only
        connection.row_factory = sqlite3.Row
        found = connection.execute(PROBLEMS_SQL, params).fetchall()
    rows = []
    for sums in found:
        row = dict(sums)
        row["failed"] = bool(row["failed"])
        attempts, solved = int(row["attempts"]), int(row["solved_attempts"])
        row["solved"] = counting.aggregate.solved(solved, attempts) if row["scored"] else 0
        rows.append(row)
    return rows


def comparison_rows(
    problems: Iterable[Mapping[str, Any]], by: Sequence[str] = ROW_KEY, answered: bool = False
) -> list[dict[str, Any]]:
    """Problem rows (with the keys `by` names) pooled per strategy x model x dataset, or per `by`,
    in the keys' order: see `report.comparison_table` for what each figure divides."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for problem in problems:
        groups.setdefault(tuple(problem[key] for key in by), []).append(problem)
    return [dict(zip(by, key, strict=True)) | _pooled(groups[key], answered) for key in sorted(groups)]


def comparison(
    store: ResultsStore,
    run_ids: list[str],
    by: Sequence[str] = ROW_KEY,
    counting: Counting = DEFAULT_COUNTING,
) -> list[dict[str, Any]]:
    """The comparison rows of stored runs: their problems pooled per strategy x model x dataset, or
    per `by` (`("run_id", *ROW_KEY)` keeps the runs apart); a run with no items has none."""
    keys = {row["run_id"]: row for row in run_keys(store, run_ids)}
    problems = problem_rows(store, run_ids, counting)
    return comparison_rows((problem | keys[problem["run_id"]] for problem in problems), by)


def run_result(store: ResultsStore, run_id: str) -> dict[str, Any] | None:
    """A run's own comparison row (None: it has no items yet)."""
    return next(iter(comparison(store, [run_id])), None)


def _pooled(problems: list[Mapping[str, Any]], answered_columns: bool = False) -> dict[str, Any]:
    """One comparison row's figures from its problems (`COMPARISON_COLUMNS`, and `ANSWERED_COLUMNS`
    where asked)."""
    n = sum(int(p["scored"]) for p in problems)
    solved = solved_count(sum(p["solved"] for p in problems)) if n else None
    images = [int(p["images"]) for p in problems]
    images_right = [int(p["images_right"]) for p in problems]
    tokens = sum(int(p["tokens"]) for p in problems)
    costs = {column: _known_sum(p[column] for p in problems) for column in COSTS}
    low, high = wilson(solved, n) if solved is not None else (None, None)
    answered = n - sum(int(p["scored"]) and int(p["unanswered"]) for p in problems)
    image_low, image_high = clustered_wilson(images_right, images)
    total_cost = None if None in costs.values() else sum(c for c in costs.values() if c is not None)
    per_solved = solved if solved else None
    return {
        "problems": len(problems),
        "n": n,
        "solved": solved,
        "failed": sum(bool(p["failed"]) for p in problems),
        **{column: sum(int(p[column]) for p in problems) for column in UNSOLVED_COLUMNS.values()},
        "tokens": tokens,
        **costs,
        "images": sum(images),
        "images_right": sum(images_right),
        "accuracy": round(solved / n, 3) if solved is not None else None,
        "accuracy_low": low,
        "accuracy_high": high,
        "refused_share": round((n - answered) / n, 3) if n else None,
        "image_accuracy": _rounded(sum(images_right) / sum(images), 3) if sum(images) > 0 else None,
        "image_accuracy_low": image_low,
        "image_accuracy_high": image_high,
        "tokens_per_solved": _rounded(tokens / per_solved, 1) if per_solved else None,
        "total_cost_usd": total_cost,
        "cost_per_solved_usd": total_cost / per_solved if per_solved and total_cost is not None else None,
    } | (_over_answered(solved, answered) if answered_columns else {})


def _over_answered(solved: float | None, answered: int) -> dict[str, Any]:
    """Accuracy over the answered problems, with its interval (`ANSWERED_COLUMNS`)."""
    low, high = wilson(solved, answered) if solved is not None and answered else (None, None)
    return {
        "answered": answered,
        "answered_accuracy": round(solved / answered, 3) if solved is not None and answered else None,
        "answered_accuracy_low": low,
        "answered_accuracy_high": high,
    }


def _known_sum(values: Iterable[float | None]) -> float | None:
    """The sum, correctly rounded (`math.fsum`; pandas' compensated sum can differ in the last bit),
    or None (unknown) where any value is None or NaN (a table's unknown)."""
    given = list(values)
    if any(value is None or math.isnan(value) for value in given):
        return None
    return math.fsum(value for value in given if value is not None)


def _rounded(value: float, digits: int) -> float:
    """Rounded as pandas' `Series.round` rounds (scaled, to the nearest even, scaled back), so a
    figure reads the same from either."""
    scale = 10.0**digits
    return round(value * scale) / scale
