"""`bongard compare`: runs side by side, per strategy x model x dataset, as tables and plots; the
terminal's table holds what runs are compared by and fits 120 columns."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from graphs.cli.cells import cell_text, rate_text
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
from results.task2 import PROBE_STRATEGY

if TYPE_CHECKING:
    import pandas as pd

    from results.figures import FigureFormat
    from results.store import ResultsStore

NARROW = 120
"""The terminal table's most columns, whatever the terminal's width."""
COMPACT_COLUMNS = {
    "strategy": "strategy",
    "model": "model",
    "dataset": "dataset",
    "n": "n",
    "solved": "solved",
    "accuracy": "accuracy [95% CI]",
    "refused_share": "refused",
    "failed": "failed",
    "total_cost_usd": "cost",
}
"""The terminal table's columns by default, and their headers."""
NAMES = ("strategy", "model", "dataset")
"""Columns cut short with an ellipsis where the width needs it (a dataset path keeps its end); the
files hold them whole. Figures never are."""
SPACING = 3
"""Characters a column takes beside its text (padding and rule), with a margin."""
CAPTION = (
    "n: problems scored; accuracy: solved / n; refused: share of n refused or blocked; "
    "failed: outside n; cost: solving and judging. --wide or the files: every column"
)


def compact_table(table: pd.DataFrame, width: int = NARROW) -> Table:
    """The comparison's rows in `COMPACT_COLUMNS` within `width` characters: a row nobody judged
    reads "unjudged" for solved, accuracy at 2 digits with its interval, the names cut short where
    the width needs (the figures keep their width)."""
    from results.counting import unscored_text

    rows = []
    for row in table.to_dict("records"):
        cost, refused = row["total_cost_usd"], row["refused_share"]
        cells = {
            **{key: cell_text(row[key]) for key in NAMES},
            "n": cell_text(row["n"]),
            "solved": str(unscored_text(row) if not row["n"] else int(row["solved"])),
            "accuracy": rate_text(row, "accuracy", digits=2),
            "refused_share": "-" if refused is None or refused != refused else f"{refused:.2f}",
            "failed": cell_text(row["failed"]),
            "total_cost_usd": "unknown" if cost is None or cost != cost else f"${cost:.2f}",
        }
        rows.append(cells)
    natural = {key: max(len(header), *(len(r[key]) for r in rows)) for key, header in COMPACT_COLUMNS.items()}
    room = width - SPACING * len(COMPACT_COLUMNS) - sum(w for k, w in natural.items() if k not in NAMES)
    widths = _names_widths({key: natural[key] for key in NAMES}, room)
    shown = Table(box=box.SIMPLE_HEAD, pad_edge=False, caption=CAPTION, caption_justify="left")
    for key, header in COMPACT_COLUMNS.items():
        shown.add_column(header, justify="left" if key in NAMES else "right", no_wrap=True)
    for cells in rows:
        fitted = {key: _cut(cells[key], widths[key], keep_end=key == "dataset") for key in NAMES}
        shown.add_row(*(escape({**cells, **fitted}[key]) for key in COMPACT_COLUMNS))
    return shown


def _names_widths(natural: dict[str, int], room: int) -> dict[str, int]:
    """Each name column's width within `room`: its own where all fit, else the widest cut first,
    none below its header's 8 characters."""
    widths = dict(natural)
    while sum(widths.values()) > room and max(widths.values()) > 8:
        widest = max(widths, key=lambda key: widths[key])
        widths[widest] -= 1
    return widths


def _cut(text: str, width: int, keep_end: bool) -> str:
    """`text` within `width` characters, an ellipsis where it was cut (at the start for a path)."""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1 :] if keep_end else text[: width - 1] + "…"


def wrapped_line(line: str) -> list[str]:
    """A line under the table in pieces that fit `NARROW` columns, broken at spaces only (never
    inside a run id, a path or a strategy's name), so a search for it in the output still finds it."""
    return textwrap.wrap(
        line, NARROW - 2, subsequent_indent="    ", break_on_hyphens=False, break_long_words=False
    )


