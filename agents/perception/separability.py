"""Deciding sides by separability: the test images go where they leave the two sides most separable.

A Bongard problem's sides differ in one property and vary freely in the rest,
so a measure that splits the six panels from the six is evidence, and one that
does not is noise. How cleanly a measure splits two sets is the share of
(left, right) pairs it orders the same way, as |2 AUC - 1|: 1 when every left
value lies beyond every right one, 0 when the sides are mixed. A split of the
panels is as separable as the sum of that over all measures, each raised to
`SHARPNESS`, so a measure splitting the sides exactly outweighs many that
nearly do. A pair of test images known to belong to different sides goes the
way (first left and second right, or the swap) whose split is the more
separable: the test nearer the left panels in the measures that split the sides
goes left, even when a threshold would put both on one side. A single test
image goes to the side whose split with it is the more separable. Exact ties
(the tests measure alike) go to the side of the nearest context panel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from agents.perception.rules import Row, Side
from agents.perception.table import COLUMNS, Column

Table = NDArray[np.float64]
DECIDING = 3
"""Measures named as the ones that decided."""

SHARPNESS = 32
"""The power on each measure's separation. Chosen on the odd classic problems by
`python -m benchmarks.perception` (it reports the even ones): a higher power trusts
near-perfect separators more."""


def table(rows: Sequence[Row]) -> Table:
    """Rows as a (panels x measures) array in the order of `table.COLUMNS`."""
    return np.array([[row[column.name] for column in COLUMNS] for row in rows], dtype=float).reshape(
        len(rows), len(COLUMNS)
    )


def separation(left: Table, right: Table) -> Table:
    """Per measure, |2 AUC - 1|: how cleanly its values split the left panels from the right ones."""
    difference = left[:, np.newaxis, :] - right[np.newaxis, :, :]
    auc = ((difference > 0) + 0.5 * (difference == 0)).mean(axis=(0, 1))
    return np.asarray(np.abs(2 * auc - 1))


@dataclass(frozen=True)
class Decision:
    """Sides for the test images, and the measures whose separation favoured them most."""

    sides: tuple[Side, ...]
    deciding: tuple[Column, ...]
    """Empty when every measure was indifferent and the nearest context panel decided."""


def _weighed(chosen: Table, rejected: Table, sharpness: float) -> tuple[Column, ...]:
    """The measures that favour the chosen split over the rejected one most, most first."""
    gain = chosen**sharpness - rejected**sharpness
    order = [int(i) for i in np.argsort(-gain, kind="stable")[:DECIDING] if gain[i] > 0]
    return tuple(COLUMNS[i] for i in order)


def _nearest_sides(left: Table, right: Table, tests: Table) -> list[tuple[float, float]]:
    """Per test, its distance to the nearest left and the nearest right panel, measures standardised
    by their spread over the context panels."""
    spread = np.vstack([left, right]).std(axis=0)
    scale = np.where(spread > 0, spread, 1.0)

    def nearest(panels: Table, test: Table) -> float:
        return float(np.linalg.norm((panels - test) / scale, axis=1).min())

    return [(nearest(left, test), nearest(right, test)) for test in tests]


def _split(left: Sequence[Row], right: Sequence[Row]) -> tuple[Table, Table]:
    if not left or not right:
        raise ValueError("separability needs context panels on both sides")
    return table(left), table(right)


def pair_sides(
    left: Sequence[Row], right: Sequence[Row], first: Row, second: Row, sharpness: float = SHARPNESS
) -> Decision:
    """The sides of two test images that belong to different sides: the more separable assignment."""
    lefts, rights = _split(left, right)
    tests = table([first, second])
    straight = separation(np.vstack([lefts, tests[:1]]), np.vstack([rights, tests[1:]]))
    swapped = separation(np.vstack([lefts, tests[1:]]), np.vstack([rights, tests[:1]]))
    gain = float((straight**sharpness).sum() - (swapped**sharpness).sum())
    if gain == 0:
        (first_left, first_right), (second_left, second_right) = _nearest_sides(lefts, rights, tests)
        near = first_left + second_right <= first_right + second_left
        return Decision(("left", "right") if near else ("right", "left"), ())
    if gain > 0:
        return Decision(("left", "right"), _weighed(straight, swapped, sharpness))
    return Decision(("right", "left"), _weighed(swapped, straight, sharpness))


def single_side(
    left: Sequence[Row], right: Sequence[Row], row: Row, sharpness: float = SHARPNESS
) -> Decision:
    """The side of one test image: the one whose split with it is the more separable."""
    lefts, rights = _split(left, right)
    test = table([row])
    with_left = separation(np.vstack([lefts, test]), rights)
    with_right = separation(lefts, np.vstack([rights, test]))
    gain = float((with_left**sharpness).sum() - (with_right**sharpness).sum())
    if gain == 0:
        [(to_left, to_right)] = _nearest_sides(lefts, rights, test)
        return Decision(("left" if to_left <= to_right else "right",), ())
    if gain > 0:
        return Decision(("left",), _weighed(with_left, with_right, sharpness))
    return Decision(("right",), _weighed(with_right, with_left, sharpness))
