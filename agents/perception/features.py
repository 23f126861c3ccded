"""Exact perception of line drawings: figures, their measurements and their relations.

Classical image processing only (OpenCV, scikit-image), no learned weights: a
panel is thresholded into ink; each connected part of ink is a figure. Every
number is a plain measurement a reader can check, in panel units (the panel's
side is 1) so panels of any size compare.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
from cv2.typing import MatLike
from numpy.typing import NDArray
from pydantic import BaseModel
from skimage.morphology import skeletonize

from agents.perception.gestalt import Whole, whole
from agents.perception.outline import corners as outline_corners
from datasets_io.images import open_image

INK_THRESHOLD = 128
"""Grey level below which a pixel is ink (the classic panels are black on white or light grey)."""
MIN_FIGURE_PIXELS = 4
MIN_FIGURE_SHARE = 0.0002
"""A figure covers at least this share of the panel's pixels (and 4 px): a photograph's specks are none."""
MAX_FIGURES = 40
"""The largest parts kept: a photograph thresholded into ink falls into hundreds of parts."""
SOLID_INK_RATIO = 0.75
"""A closed figure whose ink covers this share of its inside is filled, otherwise an outline."""
MIN_SOLID_RADIUS_PX = 2.5
"""A solid part must be thicker than a stroke, or it is a line (a straight segment encloses nothing)."""
ROUND_CIRCULARITY = 0.85
CONVEX_SOLIDITY = 0.95
POLYGONS = {3: "triangle", 4: "quadrilateral", 5: "pentagon", 6: "hexagon"}
TOUCH_DISTANCE_PX = 2
RELATION_MARGIN = 0.05
"""Centroids closer than this (in panel sides) are neither above nor left of each other."""

Mask = NDArray[np.bool_]


class Figure(BaseModel):
    """One connected part of ink."""

    closed: bool
    """It encloses a region (an outline or a filled shape) rather than being an open line."""
    filled: bool
    area: float
    """Enclosed area, as a share of the panel."""
    extent: float
    """Longest side of its bounding box, as a share of the panel's side."""
    perimeter: float
    """Length of its outer boundary, in panel sides."""
    length: float
    """Length of its strokes (the skeleton), in panel sides."""
    x: float
    y: float
    """Centroid; (0, 0) is the top-left corner."""
    elongation: float
    """Long / short side of its tightest rotated rectangle (1 for a circle or a square)."""
    orientation: float
    """Angle of its long axis in degrees, 0 horizontal, counter-clockwise, in [0, 180)."""
    solidity: float
    """Enclosed area / convex hull area (1 when convex)."""
    holes: int
    corners: int
    """Sharp corners of its outline: a polygon's vertices, none on a circle (for an open line, the
    vertices of its outline simplified to a polygon)."""
    straight: bool
    """A closed figure whose outline is straight-sided (a polygon); False for curves and open lines."""
    circularity: float
    """4 pi area / perimeter^2 (1 for a circle)."""
    symmetry: float
    """Best overlap of its shape with its mirror image about either principal axis (1 = symmetric)."""
    line_ends: int
    junctions: int
    ends_apart: float = 0.0
    """The largest distance between two of its line ends, in panel sides (0 with fewer than two)."""

    @property
    def shape(self) -> str:
        """Its name: a polygon by its corners, a curve by its roundness, or a line."""
        if not self.closed:
            return "line"
        if self.straight:
            return POLYGONS.get(self.corners, "polygon")
        if self.circularity >= ROUND_CIRCULARITY and self.corners == 0:
            return "circle"
        return "oval" if self.corners == 0 and self.solidity >= CONVEX_SOLIDITY else "curved shape"


class Relation(BaseModel):
    first: int
    second: int
    relation: str
    """above, left of, inside, touching (the first figure to the second)."""


class PanelPerception(BaseModel):
    width: int
    height: int
    figures: list[Figure]
    relations: list[Relation]
    ink: float
    """Share of the panel that is ink."""
    whole: Whole
    """The ink taken as one shape (`gestalt.py`)."""
    nearest_gap: float = 0.0
    """The smallest gap between two figures, in panel sides (0 with fewer than two)."""
    widest_gap: float = 0.0
    """The gap around the most isolated figure: its distance to the nearest other figure."""


