"""The comparison's figures, drawn to be put in a paper as they are.

Every bar carries its value and n, every rate its 95% interval; models are
short aliases (M1, M2, ...) with their full specs in the legend, so long specs
never overprint; problems run in numeric order and a problem a run never
attempted is drawn apart from one it failed to solve; cost is in dollars, tokens
have their own plot; nothing unjudged or unpriced is drawn as a zero.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from datasets_io.images import natural_key
from results.counting import solved_count
from results.figures import FigureFormat, figure_file

if TYPE_CHECKING:
    from matplotlib.axes import Axes

FIGURES = ("accuracy", "coverage", "any_vs_best", "cost_per_solved", "tokens_per_solved")
"""The files `write_figures` writes, without their format suffix, in reading order."""
SOLVED, UNSOLVED, UNJUDGED, NOT_ATTEMPTED = "#2ca02c", "#f4b6b6", "#f6e08c", "#d9d9d9"
INTERVAL_GID = "interval"
"""The id the interval bars carry in an SVG file, for readers and tests that look for them."""


def model_aliases(models: pd.Series) -> dict[str, str]:
    """M1, M2, ... per model spec in order of first appearance."""
    return {model: f"M{index}" for index, model in enumerate(dict.fromkeys(models), start=1)}


def write_figures(table: pd.DataFrame, problems: pd.DataFrame, out: Path, fmt: FigureFormat = "png") -> None:
    """The five figures of a comparison, as `out/<name>.<fmt>`; none where the runs have no stored item
    yet (a run just started or interrupted at once has nothing to draw)."""
    if table.empty:
        return
    aliases = model_aliases(table["model"])
    _accuracy(table, aliases, out / f"accuracy.{fmt}")
    _coverage(problems, aliases, out / f"coverage.{fmt}")
    _any_vs_best(problems, out / f"any_vs_best.{fmt}")
    _per_solved(table, aliases, "cost_per_solved_usd", out / f"cost_per_solved.{fmt}")
    _per_solved(table, aliases, "tokens_per_solved", out / f"tokens_per_solved.{fmt}")


LABEL_WIDTH = 14
"""Characters an x-axis label's line holds; longer names are wrapped, so neighbours never overprint."""


def dataset_names(datasets: Iterable[str]) -> dict[str, str]:
    """A short name for each dataset, as a figure shows it: a folder given as a path is named by its
    last parts, as few as keep two datasets apart; a catalogue name stays as it is."""
    paths = {str(d): [part for part in str(d).replace("\\", "/").split("/") if part] for d in datasets}
    for depth in range(1, max((len(parts) for parts in paths.values()), default=1) + 1):
        names = {d: "/".join(parts[-depth:]) or d for d, parts in paths.items()}
        if len(set(names.values())) == len(names):
            return names
    return {d: d for d in paths}


def wrapped(label: str) -> str:
    """An x-axis label in lines of at most `LABEL_WIDTH` characters, broken at hyphens and slashes
    where it can be."""
    lines: list[str] = []
    for line in label.split("\n"):
        spaced = line.replace("-", "- ").replace("/", "/ ")
        pieces = textwrap.wrap(spaced, LABEL_WIDTH + 1, break_long_words=True) or [""]
        lines.extend(piece.replace("- ", "-").replace("/ ", "/").strip() for piece in pieces)
    return "\n".join(lines)


def _groups(table: pd.DataFrame) -> list[str]:
    """The x-axis group of each row: its strategy, and its dataset's short name when there are
    several, wrapped to `LABEL_WIDTH`."""
    several = table["dataset"].nunique() > 1
    names = dataset_names(table["dataset"].astype(str))
    return [
        wrapped(f"{s}\n{names[str(d)]}" if several else str(s))
        for s, d in zip(table["strategy"], table["dataset"], strict=True)
    ]