def compare(
    run_ids: Annotated[
        list[str] | None,
        typer.Argument(metavar="RUN", help="Runs to compare, ids or `latest` (default: every stored run)."),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", metavar="DIR", help="Folder for the tables and plots.")
    ] = Path("report"),
    aggregate: AggregateOption = "majority",
    judging: JudgingOption = None,
    figure_format: FigureFormatOption = FigureFormatChoice.png,
    include_incomplete: Annotated[
        bool,
        typer.Option(
            "--include-incomplete",
            metavar="",
            help="Count running, interrupted and failed runs too (left out by default, with the command "
            "that finishes each).",
        ),
    ] = False,
    mixed_rows: Annotated[
        bool,
        typer.Option(
            "--mixed-rows",
            metavar="",
            help="Let runs of one strategy x model x dataset that differ in dataset options, variant, "
            "strategy options, attempts or agent parameters share a row (refused by default).",
        ),
    ] = False,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            metavar="",
            help="Print every column of the table (tokens, costs, stops, image accuracy), not the "
            "120-column one; the files hold every column either way.",
        ),
    ] = False,
    answered: Annotated[
        bool,
        typer.Option(
            "--answered",
            metavar="",
            help="Add accuracy over the answered problems (n less those the model refused or a filter "
            "blocked in every attempt), in columns named answered_* (the table printed is the wide one).",
        ),
    ] = False,
    study: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Compare a human study's counted participants with model runs of its task (the RUNs; "
            "default: every stored run of its strategy on its dataset), as paper 003's Figure 4.",
            show_default=False,
        ),
    ] = None,
    home: HomeOption = None,
) -> None:
    """Solved problems and accuracy per strategy x model x dataset, as tables and plots. The
    terminal gets the columns runs are compared by, within 120 columns (`--wide`: every column);
    `comparison.md`, `.csv` and `.json` in `--out` hold every column."""
    from results.report import markdown, write_report
    from results.run_compatibility import select_runs

    store = open_reader(home)
    if study is not None:
        counting = Counting(Aggregate.parse(aggregate), judging)
        compare_study_views(store, study, run_ids or [], counting, out, figure_format.suffix)
        return
    chosen = [store.resolve_run(run_id) for run_id in run_ids] if run_ids else store.run_ids()
    if not chosen:
        raise typer.BadParameter("there are no runs to compare yet", param_hint="RUN")
    selection = select_runs(store, chosen, include_incomplete=include_incomplete, mixed_rows=mixed_rows)
    for line in selection.left_out:
        error_console.print(f"left out: {escape(line)}", highlight=False)
    counting = Counting(Aggregate.parse(aggregate), judging)
    table = write_report(store, selection.run_ids, out, counting, figure_format.suffix, answered)
    if table.empty:
        console.print(f"the runs compared have no stored item yet: nothing to tabulate or plot ({out})")
        return
    if wide or answered:
        console.print(markdown(table))
    else:
        width = min(console.width, NARROW)
        console.print(compact_table(table, width), width=width, soft_wrap=False)
    from graphs.reports.batch_saving import batch_savings
    from results.side_by_side import side_by_side_lines

    savings = [saving.line() for saving in batch_savings(store, selection.run_ids)]
    sections = side_by_side_lines(store, selection.run_ids, table)
    if savings:
        sections.append(("batch mode (each batched run's cost, and its calls' cost sent directly)", savings))
    for heading, lines in sections:
        console.print(f"\n{heading}:")
        for line in lines:
            pieces = [line] if wide else wrapped_line(line)
            for piece in pieces:
                console.print(f"  {escape(piece)}", highlight=False)
    probes = [r for r in selection.run_ids if store.run_config(r)["strategy"] == PROBE_STRATEGY]
    if probes:  # Task 2 as the paper reports it, beside the table's solved (neither criterion)
        from results.probe_report import probe_criteria
        from results.task2 import TABLE_9

        criteria = probe_criteria(store, probes)[["run_id", "model", "dataset", "problems", *TABLE_9]]
        criteria.to_csv(out / "probe_criteria.csv", index=False)
        console.print("\nconcept-probe runs by Table 9's criteria:\n" + criteria.to_markdown(index=False))
    console.print(f"tables and plots in {out}")


def compare_study_views(
    store: ResultsStore,
    name: str,
    run_ids: list[str],
    counting: Counting,
    out: Path,
    fmt: FigureFormat,
) -> None:
    """A study's participants beside model runs: solved with intervals, the people pooled, per
    category, one side only, the participants' agreement and the judging's with each expert."""
    from graphs.studies.comparison import compare_study
    from judges.agreement import kappa_text
    from results.study_report import (
        category_rows,
        one_side_only,
        solved_rows,
        table_markdown,
        write_study_report,
    )

    found = compare_study(store, name, run_ids, counting)
    table = found.table
    lines = [
        f"study {name}: {len(table.problems)} problems, {len(table.participants)} participant(s) counted"
    ]
    lines += [f"left out by the inclusion rule: {who}" for who in found.excluded]
    lines.append(
        "participants' agreement (Fleiss' kappa, solved or not per problem): "
        + ("needs two counted participants" if found.kappa is None else kappa_text(found.kappa))
    )
    for expert, agreement in found.experts.items():
        lines.append(
            f"judging vs expert {expert}: {agreement.agreed} of {agreement.answers} answers agree "
            f"({agreement.agreed / agreement.answers:.0%}), Cohen's kappa {kappa_text(agreement.kappa)}"
        )
    lines += found.notes
    for line in lines:
        console.print(escape(line), highlight=False)
    if not table.solvers():
        console.print(
            f"nothing to compare yet: no counted participant and no model run of {escape(found.task)} on "
            f"the study's dataset (`bongard study show {escape(name)}` lists the participants)",
            highlight=False,
        )
        return
    for heading, frame in (
        ("solved, with 95% Wilson intervals", solved_rows(table)),
        ("solved per category", category_rows(table)),
        ("problems one side solves and the other does not", one_side_only(table)),
    ):
        console.print(f"\n{heading}:\n" + table_markdown(frame))
    write_study_report(table, out, fmt, lines)
    console.print(f"tables and the heat map in {out}")
