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
from pathlib import Path

import pandas as pd

from datasets_io.counting import DEFAULT_COUNTING, AggregateError, Counting, solved_count
from datasets_io.errors import BongardError, did_you_mean
from datasets_io.figures import figure_file
from datasets_io.store import ITEM_SCORED, ITEM_SOLVED, ResultsStore

ITEMS_SQL = f"""
SELECT i.run_id, i.problem, i.attempt, i.status,
       CASE WHEN {ITEM_SOLVED} THEN 1 ELSE 0 END AS solved,
       CASE WHEN {ITEM_SCORED} THEN 1 ELSE 0 END AS scored,
       (SELECT COALESCE(SUM(c.input_tokens + c.output_tokens), 0) FROM calls c
        WHERE c.run_id = i.run_id AND c.problem = i.problem AND c.attempt = i.attempt) AS tokens,
       (SELECT SUM(c.cost_usd) FROM calls c
        WHERE c.run_id = i.run_id AND c.problem = i.problem AND c.attempt = i.attempt) AS cost_usd,
       (SELECT COUNT(*) FROM json_each(i.answer, '$.expected.sides')) AS images,
       (SELECT COUNT(*) FROM json_each(i.answer, '$.expected.sides') e
        WHERE json_extract(i.answer, '$.sides."' || e.key || '"') = e.value) AS images_right
FROM items i
"""
"""One row per item; `images` and `images_right` count the test images an answer put on a side
(classification settings) and those it put on the true one."""


def runs_frame(store: ResultsStore, run_ids: list[str]) -> pd.DataFrame:
    rows = []
    for run_id in run_ids:
        config = store.run_config(run_id)
        agents = config["agents"]
        model = (
            agents.get("reasoner")
            if len(set(agents.values())) == 1
            else " + ".join(f"{role}={spec}" for role, spec in sorted(agents.items()))
        )
        rows.append(
            {"run_id": run_id, "strategy": config["strategy"], "model": model, "dataset": config["dataset"]}
        )
    return pd.DataFrame(rows, columns=["run_id", "strategy", "model", "dataset"])


class UnknownJudging(BongardError, ValueError):
    """A judging named for counting that a judged run does not have; the message lists its judgings."""


def check_judging(store: ResultsStore, run_ids: list[str], judging: str) -> None:
    """Every run that has been judged has a judging of that name (a run never judged has none to
    choose from; its free-form answers count as unsolved either way)."""
    for run_id in run_ids:
        names = [j.name for j in store.judgings(run_id)]
        if names and judging not in names:
            raise UnknownJudging(
                f"run {run_id} has no judging {judging!r}{did_you_mean(judging, names)}; "
                f"its judgings, oldest first: {', '.join(names)} (`bongard runs show {run_id}`)"
            )


def items_frame(
    store: ResultsStore, run_ids: list[str], counting: Counting = DEFAULT_COUNTING
) -> pd.DataFrame:
    """One row per item: run, problem, attempt, status, solved (by the counting's judging), tokens, cost."""
    if counting.judging is not None:
        check_judging(store, run_ids, counting.judging)
    with sqlite3.connect(f"file:{store.path}?mode=ro", uri=True) as connection:  # reading only
        frame = pd.read_sql_query(ITEMS_SQL, connection, params={"judging": counting.judging})
    return frame[frame["run_id"].isin(run_ids)].reset_index(drop=True)


def problems_frame(
    store: ResultsStore, run_ids: list[str], counting: Counting = DEFAULT_COUNTING
) -> pd.DataFrame:
    """One row per (run, problem): solved by the counting's aggregate (1 or 0, or the share of
    solved attempts under `mean`), with tokens and cost summed."""
    for run_id in run_ids:
        counting.aggregate.check_attempts(run_id, int(store.run_config(run_id).get("attempts", 1)))
    items = items_frame(store, run_ids, counting)
    grouped = items.groupby(["run_id", "problem"]).agg(
        attempts=("attempt", "count"), solved_attempts=("solved", "sum"), scored=("scored", "min"),
        tokens=("tokens", "sum"),
        cost_usd=("cost_usd", lambda c: None if c.isna().any() else float(c.sum())),
        images=("images", "sum"), images_right=("images_right", "sum"),
    ).reset_index()  # fmt: skip
    grouped["solved"] = [
        counting.aggregate.solved(int(solved), int(attempts))
        for solved, attempts in zip(grouped["solved_attempts"], grouped["attempts"], strict=True)
    ]
    return grouped.merge(runs_frame(store, run_ids), on="run_id")


def wilson(successes: int, trials: int) -> tuple[float | None, float | None]:
    """The 95% Wilson score interval of a rate (SciPy's); none for no trials."""
    if trials <= 0:
        return None, None
    from scipy.stats import binomtest

    interval = binomtest(successes, trials).proportion_ci(confidence_level=0.95, method="wilson")
    return round(float(interval.low), 3), round(float(interval.high), 3)


