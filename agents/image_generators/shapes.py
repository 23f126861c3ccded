"""`shapes`: a DETERMINISTIC OFFLINE TEST GENERATOR, not a model.

It lets the Render step, its graph and its tests run without a GPU, a network
or a key: it draws the flat shapes a positive prompt names (shape, number,
colour, size, fill and position words, see `shape_prompts`) on a white canvas
with Pillow, leaves out shapes and colours the negative prompt names, and
takes everything the prompt leaves open (placement, unnamed colours, sizes,
counts of a bare plural, orientation) from a hash of (positive, negative,
seed). Same inputs, same bytes; another seed, another image. A prompt that
names no shape gets one grey default figure, which stands for nothing in it.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw

from agents.image_generators.base import DEFAULT_SIZE, GeneratorError, GeneratorParams, GeneratorProvider
from agents.image_generators.shape_prompts import (
    COLOURS,
    SIZES,
    ShapeRequest,
    named_colours,
    named_kinds,
    parse_shapes,
)

VERSION = "v1"
"""The drawing rules; the byte-identical promise holds within one version."""
BACKGROUND = (255, 255, 255)
DEFAULT_KINDS = ("circle", "square", "triangle", "star")
"""The default figure for a prompt naming no shape: the first its negative prompt does not name."""
MAX_PER_GROUP = 20
MAX_SHAPES = 40
MIN_CANVAS = 16
PLACEMENT_TRIES = 200
SHRINK = 0.85
ROTATING = {"ellipse", "rectangle", "line", "arrow"}
"""Kinds whose orientation is left to the seed; the others stay upright so they keep their names."""

Point = tuple[float, float]


class _Dice:
    """Choices drawn only through `random()`, whose sequence Python keeps stable across versions."""

    def __init__(self, positive: str, negative: str, seed: int) -> None:
        digest = hashlib.sha256(json.dumps([positive, negative, seed]).encode()).digest()
        self._random = random.Random(int.from_bytes(digest[:16], "big"))

    def unit(self) -> float:
        return self._random.random()

    def between(self, low: float, high: float) -> float:
        return low + (high - low) * self.unit()

    def integer(self, low: int, high: int) -> int:
        return low + min(high - low, int(self.unit() * (high - low + 1)))

    def pick(self, options: Sequence[str]) -> str:
        return options[min(len(options) - 1, int(self.unit() * len(options)))]


@dataclass(frozen=True)
class PlacedShape:
    """One shape as drawn: kind, colour, fill, centre and box side in pixels, rotation in radians."""

    kind: str
    colour: tuple[int, int, int]
    filled: bool
    centre: Point
    side: float
    angle: float


def _ring(radii: list[float], start: float, squash: float = 1.0) -> list[Point]:
    """Points at even angles from `start`, each at its radius (a polygon, a star or a circle)."""
    step = 2 * math.pi / len(radii)
    return [
        (r * math.cos(start + i * step), squash * r * math.sin(start + i * step)) for i, r in enumerate(radii)
    ]


CORNERS = {"triangle": 3, "pentagon": 5, "hexagon": 6, "octagon": 8}


def _unit_outline(kind: str, side: float) -> list[Point]:
    """The kind's outline inside the unit circle, so any rotation stays inside its box."""
    if kind in ("circle", "ellipse"):
        return _ring([1.0] * 64, 0.0, squash=1.0 if kind == "circle" else 0.55)
    if kind in CORNERS:
        corners = CORNERS[kind]
        return _ring([1.0] * corners, -math.pi / 2 if corners % 2 else math.pi / corners)
    if kind == "star":
        return _ring([1.0, 0.45] * 5, -math.pi / 2)
    half_width = max(0.08, 1.5 / max(side / 2, 1.0))  # a line or shaft at least ~3 px thick
    fixed: dict[str, list[Point]] = {
        "square": [(-0.7, -0.7), (0.7, -0.7), (0.7, 0.7), (-0.7, 0.7)],
        "rectangle": [(-0.85, -0.5), (0.85, -0.5), (0.85, 0.5), (-0.85, 0.5)],
        "diamond": [(0.0, -1.0), (0.65, 0.0), (0.0, 1.0), (-0.65, 0.0)],
        "cross": [(-0.3, -0.95), (0.3, -0.95), (0.3, -0.3), (0.95, -0.3), (0.95, 0.3), (0.3, 0.3),
                  (0.3, 0.95), (-0.3, 0.95), (-0.3, 0.3), (-0.95, 0.3), (-0.95, -0.3), (-0.3, -0.3)],
        "line": [(-0.95, -half_width), (0.95, -half_width), (0.95, half_width), (-0.95, half_width)],
        "arrow": [(-0.95, -half_width), (0.4, -half_width), (0.4, -0.35), (0.95, 0.0), (0.4, 0.35),
                  (0.4, half_width), (-0.95, half_width)],
    }  # fmt: skip
    return fixed[kind]


