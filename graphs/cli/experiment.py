"""`bongard experiment plan | run | list`: a grid of strategies x models x datasets as one study."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from agents.breaker import DEFAULT_MAX_FAILURES
from datasets_io.workspace import home_flag
from graphs.cli.console import console, error_console, progress_columns
from graphs.cli.options import AggregateOption, HomeOption, RayAddressOption
from graphs.cli.run import EXIT_NONE_DONE, EXIT_NOT_ALL_DONE, open_reader, open_store
from results.store import ResultsStore

if TYPE_CHECKING:
    from graphs.experiments.plan import CellPlan, Plan
    from graphs.experiments.spec import Experiment
    from graphs.runs.runner import ItemOutcome
    from results.grid_report import GridCell
    from results.paired import PairedTest
    from results.published import Beside

experiment_app = typer.Typer(
    help="Plan, run and list experiments: grids of strategies x models x datasets (a TOML file).",
    no_args_is_help=True,
)

FileArgument = Annotated[
    Path, typer.Argument(metavar="FILE", help="The experiment file (TOML).", show_default=False)
]
CELL_HEADINGS = (
    "dataset", "strategy", "model", "accuracy", "n", "refused", "failed", "$/solved",
    "calls", "tokens", "cost",
)  # fmt: skip
REHEARSED_HELP = "Problems per cell whose requests are rendered offline to count tokens (the rest scaled)."


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _span(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"{_money(low)}-{_money(high)}"


def plan_table(plan: Plan) -> Table:
    table = Table(title=f"experiment {plan.name}: {len(plan.cells)} cells")
    for column in ("cell", "problems", "calls", "input tokens", "output tokens", "cost", "range", "note"):
        table.add_column(column, justify="right" if column in ("problems", "calls", "cost") else "left")
    for cell in plan.cells:
        table.add_row(
            escape(cell.key),
            f"{cell.problems} x {cell.attempts}",
            "unstated" if cell.calls is None else str(cell.calls),
            "-" if cell.input_tokens is None else f"{cell.input_tokens:,}",
            "-" if cell.output_tokens is None else f"{cell.output_tokens:,}",
            _money(cell.cost_usd),
            _span(cell.cost_low_usd, cell.cost_high_usd),
            escape(cell.note),
        )
    calls = plan.calls
    table.add_section()
    table.add_row(
        "total",
        "",
        "unstated" if calls is None else str(calls),
        "",
        "",
        _money(plan.total("cost_usd")),
        _span(plan.total("cost_low_usd"), plan.total("cost_high_usd")),
        "",
    )
    return table


def _print_plan(plan: Plan) -> None:
    console.print(plan_table(plan))
    for line in sorted({line for cell in plan.cells for line in cell.counted_by}):
        console.print(f"counted: {escape(line)}", highlight=False)
    cost, direct = plan.total("cost_usd"), plan.total("direct_cost_usd")
    if cost is not None and direct is not None and direct > cost:
        console.print(
            f"batch mode: {_money(cost)} at the batch prices, {_money(direct)} sent directly: saves "
            f"{_money(direct - cost)} ({(direct - cost) / direct:.0%})",
            highlight=False,
        )


def _experiment(file: Path, batch: bool) -> Experiment:
    """The experiment in the file; with `batch`, in batch mode where its providers allow, each model
    that stays direct said."""
    from graphs.experiments.spec import read_experiment

    experiment = read_experiment(file)
    if not batch:
        return experiment
    batched, direct = experiment.in_batch_mode()
    for line in direct:
        error_console.print(f"batch mode: {escape(line)}", highlight=False)
    return batched


BatchOption = Annotated[
    bool,
    typer.Option(
        "--batch",
        metavar="",
        help="Cells whose providers have a batch API (openai, anthropic, gemini) in batch mode, at "
        "their batch price (-M batch=true); their cells run at once, so a batch gathers them.",
    ),
]


@experiment_app.command("plan")
def plan(
    file: FileArgument,
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help="Print the plan as one JSON object.")
    ] = False,
    rehearse: Annotated[int, typer.Option(min=1, metavar="N", help=REHEARSED_HELP)] = 3,
    batch: BatchOption = False,
    home: HomeOption = None,
) -> None:
    """Every cell of the grid: its calls, tokens and cost (with a low-high range), before any is paid.

    Nothing is sent to a model: each cell's requests are rendered offline on a few problems and
    counted by its provider's rules; cells already stored with the same settings cost what is left.
    """
    from graphs.experiments.plan import plan_experiment

    experiment = _experiment(file, batch)
    found = plan_experiment(experiment, open_reader(home), home, rehearsed=rehearse)
    if as_json:
        print(json.dumps(found.as_json()))
        return
    _print_plan(found)


@experiment_app.command("run")
def run(
    file: FileArgument,
    budget: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            metavar="USD",
            help="Stop before a call that could carry the experiment's spending past USD (every run of "
            "this experiment counted, earlier sessions too); resume with a larger one.",
            show_default=False,
        ),
    ] = None,
    executor: Annotated[
        Literal["local", "ray"] | None,
        typer.Option(
            help="Where cells are solved (default: the file's executor, else local).", show_default=False
        ),
    ] = None,
    ray_address: RayAddressOption = None,
    rehearse: Annotated[int, typer.Option(min=1, metavar="N", help=REHEARSED_HELP)] = 3,
    max_failures: Annotated[
        int,
        typer.Option(
            min=0, metavar="N", help="Stop when the first N requests to an endpoint all fail (0: never)."
        ),
    ] = DEFAULT_MAX_FAILURES,
    batch: BatchOption = False,
    home: HomeOption = None,
) -> None:
    """Run every cell of the grid, reusing stored runs with the same settings, within a budget.

    Exit code 0 when every cell is complete, 3 when the budget or a failure left some to do (the
    command printed resumes it), 4 when nothing was done.
    """
    from graphs.experiments.grid import run_grid
    from graphs.experiments.plan import Plan, planned

    experiment = _experiment(file, batch)
    chosen = executor or experiment.executor
    if chosen == "ray" and budget is not None:
        raise typer.BadParameter(
            "--budget watches this process's calls: run the grid locally", param_hint="--budget"
        )
    cluster = None
    if chosen == "ray":  # imported first: without the ray extra, this is the one-line refusal
        from graphs.cluster.executor import ClusterOptions

        cluster = ClusterOptions(ray_address or experiment.ray_address, experiment.workers)
    store = open_store(home)
    cells = planned(experiment, store, home, ready=True, rehearsed=rehearse)
    found = Plan(experiment.name, [cell for cell, _ in cells])
    if budget is not None and (unpriced := [c.key for c in found.cells if c.calls and c.cost_usd is None]):
        raise typer.BadParameter(
            f"a budget needs every cell priced; no price or token estimate for {unpriced[0]}",
            param_hint="--budget",
        )
    _print_plan(found)
    planned_cost = found.total("cost_usd")
    done = {"calls": 0, "cost": 0.0, "cells": 0}
    with Progress(*progress_columns(), console=error_console, transient=False) as progress:
        task = progress.add_task("starting", total=found.calls or 0)

        def on_cell(cell: CellPlan, run_id: str) -> None:
            done["cells"] += 1
            progress.console.print(
                f"cell {done['cells']}/{len(found.cells)} {escape(cell.key)}: run {run_id}"
            )

        def on_item(cell: CellPlan, item: ItemOutcome) -> None:
            done["calls"] += item.calls
            done["cost"] += item.cost_usd or 0.0
            if item.error:
                progress.console.print(f"[red]failed:[/red] {escape(item.problem)}: {escape(item.error)}")
            progress.update(
                task,
                advance=item.calls,
                description=f"{done['cells']}/{len(found.cells)} cells, {done['calls']} calls, "
                f"{_money(done['cost'])} of {_money(planned_cost)} planned",
            )

        outcome = run_grid(
            experiment,
            cells,
            store,
            home,
            budget,
            on_item=on_item,
            on_cell=on_cell,
            max_failures=max_failures,
            cluster=cluster,
            announce=progress.console.print,
        )
    _print_outcome(experiment.name, outcome.runs, store)
    console.print(f"spent {_money(outcome.spent_usd)} of {_money(planned_cost)} planned", highlight=False)
    if outcome.stopped is not None:
        error_console.print(f"[yellow]stopped:[/yellow] {escape(outcome.stopped)}")
        more = (budget or 0.0) + (found.total("cost_high_usd") or 0.0)
        again = f"bongard experiment run {shlex.quote(str(file))}" + (
            f" --budget {more:.4f}" if budget else ""
        )
        again += home_flag(home)
        console.print(f"resume with `{again}`", highlight=False)
    statuses = [store.summary(run_id).status for run_id in outcome.runs.values()]
    if all(status == "complete" for status in statuses) and len(statuses) == len(found.cells):
        return
    anything = any(store.summary(run_id).done for run_id in outcome.runs.values())
    raise typer.Exit(EXIT_NOT_ALL_DONE if anything else EXIT_NONE_DONE)


def _print_outcome(name: str, runs: dict[str, str], store: ResultsStore) -> None:
    table = Table(title=f"experiment {name}")
    for column in ("cell", "run", "status", "done", "solved", "calls", "cost"):
        table.add_column(column)
    for key, run_id in runs.items():
        summary = store.summary(run_id)
        table.add_row(
            escape(key),
            run_id,
            summary.status,
            f"{summary.done}/{summary.planned or summary.items}",
            summary.solved_text,
            str(summary.calls),
            _money(summary.cost_usd),
        )
    console.print(table)


@experiment_app.command("list")
def list_experiments(
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help="Print each experiment as JSON.")
    ] = False,
    home: HomeOption = None,
) -> None:
    """The stored experiments: cells, runs complete, planned and spent cost."""
    from results.experiments import ExperimentRecords

    store = open_reader(home)
    records = ExperimentRecords(store)
    rows: list[dict[str, Any]] = []
    for name in records.names():
        stored = records.get(name)
        statuses = [store.summary(run_id).status for run_id in stored.cells.values()]
        spent, unpriced = records.spent(name)
        rows.append(
            {
                "name": name,
                "file": stored.path,
                "cells": len(stored.plan.get("cells", [])),
                "complete": sum(status == "complete" for status in statuses),
                "planned_cost": stored.plan.get("cost"),
                "spent": None if unpriced else spent,
                "runs": stored.cells,
            }
        )
    if as_json:
        print(json.dumps(rows))
        return
    table = Table(title="experiments")
    for column in ("name", "cells", "complete", "planned", "spent", "file"):
        table.add_column(column)
    for row in rows:
        cells = [str(row["cells"]), str(row["complete"]), _money(row["planned_cost"]), _money(row["spent"])]
        table.add_row(row["name"], *cells, escape(row["file"]))
    console.print(table)


@experiment_app.command("compare")
def compare(
    experiment: Annotated[
        str, typer.Argument(metavar="EXPERIMENT", help="The experiment file, or its name in the store.")
    ],
    form: Annotated[
        str,
        typer.Option("--format", metavar="FORMAT", help="table (terminal), csv, json, markdown or latex."),
    ] = "table",
    aggregate: AggregateOption = "majority",
    published: Annotated[
        bool,
        typer.Option(
            "--published",
            metavar="",
            help="Print each published number of the papers' headline tables beside the cell that "
            "runs it (the model labelled as the paper's row), and whether it lies in the cell's interval.",
        ),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR", help="Write the figures here: a heat map per dataset, the paired differences."
        ),
    ] = None,
    home: HomeOption = None,
) -> None:
    """Each cell's accuracy with its interval, n, refused, failed, cost per solved problem and its
    plan beside what it cost; paired tests on the same problems between strategies of one model and
    models of one strategy (exact McNemar, Holm-corrected over all of them)."""
    from results.counting import Aggregate, Counting
    from results.grid_report import FORMATS, formatted, grid_report
    from results.published import beside

    if form not in FORMATS:
        raise typer.BadParameter(f"{form!r}: expected one of {', '.join(FORMATS)}", param_hint="--format")
    store = open_reader(home)
    cells = _grid_cells(store, experiment)
    report = grid_report(store, cells, Counting(Aggregate.parse(aggregate)))
    if out is not None:
        from results.grid_figures import differences, heat_maps

        out.mkdir(parents=True, exist_ok=True)
        for path in [*heat_maps(report, out), differences(report, out)]:
            if path is not None:
                error_console.print(f"wrote {path}", highlight=False)
    found = beside(report.rows) if published else []
    if form == "json" and published:
        print(json.dumps({**report.as_json(), "published": [b.as_json() for b in found]}))
        return
    if form != "table":
        print(formatted(report, form), end="")
        return
    console.print(_cells_table(report.rows))
    if published:
        console.print(_published_table(found))
    if report.tested:
        console.print(_tests_table(report.tests))
    else:
        console.print("no paired tests: under --aggregate mean a problem is a share, not solved or not")


def _grid_cells(store: ResultsStore, named: str) -> list[GridCell]:
    """The cells of the experiment a file or a name gives."""
    from results.grid_report import stored_cells

    if named.endswith(".toml") or Path(named).is_file():
        from graphs.experiments.spec import read_experiment

        named = read_experiment(Path(named)).name
    return stored_cells(store, named)


def _cells_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="cells")
    for column in CELL_HEADINGS:
        table.add_column(column)
    for row in rows:
        interval = (
            f"{row['accuracy']:.3f} [{row['accuracy_low']:.3f}, {row['accuracy_high']:.3f}]"
            if row["accuracy"] is not None and row["accuracy_low"] is not None
            else "-"
        )
        table.add_row(
            escape(row["dataset"]),
            escape(row["strategy"]),
            escape(row["model"]),
            interval,
            str(row["n"]),
            str(row["refused"]),
            str(row["failed"]),
            _money(row["cost_per_solved_usd"]),
            f"{row['calls']} of {_count(row['planned_calls'])} planned",
            f"{row['tokens']:,} of {_count(row['planned_tokens'])} planned",
            f"{_money(row['cost_usd'])} of {_money(row['planned_cost_usd'])} planned",
        )
    return table


def _tests_table(tests: list[PairedTest]) -> Table:
    from results.paired import CORRECTION

    table = Table(title=f"paired tests: exact McNemar; {CORRECTION}")
    for column in (
        "same",
        "first",
        "second",
        "n",
        "first only",
        "second only",
        "difference",
        "p",
        "p (Holm)",
    ):
        table.add_column(column)
    for test in tests:
        low, high = test.interval()
        table.add_row(
            escape(test.family),
            escape(test.first.split(" | ")[0 if "model" in test.family else 1]),
            escape(test.second.split(" | ")[0 if "model" in test.family else 1]),
            str(test.n),
            str(test.first_only),
            str(test.second_only),
            f"{test.difference:+.3f} [{low:+.3f}, {high:+.3f}]",
            f"{test.p:.4f}",
            f"{test.p_holm:.4f}" + (" *" if test.significant else ""),
        )
    return table


def _published_table(found: list[Beside]) -> Table:
    table = Table(title="published numbers beside the measured cells")
    for column in ("source", "published", "measured", "n", "inside", "protocol"):
        table.add_column(column)
    for pair in found:
        shown = pair.as_json()
        measured = (
            "-"
            if shown["low"] is None
            else f"{shown['measured']:.3f} [{shown['low']:.3f}, {shown['high']:.3f}]"
        )
        of = f" of {pair.published.of}" if pair.published.of else ""
        inside = {True: "inside", False: "OUTSIDE", None: "-"}[pair.inside]
        table.add_row(
            escape(pair.published.source),
            f"{pair.published.value:g}{of} ({pair.published.rate:.3f})",
            measured,
            str(shown["n"]),
            inside,
            escape(pair.published.protocol),
        )
    if not found:
        table.caption = (
            'no cell runs a published number: label each model as the paper\'s row (label = "GPT-4o")'
        )
    return table
