"""The comparison's rows from SQLite's sums equal pandas' groupby of the store's items, on random
stores (attempts, failed items, classification and judged free-form answers, stopped calls, prices
known and unknown); and a run's own result row needs no pandas."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from datasets_io.records import Answer, Verdict
from results.counting import Aggregate, Counting, solved_count
from results.intervals import clustered_wilson, wilson
from results.report import comparison_table, items_frame, problems_frame, runs_frame
from results.report_rows import UNSOLVED_COLUMNS, problem_rows, run_result
from results.store import STORE_FILE, ResultsStore

STOPS = [None, None, None, "refused", "blocked", "cut"]


def random_call(chance: random.Random) -> dict[str, Any]:
    return {
        "role": "reasoner",
        "agent": chance.choice(["m", "n"]),
        "task": "solve",
        "conversation": "c",
        "step": 0,
        "images": [],
        "prompt": "p",
        "reply": "r",
        "input_tokens": chance.randint(1, 90),
        "output_tokens": chance.randint(1, 9),
        "latency_s": 0.1,
        "cache_hit": False,
        "cost_usd": None if chance.random() < 0.05 else chance.choice([0.001, 0.0003, 0.1, 1 / 3]),
        "stop": chance.choice(STOPS),
    }


def random_answer(chance: random.Random, problem: str, free_form: bool) -> Answer:
    tests = {f"t{n}": chance.choice(["left", "right"]) for n in range(chance.choice([0, 1, 2]))}
    parsed = chance.random() > 0.15
    return Answer.model_validate(
        {
            "strategy": "s",
            "problem": problem,
            "text": "t",
            "parse_status": "ok" if parsed else "failed",
            "sides": {ref: chance.choice([side, "left", "right", None]) for ref, side in tests.items()},
            "expected": {"sides": tests} if tests else {},
            "correct": None if free_form else parsed and chance.random() < 0.6,
            "trace": [
                random_call(chance) for _ in range(0 if chance.random() < 0.05 else chance.randint(1, 3))
            ],
        }
    )


def random_store(path: Path, seed: int) -> tuple[ResultsStore, list[str]]:
    chance = random.Random(seed)
    store = ResultsStore(path)
    runs = []
    for number in range(4):
        attempts, free_form = chance.choice([1, 3]), number % 2 == 1
        config = {
            "strategy": chance.choice(["a", "b"]),
            "dataset": "d",
            "attempts": attempts,
            "agents": {"reasoner": chance.choice(["openai:m", "anthropic:n"])},
        }
        run_id = store.create_run(config, "test")
        runs.append(run_id)
        for problem in (f"d/{n}" for n in chance.sample(range(1, 40), chance.randint(0, 12))):
            for attempt in range(attempts):
                if chance.random() < 0.1:
                    store.save_item(run_id, problem, attempt, None, "a 500 from the model")
                    continue
                store.save_item(run_id, problem, attempt, random_answer(chance, problem, free_form), None)
                if free_form and chance.random() < 0.7:
                    cost = None if chance.random() < 0.1 else 0.002
                    verdict = Verdict(judge="j", label="ok", raw_text="OK", cost_usd=cost)
                    store.save_judging(
                        run_id, problem, attempt, "j1", "vote:1", chance.random() < 0.5, [verdict]
                    )
    return store, runs


def groupby_problems(store: ResultsStore, run_ids: list[str], counting: Counting) -> pd.DataFrame:
    """The per-problem rule as pandas' groupby of every item (how `problems_frame` was first made)."""
    items = items_frame(store, run_ids, counting)
    items = items.assign(
        failed=items["status"] == "failed",
        unanswered=items["outcome"].isin(["refused", "blocked"]),
        **{column: items["outcome"] == word for word, column in UNSOLVED_COLUMNS.items()},
        **{f"{c}_unknown": items[c].isna() for c in ("cost_usd", "judge_cost_usd")},
    )
    grouped = (
        items.groupby(["run_id", "problem"])
        .agg(
            attempts=("attempt", "count"),
            solved_attempts=("solved", "sum"),
            scored=("scored", "min"),
            failed=("failed", "max"),
            unanswered=("unanswered", "min"),
            tokens=("tokens", "sum"),
            **{column: (column, "sum") for column in UNSOLVED_COLUMNS.values()},
            cost_usd=("cost_usd", "sum"),
            judge_cost_usd=("judge_cost_usd", "sum"),
            cost_usd_unknown=("cost_usd_unknown", "max"),
            judge_cost_usd_unknown=("judge_cost_usd_unknown", "max"),
            images=("images", "sum"),
            images_right=("images_right", "sum"),
        )
        .reset_index()
    )
    for column in ("cost_usd", "judge_cost_usd"):
        grouped[column] = grouped[column].astype(float).mask(grouped.pop(f"{column}_unknown"))
    grouped["solved"] = [
        counting.aggregate.solved(int(s), int(a)) if scored else 0
        for s, a, scored in zip(
            grouped["solved_attempts"], grouped["attempts"], grouped["scored"], strict=True
        )
    ]
    return grouped.merge(runs_frame(store, run_ids), on="run_id")