def ink_mask(path: Path) -> Mask:
    grey = np.asarray(open_image(path).convert("L"))
    mask: Mask = grey < INK_THRESHOLD
    return mask


def _symmetry(filled: Mask, angle: float) -> float:
    """Overlap (IoU) of the figure with its mirror image about its principal axes."""
    ys, xs = np.nonzero(filled)
    if len(xs) < 2:
        return 1.0
    side = int(2 * max(np.ptp(xs), np.ptp(ys)) + 3)
    canvas = np.zeros((side, side), np.uint8)
    cx, cy = xs.mean(), ys.mean()
    canvas[(ys - cy + side / 2).astype(int), (xs - cx + side / 2).astype(int)] = 1
    rotation = cv2.getRotationMatrix2D((side / 2, side / 2), -angle, 1.0)
    upright = cv2.warpAffine(canvas, rotation, (side, side), flags=cv2.INTER_NEAREST) > 0
    scores = []
    for mirrored in (upright[:, ::-1], upright[::-1, :]):
        union = np.logical_or(upright, mirrored).sum()
        scores.append(float(np.logical_and(upright, mirrored).sum() / union) if union else 1.0)
    return max(scores)


def _skeleton_points(component: Mask) -> tuple[int, int, int, float]:
    """Skeleton length in pixels, its line ends, its junctions (touching junction pixels are one) and
    the largest distance between two line ends in pixels."""
    skeleton = skeletonize(component)  # type: ignore[no-untyped-call]
    on = skeleton.astype(bool)
    neighbours = cv2.filter2D(on.astype(np.uint8), -1, np.ones((3, 3), np.float32)) - 1
    junction_count, _ = cv2.connectedComponents((on & (neighbours >= 3)).astype(np.uint8), connectivity=8)
    ends = np.argwhere(on & (neighbours == 1)).astype(np.float32)
    apart = 0.0
    if len(ends) > 1:  # the farthest two lie on the ends' convex hull: few points even in a photograph
        hull = cv2.convexHull(ends).reshape(-1, 2)
        apart = float(np.linalg.norm(hull[:, None] - hull[None], axis=2).max())
    return int(on.sum()), len(ends), junction_count - 1, apart


def _simplified(outline: MatLike, perimeter: float) -> int:
    """Vertices of an outline simplified to a polygon (an open line's outline has no true corners)."""
    return len(cv2.approxPolyDP(outline, 0.04 * perimeter, closed=True))


def measure_figure(component: Mask, side: float) -> tuple[Figure, Mask]:
    """The measurements of one connected part of ink, and the region it encloses."""
    image = component.astype(np.uint8)
    contours, hierarchy = cv2.findContours(image, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_NONE)
    outer_index = max(
        (i for i in range(len(contours)) if hierarchy[0][i][3] < 0),
        key=lambda i: cv2.contourArea(contours[i]),
    )
    outer = contours[outer_index]
    holes = sum(
        1
        for i in range(len(contours))
        if hierarchy[0][i][3] == outer_index and cv2.contourArea(contours[i]) >= MIN_FIGURE_PIXELS
    )
    filled = np.zeros_like(image)
    cv2.drawContours(filled, [outer], -1, 1, thickness=-1)
    region = filled.astype(bool) | component
    enclosed = float(region.sum())
    ink = float(component.sum())
    thickness = float(cv2.distanceTransform(region.astype(np.uint8), cv2.DIST_L2, 3).max())
    solid = ink / enclosed >= SOLID_INK_RATIO and thickness > MIN_SOLID_RADIUS_PX
    closed = holes > 0 or solid
    perimeter = cv2.arcLength(outer, closed=True)
    moments = cv2.moments(region.astype(np.uint8), binaryImage=True)
    cx, cy = moments["m10"] / moments["m00"], moments["m01"] / moments["m00"]
    angle = 0.5 * math.degrees(math.atan2(2 * moments["mu11"], moments["mu20"] - moments["mu02"]))
    (_, _), (w, h), _ = cv2.minAreaRect(outer)
    hull_area = cv2.contourArea(cv2.convexHull(outer))
    circularity = min(1.0, 4 * math.pi * enclosed / perimeter**2) if perimeter > 0 else 0.0
    corners, straight = (
        outline_corners(outer, circularity) if closed else (_simplified(outer, perimeter), False)
    )
    skeleton_px, ends, junctions, ends_apart = _skeleton_points(component)
    ys, xs = np.nonzero(region)
    figure = Figure(
        closed=bool(closed),
        filled=bool(solid and holes == 0),
        area=enclosed / side**2,
        extent=float(max(np.ptp(xs), np.ptp(ys)) + 1) / side,
        perimeter=perimeter / side,
        length=skeleton_px / side,
        x=cx / side,
        y=cy / side,
        elongation=max(w, h) / max(min(w, h), 1.0),
        orientation=(-angle) % 180,
        solidity=min(1.0, float(cv2.contourArea(outer)) / hull_area) if hull_area > 0 else 1.0,
        holes=holes,
        corners=corners,
        straight=straight,
        circularity=circularity,
        symmetry=_symmetry(region, angle),
        line_ends=ends,
        ends_apart=ends_apart / side,
        junctions=junctions,
    )
    return figure, region


