"""The comparison report read from the store: tables (pandas) and plots (matplotlib).

A problem counts as solved by a run when most of its attempts are solved (or
by another `Aggregate`: any, at least K, or the mean over attempts); an
attempt is solved when its classification answer is correct or the run's
latest judging (or the one named by `Counting.judging`) accepted its
free-form answer. The table follows the case study's Tables 1
and 4: solved problems and accuracy per strategy x model x dataset.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from datasets_io.counting import DEFAULT_COUNTING, AggregateError, Counting, solved_count, unscored_text
from datasets_io.errors import BongardError, did_you_mean
from datasets_io.figures import FigureFormat
from datasets_io.intervals import clustered_wilson, wilson
from datasets_io.records import STOPPED_OUTCOMES
from datasets_io.report_figures import write_figures
from datasets_io.run_compatibility import model_label
from datasets_io.sqlite_errors import reading_uri
from datasets_io.store import ITEM_OUTCOME, ITEM_SCORED, ITEM_SOLVED, ResultsStore

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


UNSOLVED_COLUMNS = {"format error": "format_errors"} | {
    word: word.replace(" ", "_") for word in STOPPED_OUTCOMES
}
"""The columns that count attempts by why they went unsolved, apart from wrong answers: a reply that
did not parse, a call the model refused, a filter blocked or the token limit cut off."""


def runs_frame(store: ResultsStore, run_ids: list[str]) -> pd.DataFrame:
    rows = []
    for run_id in run_ids:
        config = store.run_config(run_id)
        model = model_label(config)
        rows.append(
            {"run_id": run_id, "strategy": config["strategy"], "model": model, "dataset": config["dataset"]}
        )
    return pd.DataFrame(rows, columns=["run_id", "strategy", "model", "dataset"])


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
                f"its judgings, oldest first: {listed} (`bongard runs show {run_id}`)"
            )
    return judging


def items_frame(
    store: ResultsStore, run_ids: list[str], counting: Counting = DEFAULT_COUNTING
) -> pd.DataFrame:
    """One row per item: run, problem, attempt, status, solved (by the counting's judging), tokens, cost."""
    judging = None if counting.judging is None else resolved_judging(store, run_ids, counting.judging)
    with sqlite3.connect(reading_uri(store.path), uri=True) as connection:  # reading only
        frame = pd.read_sql_query(ITEMS_SQL, connection, params={"judging": judging})
    return frame[frame["run_id"].isin(run_ids)].reset_index(drop=True)


COSTS = ("cost_usd", "judge_cost_usd")
COST_AGGREGATES = {column: (column, "sum") for column in COSTS} | {
    f"{column}_unknown": (f"{column}_unknown", "max") for column in COSTS
}
"""A group's costs summed, and whether any of them was unknown (`_with_cost_flags`)."""


def _with_cost_flags(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(**{f"{column}_unknown": frame[column].isna() for column in COSTS})


def _costs_or_unknown(grouped: pd.DataFrame) -> pd.DataFrame:
    """A group's cost is unknown (NaN) where any of its parts' was, never the sum of the known ones."""
    for column in COSTS:
        grouped[column] = grouped[column].astype(float).mask(grouped.pop(f"{column}_unknown"))
    return grouped


def problems_frame(
    store: ResultsStore, run_ids: list[str], counting: Counting = DEFAULT_COUNTING
) -> pd.DataFrame:
    """One row per (run, problem): solved by the counting's aggregate (1 or 0, or the share of
    solved attempts under `mean`), with tokens and cost summed and its attempts counted by why they
    went unsolved (`UNSOLVED_COLUMNS`). A problem is scored when every attempt is; one with a failed
    attempt is `failed`, outside n, and one not scored is solved by none."""
    for run_id in run_ids:
        counting.aggregate.check_attempts(run_id, int(store.run_config(run_id).get("attempts", 1)))
    items = items_frame(store, run_ids, counting)
    items = items.assign(
        failed=items["status"] == "failed",
        **{column: items["outcome"] == word for word, column in UNSOLVED_COLUMNS.items()},
    )
    grouped = _costs_or_unknown(_with_cost_flags(items).groupby(["run_id", "problem"]).agg(
        attempts=("attempt", "count"), solved_attempts=("solved", "sum"), scored=("scored", "min"),
        failed=("failed", "max"),
        tokens=("tokens", "sum"), **{column: (column, "sum") for column in UNSOLVED_COLUMNS.values()},
        **COST_AGGREGATES, images=("images", "sum"), images_right=("images_right", "sum"),
    ).reset_index())  # fmt: skip
    grouped["solved"] = [
        counting.aggregate.solved(int(solved), int(attempts)) if scored else 0
        for solved, attempts, scored in zip(
            grouped["solved_attempts"], grouped["attempts"], grouped["scored"], strict=True
        )
    ]
    return grouped.merge(runs_frame(store, run_ids), on="run_id")


ROW_KEY = ("strategy", "model", "dataset")
"""What a row of the comparison table is: runs of one strategy, model and dataset pooled."""


def comparison_table(problems: pd.DataFrame, by: Sequence[str] = ROW_KEY) -> pd.DataFrame:
    """Per strategy x model x dataset (or per `by`: `("run_id", *ROW_KEY)` keeps runs apart):
    problems, `n` of them scored (an unjudged free-form run has none, and so no solved count, never
    0), solved, `failed` problems (an attempt failed: outside n), accuracy with its 95% interval,
    image accuracy with its interval, the attempts unsolved by format errors, refusals, blocks and
    cut-offs (`UNSOLVED_COLUMNS`, counted apart from wrong answers; all of them count against
    accuracy), tokens and cost: of solving (failed items' calls included), of judging, and their
    total, which `cost_per_solved_usd` divides; a cost is unknown where any of its parts' is."""
    table = _costs_or_unknown(_with_cost_flags(problems).groupby(list(by)).agg(
        problems=("problem", "count"), n=("scored", "sum"), solved=("solved", "sum"),
        failed=("failed", "sum"), **{column: (column, "sum") for column in UNSOLVED_COLUMNS.values()},
        tokens=("tokens", "sum"), **COST_AGGREGATES,
        images=("images", "sum"), images_right=("images_right", "sum"),
    ).reset_index())  # fmt: skip
    table["solved"] = [
        solved_count(s) if n else None for s, n in zip(table["solved"], table["n"], strict=True)
    ]
    table["accuracy"] = [
        round(s / n, 3) if n else None for s, n in zip(table["solved"], table["n"], strict=True)
    ]
    table["accuracy_low"], table["accuracy_high"] = _intervals(table["solved"], table["n"])
    table["image_accuracy"] = (table["images_right"] / table["images"].where(table["images"] > 0)).round(3)
    """Test images put on their true side / test images (the papers' per-image accuracy for I1S,
    D1S and the paradigms); empty for settings without test images. Its interval counts the images
    of one problem as decided together (`datasets_io.intervals.CLUSTERED_METHOD`)."""
    clustered = {
        row: clustered_wilson(list(group["images_right"]), list(group["images"]))
        for row, group in problems.groupby(list(by))
    }
    rows = zip(*(table[column] for column in by), strict=True)
    bounds = [clustered.get(row, (None, None)) for row in rows]
    table["image_accuracy_low"] = [low for low, _ in bounds]
    table["image_accuracy_high"] = [high for _, high in bounds]
    solved = pd.to_numeric(table["solved"], errors="coerce")
    solved = solved.where(solved > 0)
    table["tokens_per_solved"] = (table["tokens"] / solved).round(1)
    table["total_cost_usd"] = pd.to_numeric(table["cost_usd"]) + pd.to_numeric(table["judge_cost_usd"])
    table["cost_per_solved_usd"] = table["total_cost_usd"] / solved
    return table


def markdown(table: pd.DataFrame) -> str:
    """The table for reading: a row with nothing scored says "unjudged" where its count would be (or
    "-" when every problem failed), and
    a figure that does not exist (no test images, no price) reads "-", not nan."""
    shown = table.astype(object).where(table.notna(), "-")
    shown["solved"] = [
        unscored_text(row) if not row["n"] else int(row["solved"]) for _, row in table.iterrows()
    ]
    return str(shown.to_markdown(index=False))


def _intervals(successes: pd.Series, trials: pd.Series) -> tuple[list[float | None], list[float | None]]:
    known = zip(successes, trials, strict=True)
    bounds = [wilson(int(k), int(n)) if pd.notna(k) and pd.notna(n) else (None, None) for k, n in known]
    return [low for low, _ in bounds], [high for _, high in bounds]


def solved_problems(store: ResultsStore, run_id: str, counting: Counting = DEFAULT_COUNTING) -> set[str]:
    """The problems a run solved (the rule of `problems_frame`); `mean` counts, it names none."""
    if not counting.aggregate.per_problem:
        raise AggregateError(
            "mean gives a count of solved problems, not which: use majority, any or at-least:K"
        )
    problems = problems_frame(store, [run_id], counting)
    return set(problems.loc[problems["solved"] > 0, "problem"])


def write_report(
    store: ResultsStore,
    run_ids: list[str],
    out: Path,
    counting: Counting = DEFAULT_COUNTING,
    fmt: FigureFormat = "png",
) -> pd.DataFrame:
    """Tables as Markdown, CSV and JSON and the figures (`report_figures.FIGURES`) in `out`;
    returns the table."""
    problems = problems_frame(store, run_ids, counting)
    out.mkdir(parents=True, exist_ok=True)
    table = comparison_table(problems)
    table.to_csv(out / "comparison.csv", index=False)
    (out / "comparison.json").write_text(table.to_json(orient="records", indent=2), encoding="utf-8")
    (out / "comparison.md").write_text(markdown(table), encoding="utf-8")
    write_figures(table, problems, out, fmt)
    (out / "runs.json").write_text(json.dumps(run_ids, indent=2), encoding="utf-8")
    return table
