"""A panel's perception as one row of numbers, each with the words that say it.

Rule induction searches these columns; the phrases turn a threshold on one into
a sentence. Columns are ordered simplest first (counts, then kinds of figure,
then sizes, positions and shape measures): the order breaks ties between
equally good rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from agents.perception.features import Figure, PanelPerception


@dataclass(frozen=True)
class Column:
    name: str
    phrase: str
    """What the number is, as the subject of a sentence: "the number of figures"."""
    measure: Callable[[PanelPerception], float]
    whole: bool = False
    """Takes whole-number values (counts), said as "at most 2" rather than "at most 0.31"."""


def _count(test: Callable[[Figure], bool]) -> Callable[[PanelPerception], float]:
    return lambda p: float(sum(1 for figure in p.figures if test(figure)))


def _over(
    value: Callable[[Figure], float], pick: Callable[[list[float]], float], empty: float = 0.0
) -> Callable[[PanelPerception], float]:
    return lambda p: float(pick([value(f) for f in p.figures])) if p.figures else empty


def _largest(value: Callable[[Figure], float]) -> Callable[[PanelPerception], float]:
    return lambda p: value(max(p.figures, key=lambda f: f.area)) if p.figures else 0.0


def _relations(kind: str) -> Callable[[PanelPerception], float]:
    return lambda p: float(sum(1 for r in p.relations if r.relation == kind))


COLUMNS: tuple[Column, ...] = (
    Column("figures", "the number of figures", _count(lambda f: True), whole=True),
    Column("closed_figures", "the number of closed figures", _count(lambda f: f.closed), whole=True),
    Column("open_lines", "the number of open lines", _count(lambda f: not f.closed), whole=True),
    Column("filled_figures", "the number of filled figures", _count(lambda f: f.filled), whole=True),
    Column(
        "outline_figures",
        "the number of outline figures",
        _count(lambda f: f.closed and not f.filled),
        whole=True,
    ),
    Column("triangles", "the number of triangles", _count(lambda f: f.shape == "triangle"), whole=True),
    Column(
        "quadrilaterals",
        "the number of quadrilaterals",
        _count(lambda f: f.shape == "quadrilateral"),
        whole=True,
    ),
    Column("circles", "the number of circles", _count(lambda f: f.shape == "circle"), whole=True),
    Column("holes", "the number of holes (enclosed regions)", _over(lambda f: f.holes, sum), whole=True),
    Column("line_ends", "the number of line ends", _over(lambda f: f.line_ends, sum), whole=True),
    Column("junctions", "the number of line junctions", _over(lambda f: f.junctions, sum), whole=True),
    Column("inside", "the number of figures inside another", _relations("inside"), whole=True),
    Column("touching", "the number of touching pairs of figures", _relations("touching"), whole=True),
    Column("corners", "the corners of the largest figure", _largest(lambda f: f.corners), whole=True),
    Column("largest_area", "the area of the largest figure", _over(lambda f: f.area, max)),
    Column("smallest_area", "the area of the smallest figure", _over(lambda f: f.area, min)),
    Column("total_area", "the total area of the figures", _over(lambda f: f.area, sum)),
    Column("largest_extent", "the size of the largest figure", _over(lambda f: f.extent, max)),
    Column("smallest_extent", "the size of the smallest figure", _over(lambda f: f.extent, min)),
    Column(
        "size_ratio",
        "the size of the smallest figure relative to the largest",
        lambda p: min(f.extent for f in p.figures) / max(f.extent for f in p.figures) if p.figures else 1.0,
    ),
    Column(
        "mean_x",
        "the horizontal position of the figures (0 left, 1 right)",
        _over(lambda f: f.x, np.mean, 0.5),
    ),
    Column(
        "mean_y", "the vertical position of the figures (0 top, 1 bottom)", _over(lambda f: f.y, np.mean, 0.5)
    ),
    Column("line_length", "the total length of the lines", _over(lambda f: f.length, sum)),
    Column("ink", "the share of the panel covered in ink", lambda p: p.ink),
    Column("elongation", "the elongation of the largest figure", _largest(lambda f: f.elongation)),
    Column(
        "orientation",
        "the angle of the largest figure's long axis (degrees)",
        _largest(lambda f: f.orientation),
    ),
    Column("solidity", "the convexity of the least convex figure", _over(lambda f: f.solidity, min, 1.0)),
    Column("circularity", "the roundness of the largest figure", _largest(lambda f: f.circularity)),
    Column("symmetry", "the mirror symmetry of the largest figure", _largest(lambda f: f.symmetry)),
    Column(
        "spread",
        "the distance between the figures farthest apart",
        lambda p: max(
            (float(np.hypot(a.x - b.x, a.y - b.y)) for a in p.figures for b in p.figures), default=0.0
        ),
    ),
)


def panel_row(perception: PanelPerception) -> dict[str, float]:
    """The panel's value in every column."""
    return {column.name: round(float(column.measure(perception)), 4) for column in COLUMNS}
