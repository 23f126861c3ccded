"""Rule induction over feature rows: the simplest threshold rule that separates the two sides.

A condition is `column <= t` or `column > t`. A rule holds on every panel of
one side and on no panel of the other; the search goes from simple to complex,
exact rules first: one condition, then a conjunction of two; only then one
condition allowed one exception, then two (an exact rule is a statement about
every panel; a rule with exceptions is a weaker one, and says so). Among equals
the larger margin (the gap around the threshold, relative to the column's
range) wins, then the simpler column (the order of `table.COLUMNS`). Thresholds
sit in the middle of a gap. `candidate_rules` lists the search's rules in this
order (hypotheses); `induce_rule` is its first. The rule explains; the sides of
test images are decided by separability (`separability.py`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from agents.perception.table import COLUMNS, Column

Side = Literal["left", "right"]
Row = Mapping[str, float]


@dataclass(frozen=True)
class Condition:
    column: Column
    above: bool
    """True: `value > threshold`; False: `value <= threshold`."""
    threshold: float
    margin: float
    """Half the gap around the threshold, relative to the column's range over all panels."""

    def holds(self, row: Row) -> bool:
        value = row[self.column.name]
        return value > self.threshold if self.above else value <= self.threshold

    def words(self, negated: bool = False) -> str:
        above = self.above != negated
        if self.column.whole:
            bound = int(np.floor(self.threshold)) + (1 if above else 0)
            return f"{self.column.phrase} is {'at least' if above else 'at most'} {bound}"
        return f"{self.column.phrase} is {'above' if above else 'at most'} {self.threshold:.3g}"


@dataclass(frozen=True)
class Rule:
    """`conditions` all hold on every panel of `side`, and not all on any panel of the other side."""

    side: Side
    conditions: tuple[Condition, ...]
    exceptions: int = 0
    """Context panels on which the rule is wrong."""

    def matches(self, row: Row) -> bool:
        return all(condition.holds(row) for condition in self.conditions)

    def side_of(self, row: Row) -> Side:
        return self.side if self.matches(row) else other(self.side)

    @property
    def margin(self) -> float:
        return min(condition.margin for condition in self.conditions)

    def sentences(self) -> dict[Side, str]:
        """What holds on each side, in words."""
        holds = " and ".join(condition.words() for condition in self.conditions)
        fails = " or ".join(condition.words(negated=True) for condition in self.conditions)
        return {self.side: holds, other(self.side): fails}

    def text(self) -> str:
        said = self.sentences()
        return f"Left: {said['left']}\nRight: {said['right']}"


def other(side: Side) -> Side:
    return "right" if side == "left" else "left"


def _conditions_true_on(
    holders: Sequence[Row], others: Sequence[Row], everything: Sequence[Row]
) -> list[tuple[Condition, frozenset[int]]]:
    """Conditions true on every holder, each with the set of `others` it rules out (non-empty)."""
    found = []
    for column in COLUMNS:
        values = [row[column.name] for row in holders]
        spread = max(row[column.name] for row in everything) - min(row[column.name] for row in everything)
        if spread <= 0:
            continue
        for above in (False, True):
            bound = min(values) if above else max(values)
            beyond = [v for v in (row[column.name] for row in others) if (v < bound if above else v > bound)]
            if not beyond:
                continue
            nearest = max(beyond) if above else min(beyond)
            threshold = (bound + nearest) / 2
            condition = Condition(column, above, threshold, abs(bound - nearest) / 2 / spread)
            excluded = frozenset(i for i, row in enumerate(others) if not condition.holds(row))
            found.append((condition, excluded))
    return found


def _single_conditions(left: Sequence[Row], right: Sequence[Row], exceptions: int) -> list[Rule]:
    """Every one-condition rule wrong on at most `exceptions` context panels, best first.

    Best is fewest wrong, then the larger margin, then the simpler column; the sort
    is stable, so among equals the first found stays first."""
    everything = [*left, *right]
    ranked: list[tuple[tuple[int, float, int], Rule]] = []
    for order, column in enumerate(COLUMNS):
        values = sorted({row[column.name] for row in everything})
        spread = values[-1] - values[0]
        for low, high in itertools.pairwise(values):
            for above, (side, holders, others) in itertools.product(
                (False, True), (("left", left, right), ("right", right, left))
            ):
                condition = Condition(column, above, (low + high) / 2, (high - low) / 2 / spread)
                wrong = sum(not condition.holds(r) for r in holders) + sum(condition.holds(r) for r in others)
                if wrong <= exceptions:
                    rule = Rule(side, (condition,), wrong)  # type: ignore[arg-type]
                    ranked.append(((wrong, -condition.margin, order), rule))
    return [rule for _, rule in sorted(ranked, key=lambda entry: entry[0])]


def _exact_conjunctions(left: Sequence[Row], right: Sequence[Row], size: int) -> list[Rule]:
    """Every conjunction of `size` conditions that separates the sides exactly, best first.

    Best is the larger margin, then the simpler columns (the lower indices)."""
    everything = [*left, *right]
    ranked: list[tuple[tuple[float, int], Rule]] = []
    for side, holders, others in (("left", left, right), ("right", right, left)):
        candidates = _conditions_true_on(holders, others, everything)
        for combination in itertools.combinations(enumerate(candidates), size):
            excluded = frozenset().union(*(ruled_out for _, (_, ruled_out) in combination))
            if len(excluded) < len(others):
                continue
            rule = Rule(side, tuple(condition for _, (condition, _) in combination))  # type: ignore[arg-type]
            ranked.append(((rule.margin, -sum(index for index, _ in combination)), rule))
    return [rule for _, rule in sorted(ranked, key=lambda entry: entry[0], reverse=True)]


def _ranked(
    left: Sequence[Row], right: Sequence[Row], max_conditions: int, max_exceptions: int
) -> Iterator[Rule]:
    """All rules of the allowed forms, exact and simplest first; each form searched only when reached."""
    yield from _single_conditions(left, right, 0)
    for size in range(2, max_conditions + 1):
        yield from _exact_conjunctions(left, right, size)
    yield from (rule for rule in _single_conditions(left, right, max_exceptions) if rule.exceptions)


def candidate_rules(
    left: Sequence[Row], right: Sequence[Row], limit: int, max_conditions: int = 2, max_exceptions: int = 2
) -> list[Rule]:
    """Up to `limit` rules separating the sides, distinct in words, in `induce_rule`'s order of preference."""
    found: dict[str, Rule] = {}
    for rule in _ranked(left, right, max_conditions, max_exceptions) if limit > 0 else ():
        found.setdefault(rule.text(), rule)
        if len(found) == limit:
            break
    return list(found.values())


def induce_rule(
    left: Sequence[Row], right: Sequence[Row], max_conditions: int = 2, max_exceptions: int = 2
) -> Rule | None:
    """The simplest rule separating the sides, or None when none of the allowed forms does."""
    return next(iter(candidate_rules(left, right, 1, max_conditions, max_exceptions)), None)