def comparison_table(problems: pd.DataFrame) -> pd.DataFrame:
    """Per strategy x model x dataset: problems, `n` of them scored (an unjudged free-form run has
    none, and so no solved count, never 0), solved, accuracy with its 95% interval, image accuracy
    with its interval, tokens and cost."""
    table = problems.groupby(["strategy", "model", "dataset"]).agg(
        problems=("problem", "count"), n=("scored", "sum"), solved=("solved", "sum"),
        tokens=("tokens", "sum"),
        cost_usd=("cost_usd", lambda c: None if c.isna().any() else float(c.sum())),
        images=("images", "sum"), images_right=("images_right", "sum"),
    ).reset_index()  # fmt: skip
    table["solved"] = [
        solved_count(s) if n else None for s, n in zip(table["solved"], table["n"], strict=True)
    ]
    table["accuracy"] = [
        round(s / n, 3) if n else None for s, n in zip(table["solved"], table["n"], strict=True)
    ]
    table["accuracy_low"], table["accuracy_high"] = _intervals(table["solved"], table["n"])
    table["image_accuracy"] = (table["images_right"] / table["images"].where(table["images"] > 0)).round(3)
    """Test images put on their true side / test images (the papers' per-image accuracy for I1S,
    D1S and the paradigms); empty for settings without test images."""
    table["image_accuracy_low"], table["image_accuracy_high"] = _intervals(
        table["images_right"], table["images"]
    )
    solved = pd.to_numeric(table["solved"], errors="coerce")
    solved = solved.where(solved > 0)
    table["tokens_per_solved"] = (table["tokens"] / solved).round(1)
    table["cost_per_solved_usd"] = table["cost_usd"] / solved
    return table


def markdown(table: pd.DataFrame) -> str:
    """The table for reading: a row with nothing scored says "unjudged" where its count would be."""
    shown = table.assign(
        solved=[int(v) if n else "unjudged" for v, n in zip(table["solved"], table["n"], strict=True)]
    )
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
    store: ResultsStore, run_ids: list[str], out: Path, counting: Counting = DEFAULT_COUNTING
) -> pd.DataFrame:
    """Tables as Markdown, CSV and JSON and four PNG plots in `out`; returns the table."""
    problems = problems_frame(store, run_ids, counting)
    out.mkdir(parents=True, exist_ok=True)
    table = comparison_table(problems)
    table.to_csv(out / "comparison.csv", index=False)
    (out / "comparison.json").write_text(table.to_json(orient="records", indent=2), encoding="utf-8")
    (out / "comparison.md").write_text(markdown(table), encoding="utf-8")
    _accuracy_bars(table, out / "accuracy.png")
    _coverage_grid(problems, out / "coverage.png")
    _any_vs_best(problems, out / "any_vs_best.png")
    _cost_per_solved(table, out / "cost_per_solved.png")
    (out / "runs.json").write_text(json.dumps(run_ids, indent=2), encoding="utf-8")
    return table


def _label(frame: pd.DataFrame) -> pd.Series:
    return frame["strategy"] + "\n" + frame["model"]


def _accuracy_bars(table: pd.DataFrame, path: Path) -> None:
    """Accuracy with its 95% interval and n per bar; an unjudged run gets no bar, only its label."""
    accuracy = pd.to_numeric(table["accuracy"], errors="coerce")
    low = (accuracy - pd.to_numeric(table["accuracy_low"], errors="coerce")).fillna(0)
    high = (pd.to_numeric(table["accuracy_high"], errors="coerce") - accuracy).fillna(0)
    with figure_file(path, (max(6, len(table) * 1.2), 4)) as axes:
        labels = _label(table)
        axes.bar(labels, accuracy.fillna(0), yerr=[low, high], capsize=4)
        for x, (value, top, n) in enumerate(zip(accuracy, accuracy + high, table["n"], strict=True)):
            text, y = ("unjudged", 0.02) if value != value else (f"n={n}", top + 0.01)
            axes.annotate(text, (x, y), ha="center", va="bottom", fontsize=8)
        axes.set_ylabel("accuracy (solved / n), 95% interval")
        axes.set_ylim(0, 1.05)
        axes.set_title("Accuracy per strategy and model")


def _coverage_grid(problems: pd.DataFrame, path: Path) -> None:
    """Which problems each strategy x model solved (the papers' coverage figures)."""
    grid = problems.assign(column=_label(problems)).pivot_table(
        index="column", columns="problem", values="solved", aggfunc="max", fill_value=0.0
    )
    with figure_file(path, (max(6, grid.shape[1] * 0.3), max(2, grid.shape[0] * 0.6))) as axes:
        axes.imshow(grid.to_numpy(dtype=float), cmap="Greens", vmin=0, vmax=1, aspect="auto")
        axes.set_yticks(range(grid.shape[0]), grid.index)
        axes.set_xticks(
            range(grid.shape[1]), [p.split("/")[-1] for p in grid.columns], rotation=90, fontsize=6
        )
        axes.set_title("Problems solved (green)")


def _any_vs_best(problems: pd.DataFrame, path: Path) -> None:
    """Per dataset: problems solved by any strategy x model against the best single one."""
    rows = []
    for dataset, group in problems.groupby("dataset"):
        best = group.groupby(["strategy", "model"])["solved"].sum().max()
        any_solved = int((group.groupby("problem")["solved"].max() > 0).sum())
        rows.append((dataset, any_solved, solved_count(best)))
    names = [r[0] for r in rows]
    with figure_file(path, (6, 4)) as axes:
        axes.bar([f"{n}\nany" for n in names], [r[1] for r in rows], color="tab:green")
        axes.bar([f"{n}\nbest single" for n in names], [r[2] for r in rows], color="tab:blue")
        axes.set_ylabel("problems solved")
        axes.set_title("Solved by any strategy vs the best single one")


def _cost_per_solved(table: pd.DataFrame, path: Path) -> None:
    with figure_file(path, (max(6, len(table) * 1.2), 4)) as axes:
        axes.bar(_label(table), table["tokens_per_solved"].fillna(0))
        axes.set_ylabel("tokens per solved problem")
        axes.set_title("Tokens per solved problem (cost in comparison.csv)")