def _outline(shape: PlacedShape) -> list[Point]:
    cos, sin, half = math.cos(shape.angle), math.sin(shape.angle), shape.side / 2
    x0, y0 = shape.centre
    points = _unit_outline(shape.kind, shape.side)
    return [(x0 + half * (x * cos - y * sin), y0 + half * (x * sin + y * cos)) for x, y in points]


def _apart(centre: Point, side: float, placed: list[PlacedShape], gap: float) -> bool:
    return all(
        abs(centre[0] - other.centre[0]) >= (side + other.side) / 2 + gap
        or abs(centre[1] - other.centre[1]) >= (side + other.side) / 2 + gap
        for other in placed
    )


def _place(
    dice: _Dice,
    side: float,
    region: tuple[float, float, float, float],
    canvas: int,
    placed: list[PlacedShape],
) -> tuple[Point, float]:
    """A centre where a box of `side` (shrunk if needed) fits in `region` clear of every placed box."""
    margin, gap = max(2.0, canvas * 0.03), max(3.0, canvas * 0.01)
    areas = [region, (0.0, 0.0, 1.0, 1.0)]
    for left, top, right, bottom in areas:
        x0, y0 = max(margin, left * canvas), max(margin, top * canvas)
        x1, y1 = min(canvas - margin, right * canvas), min(canvas - margin, bottom * canvas)
        trial = min(side, x1 - x0, y1 - y0)
        while trial >= 4:
            for _ in range(PLACEMENT_TRIES):
                centre = (
                    dice.between(x0 + trial / 2, x1 - trial / 2),
                    dice.between(y0 + trial / 2, y1 - trial / 2),
                )
                if _apart(centre, trial, placed, gap):
                    return centre, trial
            trial *= SHRINK
    return (canvas / 2, canvas / 2), 4.0  # a canvas too crowded to keep shapes apart


def plan_shapes(positive: str, negative: str, seed: int, size: int = DEFAULT_SIZE) -> list[PlacedShape]:
    """Every shape the image will show, decided before anything is drawn."""
    dice = _Dice(positive, negative, seed)
    banned_kinds, banned_colours = named_kinds(negative), named_colours(negative)
    # White (drawn light grey) only when named: it barely shows against the canvas.
    palette = [name for name in COLOURS if name not in banned_colours | {"white"}] or ["black"]
    requests = [r for r in parse_shapes(positive) if r.kind not in banned_kinds]
    if not named_kinds(positive):
        kinds = [kind for kind in DEFAULT_KINDS if kind not in banned_kinds] or ["circle"]
        requests = [ShapeRequest(kind=kinds[0], count=1, colour="grey", size="medium", style="outline")]
    placed: list[PlacedShape] = []
    for request in requests:
        count = request.count if request.count is not None else dice.integer(2, 4)
        count = min(count, MAX_PER_GROUP, MAX_SHAPES - len(placed))
        colour = COLOURS[request.colour or dice.pick(palette)]
        fraction = SIZES[request.size or dice.pick(["small", "medium", "large"])]
        filled = (request.style or dice.pick(["filled", "outline"])) == "filled"
        for _ in range(count):
            side = fraction * size * dice.between(0.9, 1.1)
            centre, side = _place(dice, side, request.region, size, placed)
            angle = dice.between(0, math.pi) if request.kind in ROTATING else 0.0
            placed.append(PlacedShape(request.kind, colour, filled, centre, side, angle))
    return placed


def draw_shapes(shapes: list[PlacedShape], size: int) -> Image.Image:
    image = Image.new("RGB", (size, size), BACKGROUND)
    pen = ImageDraw.Draw(image)
    for shape in shapes:
        solid = shape.filled or shape.kind in ("line", "arrow")
        width = max(2, round(shape.side / 14))
        if shape.kind == "circle":
            x, y, half = shape.centre[0], shape.centre[1], shape.side / 2
            box = (x - half, y - half, x + half, y + half)
            pen.ellipse(box, fill=shape.colour if solid else None, outline=shape.colour, width=width)
        else:
            pen.polygon(
                _outline(shape), fill=shape.colour if solid else None, outline=shape.colour, width=width
            )
    return image


class ShapesGenerator:
    """The offline test generator; see the module docstring. Never presented as a model."""

    def __init__(self, model: str = VERSION) -> None:
        if model != VERSION:
            raise ValueError(f"the shapes test generator has one version, {VERSION!r}, not {model!r}")
        self.spec = f"shapes:{model}"

    async def generate(
        self, positive: str, negative: str, *, seed: int, size: int = DEFAULT_SIZE
    ) -> Image.Image:
        if size < MIN_CANVAS:
            raise GeneratorError(self.spec, f"size {size} is below the smallest canvas, {MIN_CANVAS}")
        return draw_shapes(plan_shapes(positive, negative, seed, size), size)


def build(model: str, params: GeneratorParams) -> ShapesGenerator:
    return ShapesGenerator(model)


PROVIDER = GeneratorProvider(
    name="shapes",
    summary="deterministic offline TEST generator: flat shapes named in the prompt, no model, no key",
    build=build,
    default_model=VERSION,
)
