"""`bongard analyze queries | similarity | types`: the papers' analyses over stored runs.

The analyses (pandas, the graphs room, embeddings) are imported by the command that runs
them, so that `bongard --help` does not load them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from graphs.cli.console import console, error_console
from graphs.cli.options import (
    AggregateOption,
    FigureFormatChoice,
    FigureFormatOption,
    HomeOption,
    JudgingOption,
)
from graphs.cli.run import open_reader
from results.counting import Aggregate, Counting

if TYPE_CHECKING:
    import pandas as pd

analyze_app = typer.Typer(
    help="Analyses across stored runs: queries, groups, categories, probes, describers, similarity, "
    "metrics, types.",
    no_args_is_help=True,
)
RunIds = Annotated[list[str], typer.Argument(metavar="RUN", help="One or more run ids (or `latest`).")]
OutOption = Annotated[
    Path | None,
    typer.Option(
        "--out",
        metavar="DIR",
        help="Also write each table as CSV and its figure as PNG (rates with 95% intervals and n) "
        "to this folder.",
        show_default=False,
    ),
]
PROBLEM_RATE = [("accuracy", "n")]
QUERY_RATE = [("accuracy", "queries")]
ROW_LABELS = ["strategy", "model", "dataset"]


@dataclass(frozen=True)
class Shown:
    """An analysis table and how its figure reads it (`results.analysis_figures.rate_figure`)."""

    table: pd.DataFrame
    rates: list[tuple[str, str]]
    labels: list[str]
    title: str


def _queries(run_ids: list[str], home: Path | None) -> pd.DataFrame:
    from results.query_report import query_frame

    store = open_reader(home)
    frame = query_frame(store, [store.resolve_run(run) for run in run_ids])
    if frame.empty:
        raise typer.BadParameter("these runs classified no query images", param_hint="RUN")
    return frame


def _show(tables: dict[str, Shown], out: Path | None) -> None:
    """Print each table; with `out`, write it as CSV and draw its figure."""
    from results.analysis_figures import rate_figure

    for name, shown in tables.items():
        table = shown.table
        console.print(f"\n{name}\n" + (table.to_markdown(index=False) if not table.empty else "(none)"))
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            table.to_csv(out / f"{name}.csv", index=False)
            if not table.empty:
                rate_figure(table, shown.rates, shown.labels, shown.title, out / f"{name}.png")
    if out is not None:
        console.print(f"\ntables and figures in {out}")


@analyze_app.command("queries")
def queries(run_ids: RunIds, out: OutOption = None, home: HomeOption = None) -> None:
    """Query accuracy overall, on positive and negative queries, and per concept category."""
    from results.query_report import category_accuracy, query_accuracy

    frame = _queries(run_ids, home)
    polarities = [("accuracy", "queries"), ("positive_accuracy", "positive_queries")]
    polarities.append(("negative_accuracy", "negative_queries"))
    tables = {
        "query_accuracy": Shown(query_accuracy(frame), polarities, ["run_id"], "Query accuracy per run"),
        "query_category_accuracy": Shown(
            category_accuracy(frame),
            QUERY_RATE,
            ["run_id", "category"],
            "Query accuracy per concept category",
        ),
    }
    _show(tables, out)


@analyze_app.command("groups")
def groups(
    run_ids: RunIds,
    aggregate: AggregateOption = "majority",
    judging: JudgingOption = None,
    out: OutOption = None,
    home: HomeOption = None,
) -> None:
    """Solved problems and accuracy per concept group (Size, Position, Count, ... Angle)."""
    from graphs.reports.analyses import group_accuracy

    store = open_reader(home)
    counting = Counting(Aggregate.parse(aggregate), judging)
    table = group_accuracy(store, [store.resolve_run(r) for r in run_ids], counting)
    title = "Accuracy per concept group"
    _show({"group_accuracy": Shown(table, PROBLEM_RATE, [*ROW_LABELS, "group"], title)}, out)


@analyze_app.command("categories")
def categories(
    run_ids: RunIds,
    aggregate: AggregateOption = "majority",
    judging: JudgingOption = None,
    out: OutOption = None,
    home: HomeOption = None,
) -> None:
    """Solved problems and accuracy per Bongard in Wonderland category of the classic problems
    (size, concept, number, spatial, same)."""
    from graphs.reports.analyses import wonderland_category_accuracy

    store = open_reader(home)
    counting = Counting(Aggregate.parse(aggregate), judging)
    table = wonderland_category_accuracy(store, [store.resolve_run(r) for r in run_ids], counting)
    title = "Accuracy per Bongard in Wonderland category"
    _show({"category_accuracy": Shown(table, PROBLEM_RATE, [*ROW_LABELS, "category"], title)}, out)


@analyze_app.command("probes")
def probes(run_ids: RunIds, out: OutOption = None, home: HomeOption = None) -> None:
    """Concept-probe runs by Bongard in Wonderland's Table 9: problems with every panel right in every
    attempt, and in at least 2 of 3."""
    from results.probe_report import probe_criteria
    from results.task2 import TABLE_9

    store = open_reader(home)
    table = probe_criteria(store, [store.resolve_run(r) for r in run_ids])
    rates = [(f"{criterion}_rate", "problems") for criterion in TABLE_9]
    _show({"probe_criteria": Shown(table, rates, ROW_LABELS, "Table 9 criteria: problems counted")}, out)


@analyze_app.command("similarity")
def similarity(
    run_ids: RunIds,
    correct_only: Annotated[
        bool, typer.Option("--correct-only", metavar="", help="Only queries the model classified right.")
    ] = False,
    out: OutOption = None,
    home: HomeOption = None,
) -> None:
    """Similarity of each query's description to the rule it was classified by (offline MiniLM)."""
    from judges.rule_similarity import rule_description_similarity

    table = rule_description_similarity(_queries(run_ids, home), correct_only)
    if table.empty:
        raise typer.BadParameter(
            "these runs stored no rule and query description to compare", param_hint="RUN"
        )
    title = "Similarity of query descriptions to the rule (mean, 95% interval)"
    _show({"rule_similarity": Shown(table, [("mean", "pairs")], ["run_id", "polarity"], title)}, out)


