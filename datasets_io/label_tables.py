"""A dataset's concept table as its authors keep it: rows in file order, and each problem's row.

Concept-selection distractors walk this table, as the Bongard-RWR+ code walks `labels.csv` from a
problem's row (`src/strategy/selection/selection.py`): the pool is every row of the table, not only
the problems a user happens to have, and the order is the file's. A dataset with no such table
(Bongard-HOI, -OpenWorld, -LOGO, a plain folder) walks its own problems in dataset order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from datasets_io.problem import Concept


@dataclass(frozen=True)
class LabelTable:
    source: str
    """Where the rows come from, for messages (a file, or the dataset's own problems)."""
    rows: tuple[Concept, ...]
    row_of: Mapping[str, int] = field(default_factory=dict)
    """A problem id -> its row."""

    @classmethod
    def of_problems(cls, concepts: Iterable[tuple[str, Concept]], source: str) -> LabelTable:
        """The table of a dataset without one: its problems' concepts in dataset order."""
        listed = list(concepts)
        return cls(
            source, tuple(concept for _, concept in listed), {pid: n for n, (pid, _) in enumerate(listed)}
        )
