"""The comparison report read from the store: tables (pandas) and plots (matplotlib).

A problem counts as solved by a run when most of its attempts are solved (or
by another `Aggregate`: any, at least K, or the mean over attempts); an
attempt is solved when its classification answer is correct or the run's
counted judging (or the one named by `Counting.judging`) accepted its
free-form answer. The table follows the case study's Tables 1
and 4: solved problems and accuracy per strategy x model x dataset. The arithmetic is
`results.report_rows`' (SQLite sums each problem's attempts); this module makes its rows tables.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from results.counting import DEFAULT_COUNTING, AggregateError, Counting, solved_count, unscored_text
from results.figures import FigureFormat
from results.intervals import wilson
from results.report_figures import write_figures
from results.report_rows import (
    ANSWERED_COLUMNS,
    COMPARISON_COLUMNS,
    FLOAT_COLUMNS,
    PROBLEM_COLUMNS,
    ROW_KEY,
    ItemRow,
    comparison_rows,
    item_rows,
    problem_rows,
    resolved_judging,
    run_keys,
)
from results.store import ResultsStore


def items_frame(
    store: ResultsStore, run_ids: list[str], counting: Counting = DEFAULT_COUNTING
) -> pd.DataFrame:
    """One row per item: run, problem, attempt, status, solved (by the counting's judging), tokens, cost."""
    judging = None if counting.judging is None else resolved_judging(store, run_ids, counting.judging)
    rows = item_rows(store, run_ids, judging)
    return pd.DataFrame.from_records(
        rows, columns=list(ItemRow._fields), coerce_float=True
    )  # as read_sql_query


def runs_frame(store: ResultsStore, run_ids: list[str]) -> pd.DataFrame:
    return pd.DataFrame(run_keys(store, run_ids), columns=["run_id", "strategy", "model", "dataset"])


def problems_frame(
    store: ResultsStore, run_ids: list[str], counting: Counting = DEFAULT_COUNTING
) -> pd.DataFrame:
    """One row per (run, problem) of `report_rows.problem_rows`, with its run's strategy, model and
    dataset: solved by the counting's aggregate (1 or 0, or the share of solved attempts under
    `mean`), with tokens and cost summed and its attempts counted by why they went unsolved
    (`UNSOLVED_COLUMNS`). A problem is scored when every attempt is; one with a failed attempt is
    `failed`, outside n, and one not scored is solved by none."""
    rows = pd.DataFrame(problem_rows(store, run_ids, counting), columns=list(PROBLEM_COLUMNS))
    return _floats(rows).merge(runs_frame(store, run_ids), on="run_id")


def comparison_table(
    problems: pd.DataFrame, by: Sequence[str] = ROW_KEY, answered: bool = False
) -> pd.DataFrame:
    """Per strategy x model x dataset (or per `by`: `("run_id", *ROW_KEY)` keeps runs apart):
    problems, `n` of them scored (an unjudged free-form run has none, and so no solved count, never
    0), solved, `failed` problems (an attempt failed: outside n), accuracy with its 95% interval,
    image accuracy (test images put on their true side / test images: the papers' per-image accuracy
    for I1S, D1S and the paradigms; empty without test images) with its interval, which counts the
    images of one problem as decided together (`results.intervals.CLUSTERED_METHOD`), the attempts
    unsolved by format errors, refusals, blocks and cut-offs (`UNSOLVED_COLUMNS`, counted apart from
    wrong answers; all of them count against accuracy), tokens and cost: of solving (failed items'
    calls included), of judging, and their total, which `cost_per_solved_usd` divides; a cost is
    unknown where any of its parts' is (`report_rows.comparison_rows`). `refused_share`: the share
    of n every attempt of which was refused or blocked; `answered`: accuracy over the rest as well,
    in columns of its own (`ANSWERED_COLUMNS`)."""
    rows = comparison_rows(problems.to_dict("records"), by, answered)
    columns = [*by, *COMPARISON_COLUMNS, *(ANSWERED_COLUMNS if answered else ())]
    return _floats(pd.DataFrame(rows, columns=columns))


def accuracy_per_group(problems: pd.DataFrame, heading: str) -> pd.DataFrame:
    """Solved problems and accuracy per strategy, model, dataset and the `heading` column (a
    problem's group): accuracy is solved / n, the problems scored (failed ones outside n, counted
    apart), with its 95% Wilson interval, as the run table's."""
    table = (
        problems.groupby(["strategy", "model", "dataset", heading], sort=True)
        .agg(
            problems=("problem", "count"),
            n=("scored", "sum"),
            failed=("failed", "sum"),
            solved=("solved", "sum"),
        )
        .reset_index()
    )
    table["solved"] = table["solved"].map(solved_count)
    table["accuracy"] = (table["solved"] / table["n"].where(table["n"] > 0)).round(3)
    bounds = [wilson(float(s), float(n)) for s, n in zip(table["solved"], table["n"], strict=True)]
    table["accuracy_low"] = [low for low, _ in bounds]
    table["accuracy_high"] = [high for _, high in bounds]
    return table


def _floats(frame: pd.DataFrame) -> pd.DataFrame:
    """Costs and rates as floats, an unknown one NaN, even in a column where every one is unknown."""
    return frame.astype({column: float for column in FLOAT_COLUMNS if column in frame})


def markdown(table: pd.DataFrame) -> str:
    """The table for reading: a row with nothing scored says "unjudged" where its count would be (or
    "-" when every problem failed), and
    a figure that does not exist (no test images, no price) reads "-", not nan."""
    shown = table.astype(object).where(table.notna(), "-")
    shown["solved"] = [
        unscored_text(row) if not row["n"] else int(row["solved"]) for _, row in table.iterrows()
    ]
    return str(shown.to_markdown(index=False))


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
    answered: bool = False,
) -> pd.DataFrame:
    """Tables as Markdown, CSV and JSON and the figures (`report_figures.FIGURES`) in `out`;
    returns the table (`answered`: with accuracy over the answered problems, `comparison_table`)."""
    problems = problems_frame(store, run_ids, counting)
    out.mkdir(parents=True, exist_ok=True)
    table = comparison_table(problems, answered=answered)
    table.to_csv(out / "comparison.csv", index=False)
    (out / "comparison.json").write_text(table.to_json(orient="records", indent=2), encoding="utf-8")
    (out / "comparison.md").write_text(markdown(table), encoding="utf-8")
    write_figures(table, problems, out, fmt)
    (out / "runs.json").write_text(json.dumps(run_ids, indent=2), encoding="utf-8")
    return table
