"""How repeated attempts of a problem combine into a count: the one rule every table shares.

Papers count differently: Bongard in Wonderland's Table 1 gives the rounded mean
of the problems solved per run over 3 runs, its later analyses a problem solved in
at least 2 of 3 runs; others run once. `compare`, `analyze` and the run table all
take an `Aggregate` and the judging that decides free-form answers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from datasets_io.errors import BongardError

AggregateKind = Literal["majority", "mean", "any", "at-least"]
AGGREGATE_FORMS = "majority, mean, any or at-least:K"
_AT_LEAST = re.compile(r"at-least:(\d+)")


class AggregateError(BongardError, ValueError):
    """An aggregate that is not one of the forms, or one a run cannot meet; the message says which."""


@dataclass(frozen=True)
class Aggregate:
    """`majority`: solved in most attempts; `mean`: each attempt counts its share (a table's count
    is the rounded mean over attempts, Wonderland's Table 1); `any`: in one attempt at least;
    `at-least:K`: in K attempts at least."""

    kind: AggregateKind = "majority"
    at_least: int = 1

    @classmethod
    def parse(cls, text: str) -> Aggregate:
        if text in ("majority", "mean", "any"):
            return cls(text)  # type: ignore[arg-type]  # narrowed by the membership test
        match = _AT_LEAST.fullmatch(text)
        if match is None or int(match.group(1)) < 1:
            raise AggregateError(f"aggregate {text!r}: expected {AGGREGATE_FORMS} (K at least 1)")
        return cls("at-least", int(match.group(1)))

    @property
    def name(self) -> str:
        return f"at-least:{self.at_least}" if self.kind == "at-least" else self.kind

    @property
    def per_problem(self) -> bool:
        """Whether each problem is solved or not (a set of problems); `mean` gives shares only."""
        return self.kind != "mean"

    def solved(self, solved_attempts: int, attempts: int) -> float:
        """1.0 or 0.0 for a problem, or its share of solved attempts under `mean`."""
        if self.kind == "mean":
            return solved_attempts / attempts if attempts else 0.0
        if self.kind == "any":
            return float(solved_attempts >= 1)
        if self.kind == "at-least":
            return float(solved_attempts >= self.at_least)
        return float(solved_attempts * 2 > attempts)

    def check_attempts(self, run_id: str, attempts: int) -> None:
        """Refuse `at-least:K` on a run made with fewer than K attempts: no problem could count."""
        if self.kind == "at-least" and attempts < self.at_least:
            raise AggregateError(
                f"run {run_id} made {attempts} attempt(s) per problem: {self.name} can never hold; "
                f"use majority or any for it"
            )


MAJORITY = Aggregate()


def solved_count(shares: float) -> int:
    """A table's solved problems from the sum of per-problem values, rounded half up (for `mean`,
    the rounded mean over attempts of the problems solved per attempt)."""
    return math.floor(shares + 0.5)


@dataclass(frozen=True)
class Counting:
    """How a run's problems are counted: the aggregate of attempts, and the judging (its name, see
    `ResultsStore.judgings`) that decides free-form answers; None: each run's latest."""

    aggregate: Aggregate = MAJORITY
    judging: str | None = None


DEFAULT_COUNTING = Counting()
"""Most attempts, by each run's counted judging: what every table uses unless told otherwise."""


def unscored_text(row: Mapping[str, Any]) -> str:
    """What a comparison row with nothing scored shows for solved: `unjudged` while a problem waits
    for a judging, `-` when every one failed (nothing to judge), never 0."""
    return "unjudged" if int(row["problems"]) > int(row["failed"]) else "-"
