"""Running an experiment's grid: each cell's run started, adopted or resumed, within a budget.

A cell runs in the run the experiment recorded for it; else in a stored run with the same settings
(made by hand or by another experiment: adopted, what it had cost kept apart); else in a new run,
recorded before its first call. So a second `experiment run` of a finished grid sends nothing, and
a grid killed mid-way resumes each cell where its run stopped: the runner skips finished items and
continues half-done ones from their checkpoints, so no finished call is paid for twice. Failed
items are tried again, as `bongard run --retry-errors` would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from agents.breaker import DEFAULT_MAX_FAILURES, EndpointDown
from datasets_io.catalog import open_run_dataset
from graphs.experiments.budget import Budget, BudgetReached
from graphs.experiments.contexts import sized_runner
from graphs.experiments.plan import CellPlan, Plan
from graphs.experiments.spec import Experiment
from graphs.runs.judging import JudgingReport, judge_run, prepared_judging
from graphs.runs.runner import ItemOutcome, Runner, resume_run, store_run
from results.experiments import ExperimentRecords
from results.store import ResultsStore

if TYPE_CHECKING:  # Ray is an extra: imported when a grid runs on it
    from graphs.cluster.executor import ClusterOptions
    from judges.styles import JudgeStyle


@dataclass
class GridOutcome:
    plan: Plan
    runs: dict[str, str] = field(default_factory=dict)
    """Cell key -> the run holding it."""
    stopped: str | None = None
    """Why the grid stopped before its end (the budget, a dead endpoint), or None."""
    spent_usd: float = 0.0
    unpriced_calls: int = 0


def run_grid(
    experiment: Experiment,
    cells: list[tuple[CellPlan, Runner]],
    store: ResultsStore,
    home: Path | None,
    budget_usd: float | None = None,
    on_item: Callable[[CellPlan, ItemOutcome], None] | None = None,
    on_cell: Callable[[CellPlan, str], None] | None = None,
    max_failures: int = DEFAULT_MAX_FAILURES,
    cluster: ClusterOptions | None = None,
    announce: Callable[[str], None] | None = None,
) -> GridOutcome:
    """Run the cells in order; stop before a call that could pass `budget_usd`, or at a dead endpoint."""
    records = ExperimentRecords(store)
    plan = Plan(experiment.name, [cell for cell, _ in cells])
    records.save(experiment.name, str(experiment.path.resolve()), experiment.source, plan.as_json())
    outcome = GridOutcome(plan)
    spent, _ = records.spent(experiment.name)
    together = cluster is None and any(_batched(runner) for _, runner in cells)
    budget = Budget(budget_usd, spent, reserve=together) if budget_usd is not None else None
    started: list[tuple[CellPlan, str, Runner]] = []
    for cell, prepared in cells:
        run_id, runner = _cell_run(experiment, cell, prepared, store, home, records, announce)
        outcome.runs[cell.key] = run_id
        if on_cell is not None:
            on_cell(cell, run_id)
        if budget is not None:
            for agent in runner.agents.values():
                agent.watch = budget.for_cell(cell.cost_per_call_usd or 0.0)
        if together:  # batch mode: every cell's calls go out together, their batches shared
            started.append((cell, run_id, runner))
            continue
        try:
            if cell.calls != 0:
                _run_cell(runner, run_id, max_failures, _for_cell(on_item, cell), cluster, announce)
        except (BudgetReached, EndpointDown) as stopped:
            outcome.stopped = str(stopped)
            break
        _judged(experiment, store, run_id, runner, home, cell, outcome)
    if started:
        try:
            asyncio.run(_run_together(started, max_failures, on_item))
        except (BudgetReached, EndpointDown) as stopped:
            outcome.stopped = str(stopped)
        for cell, run_id, runner in started:
            _judged(experiment, store, run_id, runner, home, cell, outcome)
    outcome.spent_usd, outcome.unpriced_calls = records.spent(experiment.name)
    return outcome


def _batched(runner: Runner) -> bool:
    return any(agent.params.batch for agent in runner.agents.values())


async def _run_together(
    started: list[tuple[CellPlan, str, Runner]],
    max_failures: int,
    on_item: Callable[[CellPlan, ItemOutcome], None] | None,
) -> None:
    """Every cell's pending items at once, in one event loop: a batch gathers the calls of all the
    cells of a model. The first cell stopped (a budget, a dead endpoint) stops the others."""
    try:
        async with asyncio.TaskGroup() as cells:
            for cell, run_id, runner in started:
                if cell.calls != 0:
                    solving = runner.run(
                        run_id, retry_errors=True, max_failures=max_failures, on_item=_for_cell(on_item, cell)
                    )
                    cells.create_task(solving)
    except ExceptionGroup as stopped:
        raise stopped.exceptions[0] from None


def _judged(
    experiment: Experiment,
    store: ResultsStore,
    run_id: str,
    runner: Runner,
    home: Path | None,
    cell: CellPlan,
    outcome: GridOutcome,
) -> None:
    """The cell judged by the experiment's judges, where its strategy is judged; a cell left with
    answers no judge decided stops the grid's success."""
    if experiment.judges and runner.info.judged:
        judged = _judge_cell(experiment, store, run_id, home)
        if judged is not None and judged.left_unjudged:
            outcome.stopped = f"{judged.left_unjudged} answers of {cell.key} could not be judged"