def _bar_positions(table: pd.DataFrame, aliases: dict[str, str]) -> tuple[list[float], list[str], float]:
    """x of each row's bar (one group per strategy, one bar per model inside it), the group
    names in order, and the bar width."""
    labels = _groups(table)
    groups = list(dict.fromkeys(labels))
    width = 0.8 / max(labels.count(group) for group in groups)
    positions, placed = [], dict.fromkeys(groups, 0)
    for group in labels:  # the bars of a group side by side, centred on its tick
        positions.append(groups.index(group) + width * (placed[group] + 0.5 - labels.count(group) / 2))
        placed[group] += 1
    return positions, groups, width


def of_problems(n: int, problems: int) -> str:
    """ " of 30" when only some of a row's problems were scored (the rest unjudged)."""
    return f" of {problems}" if n < problems else ""


def _figure_width(bars: int, aliases: dict[str, str], groups: int = 1) -> float:
    """Room for the bars, for each group's label (`LABEL_WIDTH` characters) and, beside them, the
    model legend (its longest line: an alias and a spec such as
    `openai-compatible:NAME@http://HOST:PORT/v1`), so the axes never collapse to fit it."""
    axes = max(6.0, 2.0 + 0.7 * bars, 1.5 + groups * _text_width(["x" * LABEL_WIDTH]))
    return axes + _text_width(f"{alias}  {model}" for model, alias in aliases.items())


def _text_width(lines: Iterable[str]) -> float:
    """Inches the longest of `lines` takes at the figures' font size, with a margin."""
    return 0.6 + 0.065 * max((len(line) for line in lines), default=0)


