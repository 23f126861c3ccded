"""The papers' headline numbers as data, and each beside the measured cell it can be read against.

`published_tables.json` holds every number of the headline tables of papers 000, 002, 003 and 004
with its source (paper, table, row, column), what it divides and the protocol that produced it, and
the strategy, dataset and options that run it here. A cell is read against a number when its
strategy, dataset and options are the number's and its model is labelled as the paper's row (an
experiment file labels each model with the paper's name for it: `label = "GPT-4o"`). The number
is inside when it lies in the cell's 95% interval: the paper's result is then one the measured
run could have produced.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

COMPARED_MEASURES = frozenset({"solved", "accuracy"})
"""The measures a cell's accuracy is: a count of problems solved (over `of`), or an accuracy."""


@dataclass(frozen=True)
class PublishedNumber:
    paper: str
    table: str
    row: str
    column: str
    value: float
    measure: str
    of: int | None
    strategy: str
    dataset: str
    options: Mapping[str, str]
    protocol: str
    divides: str

    @property
    def source(self) -> str:
        return f"paper {self.paper}, {self.table}, {self.row} / {self.column}"

    @property
    def rate(self) -> float:
        """The number as a share: a count over what it counts of, else the accuracy itself."""
        return self.value / self.of if self.of else self.value


@dataclass(frozen=True)
class Beside:
    """A published number beside the measured cell it is read against."""

    published: PublishedNumber
    cell: Mapping[str, Any]

    @property
    def inside(self) -> bool | None:
        """Whether the published share lies in the cell's interval (None: the cell has none)."""
        low, high = self.cell.get("accuracy_low"), self.cell.get("accuracy_high")
        if low is None or high is None:
            return None
        return bool(low <= self.published.rate <= high)

    def as_json(self) -> dict[str, Any]:
        return {
            "source": self.published.source,
            "published": self.published.value,
            "published_rate": self.published.rate,
            "measured": self.cell.get("accuracy"),
            "low": self.cell.get("accuracy_low"),
            "high": self.cell.get("accuracy_high"),
            "n": self.cell.get("n"),
            "inside": self.inside,
            "protocol": self.published.protocol,
            "divides": self.published.divides,
        }


@cache
def published_numbers() -> tuple[PublishedNumber, ...]:
    """Every headline number the package ships."""
    table = json.loads(files("results").joinpath("published_tables.json").read_text(encoding="utf-8"))
    return tuple(
        PublishedNumber(**{key: entry[key] for key in PublishedNumber.__dataclass_fields__})
        for entry in table["numbers"]
    )


def beside(rows: Sequence[Mapping[str, Any]]) -> list[Beside]:
    """Each compared published number beside the row of its cell (`grid_report` rows, which carry
    their run's strategy, dataset and options), in the order of the rows."""
    found = []
    for row in rows:
        for number in published_numbers():
            if (
                number.measure in COMPARED_MEASURES
                and (number.strategy, number.dataset, number.row)
                == (row["run_strategy"], row["run_dataset"], row["model"])
                and all(row["run_options"].get(key) == value for key, value in number.options.items())
            ):
                found.append(Beside(number, row))
    return found