def _run_cell(
    runner: Runner,
    run_id: str,
    max_failures: int,
    on_item: Callable[[ItemOutcome], None] | None,
    cluster: ClusterOptions | None,
    announce: Callable[[str], None] | None,
) -> None:
    """One cell's pending items solved here, or by a Ray pool (`graphs.cluster.executor`)."""
    if cluster is None:
        asyncio.run(runner.run(run_id, retry_errors=True, max_failures=max_failures, on_item=on_item))
        return
    from graphs.cluster.executor import run_on_ray

    run_on_ray(
        runner,
        run_id,
        cluster,
        retry_errors=True,
        on_item=on_item,
        max_failures=max_failures,
        announce=announce,
    )


def _judge_cell(
    experiment: Experiment, store: ResultsStore, run_id: str, home: Path | None
) -> JudgingReport | None:
    """Judge a finished cell's free-form answers with the experiment's judges, unless a judging of
    the same judges, style and policy already decided every one of them (None then)."""
    summary = store.summary(run_id)
    if summary.status != "complete":
        return None
    ensemble, style = prepared_judging(
        summary.config["strategy"], list(experiment.judges), experiment.policy, _style(experiment), None, home
    )
    name = f"{style}|{','.join(judge.name for judge in ensemble.judges)}"
    if any(j.name == f"{name}@{ensemble.policy}" and j.items >= summary.done for j in store.judgings(run_id)):
        return None
    dataset = open_run_dataset(summary.config)
    specs = list(experiment.judges)
    return asyncio.run(judge_run(store, run_id, dataset, specs, experiment.policy, _style(experiment), home))


def _style(experiment: Experiment) -> JudgeStyle | None:
    return cast("JudgeStyle | None", experiment.judge_style)


def _for_cell(
    on_item: Callable[[CellPlan, ItemOutcome], None] | None, cell: CellPlan
) -> Callable[[ItemOutcome], None] | None:
    if on_item is None:
        return None
    return lambda item: on_item(cell, item)


def _cell_run(
    experiment: Experiment,
    cell: CellPlan,
    prepared: Runner,
    store: ResultsStore,
    home: Path | None,
    records: ExperimentRecords,
    announce: Callable[[str], None] | None = None,
) -> tuple[str, Runner]:
    """The run of a cell: its recorded run, an adopted stored one (resumed), or a new one recorded
    before any call (its Ollama contexts sized, `graphs.experiments.contexts`)."""
    recorded = records.cell_run(experiment.name, cell.key)
    if recorded is None and cell.stored_run is not None:
        cost = store.summary(cell.stored_run).cost_usd or 0.0
        records.set_cell(experiment.name, cell.key, cell.stored_run, spent_before=cost)
        recorded = cell.stored_run
    if recorded is not None:
        return resume_run(recorded, store, home=home)
    prepared, contexts = sized_runner(prepared)
    if announce is not None:
        for note in contexts:
            announce(f"{cell.key}: context: {note}")
    run_id = store_run(prepared)
    records.set_cell(experiment.name, cell.key, run_id, spent_before=0.0)
    return run_id, prepared
