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


def _offset(
    kind: Callable[[Figure], bool], others: Callable[[Figure], bool], axis: Callable[[Figure], float]
) -> Callable[[PanelPerception], float]:
    """Mean position of the figures of one kind minus that of another kind (0 unless there are both)."""

    def offset(p: PanelPerception) -> float:
        these = [axis(f) for f in p.figures if kind(f)]
        those = [axis(f) for f in p.figures if others(f)]
        return float(np.mean(these) - np.mean(those)) if these and those else 0.0

    return offset


def _filled(figure: Figure) -> bool:
    return figure.filled


def _outline(figure: Figure) -> bool:
    return figure.closed and not figure.filled


def _curved(figure: Figure) -> bool:
    return figure.closed and not figure.straight


def _share(
    kind: Callable[[Figure], bool], among: Callable[[Figure], bool]
) -> Callable[[PanelPerception], float]:
    """The share of the figures of `among` that are of `kind` (0 with none of them)."""

    def share(p: PanelPerception) -> float:
        pool = [f for f in p.figures if among(f)]
        return sum(1 for f in pool if kind(f)) / len(pool) if pool else 0.0

    return share


def _nested_corners(p: PanelPerception) -> float:
    """Corners of a figure inside another minus those of the figure around it, averaged over such pairs."""
    pairs = [(p.figures[r.first], p.figures[r.second]) for r in p.relations if r.relation == "inside"]
    return float(np.mean([inner.corners - outer.corners for inner, outer in pairs])) if pairs else 0.0


def _tilt(angle: float) -> float:
    """An axis angle in [0, 180) as its distance from horizontal: 10 and 170 degrees lean alike."""
    return min(angle, 180.0 - angle)


ALL_INK = "all the ink"
"""The ink taken as one shape: measured on the convex outline around it (`gestalt.py`)."""


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
    Column("polygons", "the number of straight-sided figures", _count(lambda f: f.straight), whole=True),
    Column("curved", "the number of curved closed figures", _count(_curved), whole=True),
    Column(
        "mixed_fills",
        "the number of figures of the rarer fill (filled or outline)",
        lambda p: min(_count(_filled)(p), _count(_outline)(p)),
        whole=True,
    ),
    Column(
        "filled_share",
        "the share of filled figures among the closed ones",
        _share(_filled, lambda f: f.closed),
    ),
    Column("holes", "the number of holes (enclosed regions)", _over(lambda f: f.holes, sum), whole=True),
    Column("line_ends", "the number of line ends", _over(lambda f: f.line_ends, sum), whole=True),
    Column("junctions", "the number of line junctions", _over(lambda f: f.junctions, sum), whole=True),
    Column("inside", "the number of figures inside another", _relations("inside"), whole=True),
    Column(
        "nested_corners",
        "the corners of a figure inside another minus those of the figure around it",
        _nested_corners,
    ),
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
    Column(
        "filled_lower",
        "the height of the outline figures over the filled figures",
        _offset(_filled, _outline, lambda f: f.y),
    ),
    Column(
        "filled_righter",
        "the distance of the filled figures right of the outline figures",
        _offset(_filled, _outline, lambda f: f.x),
    ),
    Column(
        "straight_lower",
        "the height of the curved figures over the straight-sided figures",
        _offset(lambda f: f.straight, _curved, lambda f: f.y),
    ),
    Column(
        "ends_apart",
        "the distance between the farthest line ends of the largest figure",
        _largest(lambda f: f.ends_apart),
    ),
    Column("line_length", "the total length of the lines", _over(lambda f: f.length, sum)),
    Column("ink", "the share of the panel covered in ink", lambda p: p.ink),
    Column("elongation", "the elongation of the largest figure", _largest(lambda f: f.elongation)),
    Column(
        "orientation",
        "the angle of the largest figure's long axis (degrees)",
        _largest(lambda f: f.orientation),
    ),
    Column(
        "tilt",
        "the tilt of the largest figure's long axis from horizontal (degrees, 90 upright)",
        _largest(lambda f: _tilt(f.orientation)),
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
    Column("nearest_gap", "the smallest gap between two figures", lambda p: p.nearest_gap),
    Column("widest_gap", "the gap around the most isolated figure", lambda p: p.widest_gap),
    Column("hull_triangle", f"the triangle fit of {ALL_INK}", lambda p: p.whole.triangle_fit),
    Column("hull_rectangle", f"the rectangle fit of {ALL_INK}", lambda p: p.whole.rectangle_fit),
    Column("hull_circle", f"the circle fit of {ALL_INK}", lambda p: p.whole.circle_fit),
    Column("hull_corners", f"the corners of {ALL_INK}", lambda p: p.whole.corners, whole=True),
    Column("hull_elongation", f"the elongation of {ALL_INK}", lambda p: p.whole.elongation),
    Column(
        "hull_orientation",
        f"the angle of the long axis of {ALL_INK} (degrees)",
        lambda p: p.whole.orientation,
    ),
    Column(
        "hull_tilt",
        f"the tilt of {ALL_INK} from horizontal (degrees, 90 upright)",
        lambda p: _tilt(p.whole.orientation),
    ),
    Column("ink_density", f"the density of {ALL_INK}", lambda p: p.whole.density),
    Column(
        "stroke_balance",
        "the balance of horizontal over vertical strokes (1 all horizontal, -1 all vertical)",
        lambda p: p.whole.stroke_balance,
    ),
    Column(
        "stroke_alignment",
        "the alignment of the strokes (1 all parallel)",
        lambda p: p.whole.stroke_alignment,
    ),
)


def panel_row(perception: PanelPerception) -> dict[str, float]:
    """The panel's value in every column."""
    return {column.name: round(float(column.measure(perception)), 4) for column in COLUMNS}
