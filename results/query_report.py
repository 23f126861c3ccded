"""Query classification read from the store: one row per classified query, and accuracy tables.

A query is a test image classified on its own (the cognitive paradigms, and any
answer that gives a side per test image). A query whose true side is the left
one is "positive" (it shows the left concept), a right-side one "negative", so
accuracy is reported overall and on each polarity separately (Vaishnav &
Tammet, Tables 2-3 and A.5), and per concept category where the dataset has one
(Bongard-OpenWorld's `commonSense` ids, Table A.3).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from datasets_io.records import Answer
from results.intervals import clustered_wilson
from results.store import ResultsStore

QUERY_COLUMNS = [
    "run_id", "strategy", "describer", "reasoner", "problem", "attempt", "query", "truth", "polarity",
    "given", "correct", "category", "rule", "description",
]  # fmt: skip
POLARITY = {"left": "positive", "right": "negative"}


def _stage_rule(details: dict[str, Any]) -> str | None:
    """The rule a two-stage strategy extracted before seeing any query (deductive rule learning)."""
    extraction = details.get("rule_extraction") or {}
    return extraction.get("rule") or extraction.get("summary") or details.get("rule_summary")


def _answer_rows(run: dict[str, Any], problem: str, attempt: int, answer: Answer) -> list[dict[str, Any]]:
    truths: dict[str, str] = answer.expected.get("sides") or {}
    given: dict[str, str | None] = dict(answer.sides)
    details = answer.details
    per_query = details.get("queries") or {}
    stage_rule = _stage_rule(details)
    rows = []
    for ref, truth in truths.items():
        found = per_query.get(ref) or {}
        rows.append(
            {
                **run,
                "describer": details.get("describer"),  # strategies that describe panels record it
                "problem": problem,
                "attempt": attempt,
                "query": ref,
                "truth": truth,
                "polarity": POLARITY[truth],
                "given": given.get(ref),
                "correct": given.get(ref) == truth,
                "category": details.get("category"),
                "rule": stage_rule or found.get("rule") or None,
                "description": found.get("query") or None,
            }
        )
    return rows


def query_frame(store: ResultsStore, run_ids: list[str]) -> pd.DataFrame:
    """Every classified query of the runs: its truth, polarity, the side given, the rule it was
    classified by (the stage-1 rule where there is one) and the model's description of it."""
    rows = []
    for run_id in run_ids:
        config = store.run_config(run_id)
        run = {"run_id": run_id, "strategy": config["strategy"], "reasoner": config["agents"].get("reasoner")}
        rows += [
            row for p, a, answer in store.answer_records(run_id) for row in _answer_rows(run, p, a, answer)
        ]
    return pd.DataFrame(rows, columns=QUERY_COLUMNS)


def query_rate(queries: pd.DataFrame, name: str = "accuracy") -> dict[str, Any]:
    """`name`: queries classified right / queries, with its 95% interval; the queries of one problem
    count as decided together (`results.intervals.clustered_wilson`)."""
    per_problem = queries.groupby(["run_id", "problem"])["correct"].agg(["sum", "count"])
    low, high = clustered_wilson(list(per_problem["sum"]), list(per_problem["count"]))
    accuracy = round(float(queries["correct"].mean()), 4) if len(queries) else None
    return {name: accuracy, f"{name}_low": low, f"{name}_high": high}


def query_accuracy(queries: pd.DataFrame) -> pd.DataFrame:
    """Per run: queries, accuracy overall and on positive and negative queries, each with its interval."""
    rows = []
    for run_id, group in queries.groupby("run_id", sort=False):
        positive, negative = (group[group["polarity"] == p] for p in ("positive", "negative"))
        rows.append(
            {
                "run_id": run_id,
                "queries": len(group),
                **query_rate(group),
                "positive_queries": len(positive),
                **query_rate(positive, "positive_accuracy"),
                "negative_queries": len(negative),
                **query_rate(negative, "negative_accuracy"),
            }
        )
    return pd.DataFrame(rows)


def rates_by(queries: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per group of `keys`: queries and accuracy with its interval."""
    rows = [
        {**dict(zip(keys, group_keys, strict=True)), "queries": len(group), **query_rate(group)}
        for group_keys, group in queries.groupby(keys, sort=True)
    ]
    return pd.DataFrame(rows, columns=[*keys, "queries", "accuracy", "accuracy_low", "accuracy_high"])


def category_accuracy(queries: pd.DataFrame) -> pd.DataFrame:
    """Per run and concept category: queries and accuracy (empty where no problem has a category)."""
    return rates_by(queries[queries["category"].notna()], ["run_id", "category"])


def describer_reasoner_accuracy(queries: pd.DataFrame) -> pd.DataFrame:
    """Query accuracy per strategy, describer and reasoner: one describer's descriptions reasoned
    over by each reasoner (Bongard-RWR+ D1S/D2S, componential analysis)."""
    return rates_by(queries[queries["describer"].notna()], ["strategy", "describer", "reasoner"])