def parse_task_aggregates(given: list[str], tasks: tuple[str, ...]) -> dict[str, Aggregate]:
    """`AGG` for every task, then `TASK=AGG` for one; unnamed tasks count by majority."""
    chosen = dict.fromkeys(tasks, Aggregate())
    for text in given:
        task, _, value = text.rpartition("=")
        if task and task not in tasks:
            raise typer.BadParameter(f"{task!r} is none of {', '.join(tasks)}", param_hint="--aggregate")
        for named in [task] if task else tasks:
            chosen[named] = Aggregate.parse(value)
    return chosen


@analyze_app.command("types")
def types(
    open_ended: Annotated[str, typer.Option(metavar="RUN", help="The open-ended run (Task 1), judged.")],
    probe: Annotated[str, typer.Option(metavar="RUN", help="The concept-probe run (Task 2).")],
    hypotheses: Annotated[str, typer.Option(metavar="RUN", help="The hypotheses run (Task 3), judged.")],
    aggregate: Annotated[
        list[str] | None,
        typer.Option(
            "--aggregate",
            metavar="[TASK=]RULE",
            help="How each task's attempts count, repeatable: RULE for all three or TASK=RULE for one "
            "(TASK: open-ended, concept-probe, hypotheses; RULE: majority, any or at-least:K); default "
            "majority, which is 2 of 3 for a 3-attempt run and the one attempt of a single-attempt run, "
            "as the paper counts.",
            show_default=False,
        ),
    ] = None,
    probe_criterion: Annotated[
        str,
        typer.Option(
            metavar="CRITERION",
            help="How Task 2 counts a problem: two-thirds (every panel right in at least 2 of 3 "
            "attempts, the paper's), every-attempt (every panel right in every attempt; Table 9's "
            "other count) or per-attempt (all 12 panels right in the attempts --aggregate takes).",
        ),
    ] = "two-thirds",
    judging: JudgingOption = None,
    out: Annotated[
        Path, typer.Option("--out", metavar="DIR", help="Folder for types.md, types.json, types.png.")
    ] = Path("types"),
    figure_format: FigureFormatOption = FigureFormatChoice.png,
    home: HomeOption = None,
) -> None:
    """Type I-IV: the problems solved in each task and their intersections, a table and a Venn diagram."""
    from graphs.reports.analyses import task_types_of_runs
    from results.task2 import CRITERION_WORDS
    from results.task_types import TASKS, markdown_table, write_types

    if probe_criterion not in CRITERION_WORDS:
        raise typer.BadParameter(
            f"{probe_criterion!r} is none of {', '.join(CRITERION_WORDS)}", param_hint="--probe-criterion"
        )
    criterion = next(c for c in CRITERION_WORDS if c == probe_criterion)
    chosen = parse_task_aggregates(aggregate or [], TASKS)
    countings = tuple(Counting(chosen[task], judging) for task in TASKS)
    analysis = task_types_of_runs(open_reader(home), (open_ended, probe, hypotheses), countings, criterion)
    for warning in analysis.warnings:
        error_console.print(f"[yellow]warning:[/yellow] {escape(warning)}")
    write_types(analysis.types, analysis.title, out, figure_format.suffix)
    console.print(markdown_table(analysis.types, analysis.title))
    console.print(f"problems per type and the Venn diagram in {out}")


@analyze_app.command("describers")
def describers(run_ids: RunIds, out: OutOption = None, home: HomeOption = None) -> None:
    """Query accuracy per describer x reasoner (description-based and componential runs)."""
    from results.query_report import describer_reasoner_accuracy

    table = describer_reasoner_accuracy(_queries(run_ids, home))
    if table.empty:
        raise typer.BadParameter("these runs did not classify from panel descriptions", param_hint="RUN")
    grid = table.pivot_table(index=["strategy", "describer"], columns="reasoner", values="accuracy")
    labels = ["strategy", "describer", "reasoner"]
    _show(
        {"describer_reasoner": Shown(table, QUERY_RATE, labels, "Query accuracy per describer and reasoner")},
        out,
    )
    console.print("\n" + grid.to_markdown())


@analyze_app.command("metrics")
def metrics(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN", help="A concept-generation (or other free-form) run.")
    ],
    home: HomeOption = None,
) -> None:
    """Text metrics of generated rules against the true ones: BLEU-1/2, ROUGE-L, METEOR, CIDEr,
    BERTScore, embedding similarity (Bongard-RWR+ CG)."""
    import pandas as pd

    from graphs.reports.analyses import concept_generation_metrics

    store = open_reader(home)
    result = concept_generation_metrics(store, store.resolve_run(run_id))
    rows = [{"metric": s.name, "value": s.value, "note": s.note or ""} for s in result.scores]
    console.print(pd.DataFrame(rows).to_markdown(index=False))
    console.print(
        f"{result.pairs} (true, generated) rule pairs scored; {result.skipped} answers without rules skipped"
    )