def _relations(regions: list[Mask], components: list[Mask], figures: list[Figure]) -> list[Relation]:
    """Inside and touching from the pixels; above and left of from the centroids (with a margin)."""
    kernel = np.ones((2 * TOUCH_DISTANCE_PX + 1,) * 2, np.uint8)
    grown = [cv2.dilate(c.astype(np.uint8), kernel) > 0 for c in components]
    relations = []
    for i, j in itertools.permutations(range(len(figures)), 2):
        inner, outer = figures[i], figures[j]
        if outer.closed and outer.area > inner.area and np.all(regions[j][components[i]]):
            relations.append(Relation(first=i, second=j, relation="inside"))
        if i < j and np.any(grown[i] & components[j]):
            relations.append(Relation(first=i, second=j, relation="touching"))
        if inner.y + RELATION_MARGIN < outer.y:
            relations.append(Relation(first=i, second=j, relation="above"))
        if inner.x + RELATION_MARGIN < outer.x:
            relations.append(Relation(first=i, second=j, relation="left of"))
    return relations


def _gaps(components: list[Mask], side: float) -> tuple[float, float]:
    """The smallest gap between two figures, and the largest distance from a figure to its nearest other."""
    if len(components) < 2:
        return 0.0, 0.0
    ink = np.logical_or.reduce(components)
    nearest = []
    for component in components:
        distance = cv2.distanceTransform((~component).astype(np.uint8), cv2.DIST_L2, 3)
        nearest.append(float(distance[ink & ~component].min()))
    return min(nearest) / side, max(nearest) / side


def perceive_mask(ink: Mask) -> PanelPerception:
    height, width = ink.shape
    side = float(max(width, height))
    count, labels = cv2.connectedComponents(ink.astype(np.uint8), connectivity=8)
    sizes = np.bincount(labels.ravel(), minlength=count)[1:]
    least = max(MIN_FIGURE_PIXELS, MIN_FIGURE_SHARE * height * width)
    kept = sorted(
        (label for label in range(1, count) if sizes[label - 1] >= least), key=lambda k: -sizes[k - 1]
    )
    components = [labels == label for label in kept[:MAX_FIGURES]]
    measured = [measure_figure(c, side) for c in components]
    order = sorted(range(len(measured)), key=lambda k: (round(measured[k][0].y, 1), measured[k][0].x))
    figures = [measured[k][0] for k in order]
    regions = [measured[k][1] for k in order]
    ordered_components = [components[k] for k in order]
    nearest_gap, widest_gap = _gaps(ordered_components, side)
    return PanelPerception(
        width=width,
        height=height,
        figures=figures,
        relations=_relations(regions, ordered_components, figures),
        ink=float(ink.mean()),
        whole=whole(ink),
        nearest_gap=nearest_gap,
        widest_gap=widest_gap,
    )


@lru_cache(maxsize=4096)
def _perceive_cached(path: str, mtime_ns: int, size: int) -> PanelPerception:
    return perceive_mask(ink_mask(Path(path)))


def perceive(path: Path) -> PanelPerception:
    """The perception of one panel image (cached per file version within the process)."""
    stat = path.stat()
    return _perceive_cached(str(path), stat.st_mtime_ns, stat.st_size)