def _model_legend(axes: Axes, aliases: dict[str, str], colours: dict[str, str]) -> None:
    from matplotlib.patches import Patch

    handles = [Patch(color=colours[m], label=f"{alias}  {m}") for m, alias in aliases.items()]
    axes.legend(handles=handles, title="model", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def _colours(aliases: dict[str, str]) -> dict[str, str]:
    palette = [f"C{i % 10}" for i in range(len(aliases))]
    return dict(zip(aliases, palette, strict=True))


def _accuracy(table: pd.DataFrame, aliases: dict[str, str], path: Path) -> None:
    """Accuracy with its 95% interval, value and n on each bar; an unjudged run gets no bar,
    only the word."""
    accuracy = pd.to_numeric(table["accuracy"], errors="coerce")
    low = (accuracy - pd.to_numeric(table["accuracy_low"], errors="coerce")).fillna(0)
    high = (pd.to_numeric(table["accuracy_high"], errors="coerce") - accuracy).fillna(0)
    positions, groups, width = _bar_positions(table, aliases)
    colours = _colours(aliases)
    with figure_file(path, (_figure_width(len(table), aliases, len(groups)), 4.5)) as axes:
        axes.bar(positions, accuracy.fillna(0), width, color=[colours[m] for m in table["model"]])
        bars = axes.errorbar(
            positions, accuracy.fillna(0), yerr=[low, high], fmt="none", ecolor="black", capsize=3
        )
        for line in (*bars.lines[1], *bars.lines[2]):
            line.set_gid(INTERVAL_GID)
        for x, value, top, n, total, alias in zip(
            positions,
            accuracy,
            accuracy + high,
            table["n"],
            table["problems"],
            table["model"].map(aliases),
            strict=True,
        ):
            text = f"{alias}\nunjudged" if value != value else f"{value:.2f}\nn={n}{of_problems(n, total)}"
            axes.annotate(
                text, (x, 0.01 if value != value else top + 0.01), ha="center", va="bottom", fontsize=7
            )
        axes.set_xticks(range(len(groups)), groups)
        axes.set_ylabel("accuracy: solved / n (95% Wilson interval)")
        axes.set_ylim(0, 1.2)
        axes.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
        axes.set_title("Problems solved per strategy and model")
        _model_legend(axes, aliases, colours)


COVERAGE_COLUMNS = 100
"""The most problem columns the coverage figure draws; more are binned."""


def _coverage(problems: pd.DataFrame, aliases: dict[str, str], path: Path) -> None:
    """Which problems each run solved, failed to solve, left unjudged or never attempted, in
    numeric order."""
    from matplotlib.patches import Patch

    rows = problems["strategy"] + " · " + problems["model"].map(aliases)
    if problems["dataset"].nunique() > 1:
        rows = rows + " · " + problems["dataset"]
    frame = problems.assign(row=rows)
    grid = frame.pivot_table(index="row", columns="problem", values="solved", aggfunc="max")
    grid = grid[sorted(grid.columns, key=natural_key)]
    scored = frame.pivot_table(index="row", columns="problem", values="scored", aggfunc="min")
    scored = scored.reindex(index=grid.index, columns=grid.columns)
    problem_names = list(grid.columns)
    grid, scored, size_of_bin = _binned(grid, scored)
    names = [p.rsplit("/", 1)[-1] for p in grid.columns]
    beside = _text_width(grid.index) + _text_width(f"{alias} = {model}" for model, alias in aliases.items())
    size = (max(6.0, 2.5 + 0.11 * len(names)) + beside, max(2.0, 1.2 + 0.35 * len(grid)))
    with figure_file(path, size) as axes:
        axes.imshow(_cell_colours(grid, scored), aspect="auto", interpolation="nearest")
        axes.set_yticks(range(len(grid)), grid.index)
        axes.set_xticks(range(len(names)), names, rotation=90, fontsize=5 if len(names) > 40 else 7)
        axes.set_xlabel(
            "problem"
            if size_of_bin == 1
            else f"problems, {len(problem_names)} in bins of {size_of_bin} from the one named (green: all "
            "solved, pale red: none)"
        )
        axes.set_title("Which problems each strategy and model solved", pad=14)
        legend = [
            Patch(color=SOLVED, label="solved"),
            Patch(color=UNSOLVED, label="not solved"),
            Patch(color=UNJUDGED, label="unjudged"),
            Patch(color=NOT_ATTEMPTED, label="not attempted"),
            *(Patch(visible=False, label=f"{alias} = {m}") for m, alias in aliases.items()),
        ]
        axes.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        _mark_datasets(axes, list(grid.columns))


def _binned(solved: pd.DataFrame, scored: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """The coverage grid in at most `COVERAGE_COLUMNS` columns: past that, consecutive problems are
    binned, each bin named by its first problem and coloured by the share its scored problems solved
    (a figure of 5,000 problems stays readable and its size bounded); and the bin size."""
    columns = list(solved.columns)
    size = math.ceil(len(columns) / COVERAGE_COLUMNS)
    if size <= 1:
        return solved, scored, 1
    bins = [columns[start : start + size] for start in range(0, len(columns), size)]
    counted = solved.where(scored > 0)
    shares = pd.DataFrame({b[0]: counted[b].mean(axis=1) for b in bins}, index=solved.index)
    judged = pd.DataFrame({b[0]: scored[b].max(axis=1) for b in bins}, index=solved.index)
    attempted = pd.DataFrame({b[0]: solved[b].notna().any(axis=1) for b in bins}, index=solved.index)
    shares = shares.where(judged > 0, 0.0).where(attempted)  # unjudged bins 0 under the mask below
    return shares, judged.where(attempted), size


def _cell_colours(solved: pd.DataFrame, scored: pd.DataFrame) -> Any:
    """RGBA per cell: green to pale red by the share solved, one colour for an attempted problem
    no judging decided, another for one the run never attempted."""
    import numpy as np
    from matplotlib.colors import LinearSegmentedColormap, to_rgba

    shades = LinearSegmentedColormap.from_list("solved", [UNSOLVED, SOLVED])
    values = solved.to_numpy(dtype=float)
    cells = shades(np.nan_to_num(values))
    cells[scored.to_numpy(dtype=float) == 0] = to_rgba(UNJUDGED)
    cells[np.isnan(values)] = to_rgba(NOT_ATTEMPTED)
    return cells


def _mark_datasets(axes: Axes, problems: list[str]) -> None:
    """A white rule between datasets and each dataset's name above its columns."""
    datasets = [p.rsplit("/", 1)[0] for p in problems]
    starts = [i for i, d in enumerate(datasets) if i == 0 or d != datasets[i - 1]]
    if len(starts) < 2:
        return
    names = dataset_names(datasets)
    for start, end in zip(starts, [*starts[1:], len(datasets)], strict=True):
        if start:
            axes.axvline(start - 0.5, color="white", linewidth=3)
        axes.annotate(
            wrapped(names[datasets[start]]),
            ((start + end - 1) / 2, 1.0),
            xycoords=("data", "axes fraction"),
            ha="center",
            va="bottom",
            fontsize=7,
            xytext=(0, 2),
            textcoords="offset points",
        )


def _any_vs_best(problems: pd.DataFrame, path: Path) -> None:
    """Per dataset, side by side: problems solved by any strategy and model, and by the best
    single one, out of the problems attempted there."""
    rows = []
    names = dataset_names(problems["dataset"].astype(str).unique())
    for dataset, group in problems.groupby("dataset"):
        best = solved_count(group.groupby(["strategy", "model"])["solved"].sum().max())
        any_solved = int((group.groupby("problem")["solved"].max() > 0).sum())
        label = f"{wrapped(names[str(dataset)])}\n({group['problem'].nunique()} problems)"
        rows.append((label, any_solved, best))
    with figure_file(path, (max(5.0, 2.0 + 2.0 * len(rows)), 4.0)) as axes:
        for offset, (label, values, colour) in enumerate(
            [
                ("any strategy and model", [r[1] for r in rows], SOLVED),
                ("best single", [r[2] for r in rows], "C0"),
            ]
        ):
            x = [index - 0.2 + 0.4 * offset for index in range(len(rows))]
            drawn = axes.bar(x, values, 0.4, label=label, color=colour)
            axes.bar_label(drawn, padding=2, fontsize=8)
        axes.set_xticks(range(len(rows)), [r[0] for r in rows])
        axes.set_ylabel("problems solved")
        axes.margins(y=0.15)
        axes.set_title("Solved by any strategy and model vs the best single one")
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


PER_SOLVED = {
    "cost_per_solved_usd": (
        "US dollars per solved problem",
        "Cost per solved problem",
        "${:,.4g}",
        "unpriced",
    ),
    "tokens_per_solved": (
        "model tokens per solved problem",
        "Tokens per solved problem",
        "{:,.0f}",
        "no tokens",
    ),
}
"""Per column: axis label, title, value format, and the word for a run with no figure."""


def _per_solved(table: pd.DataFrame, aliases: dict[str, str], column: str, path: Path) -> None:
    """Cost (in dollars) or tokens per solved problem; a run that solved nothing, was never
    priced or used no tokens gets its reason, not a bar of zero."""
    label, title, value_format, missing = PER_SOLVED[column]
    values = pd.to_numeric(table[column], errors="coerce")
    if column == "tokens_per_solved":
        values = values.where(values > 0)  # offline agents report no tokens: not a measured zero
    solved = pd.to_numeric(table["solved"], errors="coerce").fillna(0)
    positions, groups, width = _bar_positions(table, aliases)
    colours = _colours(aliases)
    with figure_file(path, (_figure_width(len(table), aliases, len(groups)), 4.5)) as axes:
        axes.bar(positions, values.fillna(0), width, color=[colours[m] for m in table["model"]])
        top = float(values.max()) if values.notna().any() and values.max() > 0 else 1.0
        for x, value, count, alias in zip(
            positions, values, solved, table["model"].map(aliases), strict=True
        ):
            reason = "none solved" if count == 0 else missing if value != value else None
            text = f"{alias}\n{reason}" if reason else value_format.format(value)
            axes.annotate(
                text,
                (x, 0 if reason else value),
                ha="center",
                va="bottom",
                fontsize=7,
                xytext=(0, 2),
                textcoords="offset points",
            )
        if column == "cost_per_solved_usd":
            axes.yaxis.set_major_formatter("${x:,.3g}")  # sub-cent costs stay readable
        axes.set_ylim(0, top * 1.2)
        axes.set_xticks(range(len(groups)), groups)
        axes.set_ylabel(label)
        axes.set_title(textwrap.fill(title, 60))
        _model_legend(axes, aliases, colours)
