"""The panel's ink taken as one shape: the outline around all of it, and the direction of its strokes.

Many drawings are one shape made of parts (a triangle of small circles, a
hatched square, a figure of crosses). Each part alone says little; the convex
outline around all the ink says which shape they make (how closely it fits a
triangle, a rectangle or a circle, its corners, elongation and axis), and the
image gradients say whether the strokes run mostly one way.
"""

from __future__ import annotations

import math

import cv2
import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel

from agents.perception.outline import corners

Mask = NDArray[np.bool_]


class Whole(BaseModel):
    """Measures of all the ink together (an empty panel has the neutral values)."""

    triangle_fit: float = 0.0
    """Area of the convex outline around the ink / area of the smallest triangle around it (1: a triangle)."""
    rectangle_fit: float = 0.0
    """... / area of the smallest rectangle around it (1: a rectangle)."""
    circle_fit: float = 0.0
    """... / area of the smallest circle around it (1: a circle)."""
    corners: int = 0
    """Corners of the convex outline (0 when it is round)."""
    elongation: float = 1.0
    orientation: float = 0.0
    """Angle of the convex outline's long axis in degrees, 0 horizontal, counter-clockwise, in [0, 180)."""
    density: float = 0.0
    """Share of the convex outline covered in ink."""
    stroke_balance: float = 0.0
    """Horizontal minus vertical stroke edges, over all edges: 1 all horizontal, -1 all vertical."""
    stroke_alignment: float = 0.0
    """How far the strokes share one direction (0: every direction alike, 1: all parallel)."""


def _strokes(ink: Mask) -> tuple[float, float]:
    """Balance and alignment of the stroke directions, from the image's structure tensor."""
    smooth = cv2.GaussianBlur(ink.astype(np.float32), (0, 0), 1.0)
    dx, dy = cv2.Sobel(smooth, cv2.CV_32F, 1, 0), cv2.Sobel(smooth, cv2.CV_32F, 0, 1)
    xx, yy, xy = float((dx * dx).sum()), float((dy * dy).sum()), float((dx * dy).sum())
    total = xx + yy
    if total <= 0:
        return 0.0, 0.0
    return (yy - xx) / total, math.hypot(xx - yy, 2 * xy) / total  # a horizontal stroke's edges vary in y


def whole(ink: Mask) -> Whole:
    points = cv2.findNonZero(ink.astype(np.uint8))
    if points is None:
        return Whole()
    hull = cv2.convexHull(points)
    area = float(cv2.contourArea(hull))
    if area < 1:
        return Whole()
    triangle, _ = cv2.minEnclosingTriangle(hull.astype(np.float32))
    (_, _), (width, height), _ = cv2.minAreaRect(hull)
    (_, _), radius = cv2.minEnclosingCircle(hull)
    outline = np.zeros(ink.shape, np.uint8)
    cv2.fillConvexPoly(outline, hull, 1)
    contours, _ = cv2.findContours(outline, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    moments = cv2.moments(hull)
    angle = 0.5 * math.degrees(math.atan2(2 * moments["mu11"], moments["mu20"] - moments["mu02"]))
    balance, alignment = _strokes(ink)
    return Whole(
        triangle_fit=min(1.0, area / max(float(triangle), 1.0)),
        rectangle_fit=min(1.0, area / max(width * height, 1.0)),
        circle_fit=min(1.0, area / (math.pi * radius**2)),
        corners=corners(max(contours, key=lambda c: float(cv2.contourArea(c))))[0],
        elongation=max(width, height) / max(min(width, height), 1.0),
        orientation=(-angle) % 180,
        density=min(1.0, float(ink.sum()) / area),
        stroke_balance=balance,
        stroke_alignment=alignment,
    )
