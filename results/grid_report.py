"""An experiment's grid read from the store: each cell's figures, its plan beside what it cost, and
the paired tests between cells that share a model or a strategy on one dataset.

Each cell's row is the comparison's own row of its run (`report_rows`: accuracy with its Wilson
interval, n, refused, failed, cost per solved problem), so a number here is the number `compare`
prints for the same run. The paired tests (`paired`) read each problem's solved-or-not under the
same counting and are Holm-corrected as one family.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from results.counting import DEFAULT_COUNTING, Counting
from results.experiments import ExperimentRecords
from results.paired import CORRECTION, PairedTest, corrected, paired_test
from results.report_rows import comparison_rows, problem_rows
from results.store import ResultsStore

FORMATS = ("table", "csv", "json", "markdown", "latex")
CELL_COLUMNS = (
    "dataset", "strategy", "model", "run_id", "n", "solved", "accuracy", "accuracy_low", "accuracy_high",
    "refused", "failed", "cost_per_solved_usd", "planned_calls", "calls", "planned_cost_usd", "cost_usd",
)  # fmt: skip


@dataclass(frozen=True)
class GridCell:
    key: str
    dataset: str
    strategy: str
    model: str
    run_id: str
    planned: Mapping[str, Any]
    """The cell's row of the stored plan (calls, tokens, cost), or empty."""


@dataclass(frozen=True)
class GridReport:
    rows: list[dict[str, Any]]
    tests: list[PairedTest]
    tested: bool
    """False when the counting gives shares, not solved problems (`mean`): no paired test applies."""

    def as_json(self) -> dict[str, Any]:
        return {
            "cells": self.rows,
            "tests": [
                {
                    "first": t.first,
                    "second": t.second,
                    "family": t.family,
                    "n": t.n,
                    "first_only": t.first_only,
                    "second_only": t.second_only,
                    "difference": t.difference,
                    "difference_low": t.interval()[0],
                    "difference_high": t.interval()[1],
                    "p_exact_mcnemar": t.p,
                    "p_holm": t.p_holm,
                    "significant": t.significant,
                }
                for t in self.tests
            ],
            "correction": CORRECTION,
        }


def stored_cells(store: ResultsStore, name: str) -> list[GridCell]:
    """The cells of a stored experiment that have a run, in the grid's order, with their plan."""
    stored = ExperimentRecords(store).get(name)
    planned = {cell["key"]: cell for cell in stored.plan.get("cells", [])}
    return [
        GridCell(key, cell["dataset"], cell["strategy"], cell["model"], stored.cells[key], cell)
        for key, cell in planned.items()
        if key in stored.cells
    ]


def grid_report(
    store: ResultsStore, cells: Sequence[GridCell], counting: Counting = DEFAULT_COUNTING
) -> GridReport:
    """The grid's rows, and its paired tests when each problem is solved or not under `counting`."""
    run_ids = [cell.run_id for cell in cells]
    problems = problem_rows(store, run_ids, counting) if run_ids else []
    pooled = {row["run_id"]: row for row in comparison_rows(problems, by=("run_id",))}
    rows = [_row(cell, pooled.get(cell.run_id, {}), store) for cell in cells]
    if not counting.aggregate.per_problem:
        return GridReport(rows, [], tested=False)
    solved: dict[str, dict[str, bool]] = {cell.key: {} for cell in cells}
    by_run = {cell.run_id: cell.key for cell in cells}
    for problem in problems:
        if problem["scored"]:
            solved[by_run[problem["run_id"]]][problem["problem"]] = bool(problem["solved"])
    return GridReport(rows, corrected(_pairs(cells, solved)), tested=True)


def _row(cell: GridCell, pooled: Mapping[str, Any], store: ResultsStore) -> dict[str, Any]:
    summary = store.summary(cell.run_id)
    config = summary.config
    return {
        "run_strategy": config["strategy"],
        "run_dataset": config["dataset"],
        "run_options": config.get("strategy_options", {}),
        "dataset": cell.dataset,
        "strategy": cell.strategy,
        "model": cell.model,
        "run_id": cell.run_id,
        "n": pooled.get("n", 0),
        "solved": pooled.get("solved"),
        "accuracy": pooled.get("accuracy"),
        "accuracy_low": pooled.get("accuracy_low"),
        "accuracy_high": pooled.get("accuracy_high"),
        "refused": pooled.get("refused", 0),
        "failed": summary.failed,
        "cost_per_solved_usd": pooled.get("cost_per_solved_usd"),
        "planned_calls": cell.planned.get("cell_calls"),
        "calls": summary.calls,
        "planned_cost_usd": cell.planned.get("cost_usd"),
        "cost_usd": summary.cost_usd,
        "planned_tokens": _planned_tokens(cell.planned),
        "tokens": summary.tokens,
    }


def _planned_tokens(planned: Mapping[str, Any]) -> int | None:
    tokens_in, tokens_out = planned.get("input_tokens"), planned.get("output_tokens")
    return None if tokens_in is None or tokens_out is None else int(tokens_in) + int(tokens_out)


def _pairs(cells: Sequence[GridCell], solved: Mapping[str, Mapping[str, bool]]) -> list[PairedTest]:
    """Every two strategies for one model, and every two models for one strategy, per dataset."""
    tests = []
    for fixed in ("model", "strategy"):
        groups: dict[tuple[str, str], list[GridCell]] = {}
        for cell in cells:
            groups.setdefault((cell.dataset, getattr(cell, fixed)), []).append(cell)
        for (dataset, shared), members in groups.items():
            for first, second in itertools.combinations(members, 2):
                family = f"{fixed} {shared} on {dataset}"
                tests.append(paired_test(first.key, second.key, family, solved))
    return tests


def formatted(report: GridReport, form: str) -> str:
    """The cells' table as csv, json, markdown or latex (a paper's table)."""
    if form == "json":
        return json.dumps(report.as_json())
    header = [column for column in CELL_COLUMNS if column != "run_id"]
    values = [[_shown(row.get(column)) for column in header] for row in report.rows]
    if form == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerows([header, *values])
        return out.getvalue()
    if form == "markdown":
        lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in values]) + "\n"
    if form == "latex":
        escape = str.maketrans({"_": r"\_", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#"})
        body = [" & ".join(cell.translate(escape) for cell in row) + r" \\" for row in [header, *values]]
        columns = "l" * 3 + "r" * (len(header) - 3)
        lines = [r"\begin{tabular}{" + columns + "}", r"\hline", body[0], r"\hline", *body[1:], r"\hline"]
        return "\n".join([*lines, r"\end{tabular}"]) + "\n"
    raise ValueError(f"format {form!r}: expected one of {', '.join(FORMATS)}")


def _shown(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
