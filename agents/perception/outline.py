"""Corners of an outline, and whether its sides are straight (a polygon) or curved.

A polygon's vertices are where its outline turns sharply, and its simplified
outline keeps the same vertices when the tolerance is tightened. A curve has
neither: a circle's simplified outline gains vertices as the tolerance shrinks,
and nowhere turns sharply, so it has no corners. Small drawings are too coarse
for the tolerance test alone (a 20 px circle simplifies to a steady octagon),
so a polygon needs steady vertices and at least two sharp turns (a thin
triangle turns sharply at two tips only), or vertices that coincide with three
or more sharp turns. A dot a few pixels across has pixel
corners only: a small outline as round as a circle has none.
"""

from __future__ import annotations

import cv2
import numpy as np
from cv2.typing import MatLike
from numpy.typing import NDArray

SHARP_TURN_DEGREES = 55.0
"""A turn of the outline at least this sharp is a corner (a hexagon turns 60 degrees at each)."""
WINDOW_SHARE = 1 / 24
"""The turn at a point is measured between chords this share of the outline long (at least 2 px)."""
COARSE, FINE = 0.04, 0.015
"""Simplification tolerances, as shares of the outline's length."""
MIN_TOLERANCE_PX = (1.5, 1.0)
"""Pixel floors of the two tolerances: a drawing's pixels are not finer than this."""
SMALL_OUTLINE_PX = 40.0
ROUND_SMALL = 0.9
"""An outline shorter than `SMALL_OUTLINE_PX` and at least this round is a dot: no corners."""


def sharp_turns(points: NDArray[np.float64]) -> int:
    """How many separate places the closed outline turns by at least `SHARP_TURN_DEGREES`."""
    count = len(points)
    step = max(2, round(count * WINDOW_SHARE))
    before = points - np.roll(points, step, axis=0)
    after = np.roll(points, -step, axis=0) - points
    cross = before[:, 0] * after[:, 1] - before[:, 1] * after[:, 0]
    turn = np.abs(np.degrees(np.arctan2(cross, (before * after).sum(axis=1))))
    sharp = turn >= SHARP_TURN_DEGREES
    if sharp.all() or not sharp.any():
        return 0
    runs = np.roll(sharp, -int(np.argmin(sharp)))  # start on a point that is not sharp
    return int(np.sum(runs[1:] & ~runs[:-1]))


def _vertices(contour: MatLike, share: float, floor: float) -> int:
    perimeter = cv2.arcLength(contour, closed=True)
    return len(cv2.approxPolyDP(contour, max(share * perimeter, floor), closed=True))


def corners(contour: MatLike, circularity: float = 0.0) -> tuple[int, bool]:
    """The outline's corners and whether it is straight-sided (then the corners are its vertices);
    `circularity` is the figure's roundness (4 pi area / perimeter^2)."""
    if cv2.arcLength(contour, closed=True) < SMALL_OUTLINE_PX and circularity >= ROUND_SMALL:
        return 0, False
    turns = sharp_turns(np.asarray(contour).reshape(-1, 2).astype(float))
    coarse = _vertices(contour, COARSE, MIN_TOLERANCE_PX[0])
    steady = coarse == _vertices(contour, FINE, MIN_TOLERANCE_PX[1])
    straight = (steady and turns >= 2) or (turns >= 3 and turns == coarse)
    return (coarse if straight else turns), straight
