"""An accuracy with its interval and n, as the side-by-side report lines print it."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Rate:
    accuracy: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, row: pd.Series) -> Rate:
        """A comparison table row's accuracy, interval and n."""
        return cls(
            float(row["accuracy"]), float(row["accuracy_low"]), float(row["accuracy_high"]), int(row["n"])
        )

    def text(self) -> str:
        return f"{self.accuracy:.3f} [{self.low:.3f}, {self.high:.3f}] (n {self.n})"

    def apart_from(self, other: Rate) -> bool:
        """Whether the two intervals do not overlap."""
        return self.low > other.high or self.high < other.low

    def minus(self, other: Rate) -> float:
        """How much more accurate this rate is than `other`, to the three places the lines print."""
        return round(self.accuracy - other.accuracy, 3)


def overlap_words(first: Rate, second: Rate) -> str:
    return "the intervals do not overlap" if first.apart_from(second) else "the intervals overlap"


def change_words(name: str, before: Rate, after: Rate) -> str:
    """`after` against `before` as the report lines end: 'gain +0.120, the intervals overlap'."""
    return f"{name} {after.minus(before):+.3f}, {overlap_words(before, after)}"
