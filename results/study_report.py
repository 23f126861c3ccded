"""A human study beside model runs, as paper 003's Figure 4 reads it: solved per participant and per
model with 95% Wilson intervals, the people pooled (mean, least and most, and their majority vote per
problem), solved per category, each problem solved by whom (the heat map), and the problems people
solve and a model does not, or the other way round.

Every count is over the study's problems: one a solver left unanswered, answered "I don't know" or
that no judging accepted counts as unsolved, so every row divides by the same n.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from results.figures import FigureFormat, figure_file
from results.intervals import wilson

HUMANS = "people (majority vote)"
"""The pooled row: a problem counts as solved by people when more than half of them solved it."""


@dataclass(frozen=True)
class Solver:
    """One participant's or one model run's solved problems, by the dataset's own ids."""

    label: str
    run_id: str
    human: bool
    solved: frozenset[str]


@dataclass(frozen=True)
class StudyTable:
    problems: tuple[str, ...]
    """The study's counted problems, in the order shown."""
    categories: dict[str, str | None]
    """Each problem's category (Wonderland's five for the classic problems, else its concept group)."""
    participants: tuple[Solver, ...]
    """Those the study's inclusion rule counts."""
    models: tuple[Solver, ...]

    @property
    def majority(self) -> frozenset[str]:
        """The problems more than half of the participants solved."""
        half = len(self.participants) / 2
        return frozenset(p for p in self.problems if sum(p in s.solved for s in self.participants) > half)

    def solvers(self) -> list[Solver]:
        return [*self.participants, *self.models]


def solved_rows(table: StudyTable) -> pd.DataFrame:
    """One row per participant, the people's majority vote, and one per model: solved of n, the rate
    and its interval. The people's row also gives the mean, least and most solved of the participants."""
    n = len(table.problems)
    rows = [
        _row(s.label, "participant" if s.human else "model", len(s.solved & set(table.problems)), n)
        | {"run": s.run_id}
        for s in table.solvers()
    ]
    counts = [len(s.solved & set(table.problems)) for s in table.participants]
    if counts:
        pooled = _row(HUMANS, "people", len(table.majority), n)
        pooled |= {"mean": sum(counts) / len(counts), "least": min(counts), "most": max(counts)}
        rows.insert(len(table.participants), pooled)
    frame = pd.DataFrame(
        rows,
        columns=["solver", "kind", "solved", "n", "accuracy", "low", "high", "mean", "least", "most", "run"],
    )
    return frame.astype({"least": "Int64", "most": "Int64"})  # counts, blank for a model


def _row(label: str, kind: str, solved: int, n: int) -> dict[str, object]:
    low, high = wilson(solved, n)
    return {
        "solver": label,
        "kind": kind,
        "solved": solved,
        "n": n,
        "accuracy": round(solved / n, 3) if n else None,
        "low": low,
        "high": high,
    }


def category_rows(table: StudyTable) -> pd.DataFrame:
    """Per category: its problems, and how many of them each solver (and the people's vote) solved."""
    categories = sorted({c for c in table.categories.values() if c is not None})
    columns = {s.label: s.solved for s in table.participants}
    if table.participants:
        columns[HUMANS] = table.majority
    columns |= {s.label: s.solved for s in table.models}
    rows = []
    for category in categories:
        members = {p for p in table.problems if table.categories.get(p) == category}
        rows.append(
            {
                "category": category,
                "problems": len(members),
                **{label: len(members & solved) for label, solved in columns.items()},
            }
        )
    return pd.DataFrame(rows, columns=["category", "problems", *columns])


def one_side_only(table: StudyTable) -> pd.DataFrame:
    """Per model: the problems people (by majority) solved and the model did not, and the other way."""
    people = table.majority
    rows = [
        {
            "model": model.label,
            "people only": ", ".join(p for p in table.problems if p in people and p not in model.solved),
            "model only": ", ".join(p for p in table.problems if p in model.solved and p not in people),
        }
        for model in table.models
    ]
    return pd.DataFrame(rows, columns=["model", "people only", "model only"])


def solved_matrix(table: StudyTable) -> pd.DataFrame:
    """The participants, the people's vote and the models down, the problems across: 1 where solved."""
    rows = {s.label: s.solved for s in table.participants}
    if table.participants:
        rows[HUMANS] = table.majority
    rows |= {s.label: s.solved for s in table.models}
    data = [[int(p in solved) for p in table.problems] for solved in rows.values()]
    return pd.DataFrame(data, index=list(rows), columns=list(table.problems))


def draw_heat_map(table: StudyTable, path: Path) -> Path:
    """Figure 4's map: each participant, the people's vote and each model down, the problems across,
    a filled cell where solved; lines part the people from their vote and the vote from the models."""
    matrix = solved_matrix(table)
    width = 3.0 + 0.2 * max(len(matrix.columns), 1)
    height = 1.2 + 0.32 * max(len(matrix.index), 1)
    with figure_file(path, (width, height)) as axes:
        axes.imshow(
            matrix.to_numpy(), aspect="auto", cmap="Greens", vmin=0, vmax=1.25, interpolation="nearest"
        )
        axes.set_xticks(range(len(matrix.columns)), labels=list(matrix.columns), rotation=90)
        axes.set_yticks(range(len(matrix.index)), labels=list(matrix.index))
        axes.set_xlabel("problem")
        axes.set_title(
            "Solved by each participant, by people's majority vote, and by each model (filled: solved)"
        )
        for line in (
            (len(table.participants) - 0.5, len(table.participants) + 0.5) if table.participants else ()
        ):
            axes.axhline(line, color="black", linewidth=1)
    return path


def write_study_report(
    table: StudyTable, out: Path, fmt: FigureFormat = "png", notes: Sequence[str] = ()
) -> list[Path]:
    """The study's tables (Markdown and CSV) and its heat map in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    parts = {
        "solved": solved_rows(table),
        "by category": category_rows(table),
        "one side only": one_side_only(table),
    }
    written = []
    for name, frame in parts.items():
        path = out / f"study-{name.replace(' ', '-')}.csv"
        frame.to_csv(path, index=False)
        written.append(path)
    text = "\n\n".join(f"## {name}\n\n{table_markdown(frame)}" for name, frame in parts.items())
    (out / "study.md").write_text("\n\n".join([*notes, text]) + "\n", encoding="utf-8")
    written.append(out / "study.md")
    written.append(draw_heat_map(table, out / f"study-heat-map.{fmt}"))
    return written


def table_markdown(frame: pd.DataFrame) -> str:
    """A figure that does not apply (a model's mean over participants) reads "-", not nan."""
    return str(frame.astype(object).where(frame.notna(), "-").to_markdown(index=False))