def close(a: Any, b: Any) -> bool:
    """Equal, NaN and None both unknown, sums of prices to a few ulps (summed in another order)."""
    unknown = [v is None or (isinstance(v, float) and math.isnan(v)) for v in (a, b)]
    if any(unknown):
        return all(unknown)
    return bool(a == b) if not isinstance(a, float) and not isinstance(b, float) else math.isclose(a, b)


COUNTINGS = [Counting(), Counting(Aggregate.parse("mean")), Counting(Aggregate.parse("any"))]


@pytest.mark.parametrize("seed", range(6))
def test_problem_rows_are_the_groupby_of_the_items(tmp_path: Path, seed: int) -> None:
    store, runs = random_store(tmp_path / STORE_FILE, seed)
    for counting in COUNTINGS:
        for chosen in (runs, runs[1:3], [runs[0]]):
            frame = groupby_problems(store, chosen, counting)
            expected = frame.to_dict("records")
            got = problems_frame(store, chosen, counting).to_dict("records")
            assert len(got) == len(expected) == len(problem_rows(store, chosen, counting))
            for mine, theirs in zip(got, expected, strict=True):
                assert list(mine) == list(theirs)
                assert all(close(mine[key], theirs[key]) for key in theirs), (mine, theirs)


@pytest.mark.parametrize("seed", range(6))
def test_comparison_rows_are_the_tables_arithmetic_done_apart(tmp_path: Path, seed: int) -> None:
    store, runs = random_store(tmp_path / STORE_FILE, seed)
    for counting in COUNTINGS:
        problems = problems_frame(store, runs, counting)
        for by in (("strategy", "model", "dataset"), ("run_id", "strategy", "model", "dataset")):
            table = comparison_table(problems, by).to_dict("records")
            assert [tuple(row[key] for key in by) for row in table] == sorted(
                set(problems[list(by)].itertuples(index=False, name=None))
            )
            for row in table:
                mine = problems[(problems[list(by)] == pd.Series(row)[list(by)]).all(axis=1)]
                n, shares = int(mine["scored"].sum()), float(mine["solved"].sum())
                solved = solved_count(shares) if n else None
                assert (row["problems"], row["n"], row["failed"]) == (len(mine), n, int(mine["failed"].sum()))
                assert close(row["solved"], solved)
                assert close(row["accuracy"], round(solved / n, 3) if solved is not None else None)
                bounds = wilson(solved, n) if solved is not None else (None, None)
                assert close(row["accuracy_low"], bounds[0]) and close(row["accuracy_high"], bounds[1])
                unanswered = int((mine["scored"].astype(bool) & mine["unanswered"].astype(bool)).sum())
                assert close(row["refused_share"], round(unanswered / n, 3) if n else None)
                images, right = int(mine["images"].sum()), int(mine["images_right"].sum())
                assert close(row["image_accuracy"], round(right / images, 3) if images else None)
                bounds = clustered_wilson(list(mine["images_right"]), list(mine["images"]))
                assert close(row["image_accuracy_low"], bounds[0]) and close(
                    row["image_accuracy_high"], bounds[1]
                )
                costs = [mine[c] for c in ("cost_usd", "judge_cost_usd")]
                total = None if any(c.isna().any() for c in costs) else float(sum(c.sum() for c in costs))
                assert close(row["total_cost_usd"], total)
                assert close(
                    row["cost_per_solved_usd"], total / solved if total is not None and solved else None
                )


def test_a_runs_result_row_is_its_comparison_row(tmp_path: Path) -> None:
    store, runs = random_store(tmp_path / STORE_FILE, 11)
    for run_id in runs:
        [expected] = comparison_table(problems_frame(store, [run_id])).to_dict("records") or [None]
        got = run_result(store, run_id)
        assert (got is None) == (expected is None)
        if got is not None and expected is not None:
            assert list(got) == list(expected) and all(close(got[k], expected[k]) for k in expected)
    empty = store.create_run({"strategy": "a", "dataset": "d", "agents": {"reasoner": "openai:m"}}, "test")
    assert run_result(store, empty) is None


RESULT_WITHOUT_PANDAS = """
import json, sys
from pathlib import Path
from results.report_rows import run_result
from results.store import ResultsStore
store = ResultsStore(Path(sys.argv[1]))
row = run_result(store, sys.argv[2])
print(json.dumps({"pandas": "pandas" in sys.modules, "problems": row and row["problems"]}))
"""


def test_a_runs_result_row_is_read_without_importing_pandas(tmp_path: Path) -> None:
    store, runs = random_store(tmp_path / STORE_FILE, 3)
    run_id = next(r for r in runs if problem_rows(store, [r]))
    printed = subprocess.run(
        [sys.executable, "-c", RESULT_WITHOUT_PANDAS, str(tmp_path / STORE_FILE), run_id],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(printed) == {"pandas": False, "problems": len(problem_rows(store, [run_id]))}
