"""Problem sheets and panel images, rendered deterministically (same input, same bytes).

A sheet is what the Direct strategies send, in Bongard's own layout and the
case study's: the left block of 3 rows x 2 columns, a black separator, the
right block of 3 rows x 2 columns, on white, each panel letterboxed into a
common cell so aspect ratios are kept. Sides with other than six panels keep
the two columns and get as many rows as the longer side needs. Variants follow
the case study's Bongard-RWR variants: `grey` (RWR-G), `square` (RWR-S: each
panel centre-cropped to a square and scaled to 512 px, the sheet then scaled
to the target width) and `square-grey` (RWR-SG).
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from PIL import Image, ImageDraw, ImageOps

from datasets_io.errors import DatasetError
from datasets_io.images import DEFAULT_MAX_PIXELS, open_image
from datasets_io.problem import BongardProblem, Panel, Side

Variant = Literal["plain", "grey", "square", "square-grey"]
VARIANTS: tuple[Variant, ...] = get_args(Variant)
DEFAULT_MAX_SIDE = 1024
SQUARE_PANEL_SIZE = 512
COLUMNS_PER_SIDE = 2
BORDER_GREY = 160
SEPARATOR_BLACK = 0
SHIPPED_SHEET_KEY = "sheet"
"""The metadata key under which a loader puts the path of a sheet shipped with the dataset."""


def is_grey(variant: Variant) -> bool:
    return variant in ("grey", "square-grey")


def is_square(variant: Variant) -> bool:
    return variant in ("square", "square-grey")


def panel_image(
    panel: Panel, variant: Variant = "plain", max_pixels: int = DEFAULT_MAX_PIXELS
) -> Image.Image:
    """One panel as the variant shows it: square-cropped to 512 px and/or greyscale."""
    image = open_image(panel.path, max_pixels=max_pixels)
    if is_square(variant):
        image = ImageOps.fit(image, (SQUARE_PANEL_SIZE, SQUARE_PANEL_SIZE), Image.Resampling.LANCZOS)
    return image.convert("L") if is_grey(variant) else image


@dataclass(frozen=True)
class SheetLayout:
    """Where each panel of a sheet goes: two blocks of `rows` x 2 cells and a separator.

    The gap around every cell (and at the sheet's edges) and the black separator
    are both 1/64 of a cell (rounded, at least 2 px), so a six-a-side sheet is
    4c + 7g wide and 3c + 4g high, in proportion 263 : 196. That proportion is
    what gives the case study's RWR-S size (Sec. 4): 512-px panels make a
    2104 x 1568 sheet, which scaled to 1024 px wide is 1024 x 763
    (1568 * 1024 / 2104 = 763.1); a plain sheet fitted to 1024 px gets 249-px
    cells with 4-px gaps, 1024 x 763 again.
    """

    cell: int
    rows: int

    @classmethod
    def fitting(cls, max_side: int, rows: int) -> SheetLayout:
        """The layout with the largest cell whose sheet is at most `max_side` wide."""
        return cls(_fitted_cell(max_side, rows), rows)

    @property
    def gap(self) -> int:
        return max(2, round(self.cell / 64))

    @property
    def separator(self) -> int:
        return self.gap

    @property
    def block_width(self) -> int:
        return COLUMNS_PER_SIDE * self.cell + (COLUMNS_PER_SIDE + 1) * self.gap

    @property
    def width(self) -> int:
        return 2 * self.block_width + self.separator

    @property
    def height(self) -> int:
        return self.rows * self.cell + (self.rows + 1) * self.gap

    def cell_origin(self, side: Side, position: int) -> tuple[int, int]:
        """Top-left pixel of the cell of the `position`-th panel of `side` (row by row)."""
        row, column = divmod(position, COLUMNS_PER_SIDE)
        block_x = 0 if side == "left" else self.block_width + self.separator
        return block_x + self.gap + column * (self.cell + self.gap), self.gap + row * (self.cell + self.gap)


@functools.cache
def _fitted_cell(max_side: int, rows: int) -> int:
    """`SheetLayout.fitting`'s cell, found once per size: the search tries each cell from `max_side`
    down (1 ms a sheet at 512 px, as long as drawing its panels)."""
    return _largest_cell(lambda cell: SheetLayout(cell, rows).width, max_side)


def shipped_sheet(problem: BongardProblem) -> Path | None:
    """The sheet image a dataset ships for the problem, where its loader was asked to use it
    (`-O sheet=shipped`: Bongard-RWR+'s `whole_image`, Bongard in Wonderland's `pNNNN.png`, the
    images the papers' models were shown)."""
    value = problem.metadata.get(SHIPPED_SHEET_KEY)
    return Path(value) if isinstance(value, str) else None


def render_sheet(
    problem: BongardProblem, variant: Variant = "plain", max_side: int = DEFAULT_MAX_SIDE
) -> Image.Image:
    """The whole-problem sheet of the context panels, at most `max_side` pixels wide.

    A problem with a shipped sheet gets that image instead, as it is (greyed for the grey
    variant, scaled down if wider than `max_side`); it has no square variants.
    """
    if (shipped := shipped_sheet(problem)) is not None:
        return _shipped_sheet(problem, shipped, variant, max_side)
    rows = math.ceil(max(len(problem.left), len(problem.right)) / COLUMNS_PER_SIDE)
    layout = (
        SheetLayout(SQUARE_PANEL_SIZE, rows) if is_square(variant) else SheetLayout.fitting(max_side, rows)
    )
    sheet = _canvas(variant, (layout.width, layout.height))
    sides: tuple[tuple[Side, list[Panel]], ...] = (("left", problem.left), ("right", problem.right))
    for side, panels in sides:
        for position, image in enumerate(_panel_images(problem, panels, variant)):
            _paste_cell(sheet, image, layout.cell_origin(side, position), layout.cell)
    separator_x = layout.block_width
    ImageDraw.Draw(sheet).rectangle(
        (separator_x, layout.gap, separator_x + layout.separator - 1, layout.height - layout.gap - 1),
        fill=SEPARATOR_BLACK,
    )
    return _scale_to_width(sheet, max_side) if is_square(variant) else sheet


def render_strip(
    problem: BongardProblem,
    panels: Sequence[Panel],
    variant: Variant = "plain",
    max_side: int = DEFAULT_MAX_SIDE,
) -> Image.Image:
    """Panels side by side in the given order (the test images of a classification call)."""
    if not panels:
        raise DatasetError("no panels to render in a strip", dataset=problem.dataset, problem_id=problem.id)
    images = _panel_images(problem, panels, variant)
    cell = min(
        SQUARE_PANEL_SIZE,
        _largest_cell(lambda c: len(images) * c + (len(images) + 1) * _gap(c), max_side),
    )
    gap = _gap(cell)
    strip = _canvas(variant, (len(images) * cell + (len(images) + 1) * gap, cell + 2 * gap))
    for position, image in enumerate(images):
        _paste_cell(strip, image, (gap + position * (cell + gap), gap), cell)
    return strip


def png_bytes(image: Image.Image, compress_level: int = 6) -> bytes:
    """PNG bytes with no metadata, so equal pixels (at one compression level) give equal bytes; zlib's
    level 1 encodes a sheet of photos 2.3x faster than Pillow's default 6, 7 % larger."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False, compress_level=compress_level)
    return buffer.getvalue()


def save_png(image: Image.Image, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(image))


def _panel_images(problem: BongardProblem, panels: Sequence[Panel], variant: Variant) -> list[Image.Image]:
    try:
        return [panel_image(panel, variant) for panel in panels]
    except DatasetError as error:
        raise error.located(dataset=problem.dataset, problem_id=problem.id) from None


def _shipped_sheet(problem: BongardProblem, path: Path, variant: Variant, max_side: int) -> Image.Image:
    if is_square(variant):
        raise DatasetError(
            f"a shipped sheet has no {variant} variant; render the sheet from the panels instead",
            dataset=problem.dataset,
            problem_id=problem.id,
            path=path,
        )
    try:
        image = open_image(path)
    except DatasetError as error:
        raise error.located(dataset=problem.dataset, problem_id=problem.id) from None
    if image.width > max_side:
        image = _scale_to_width(image, max_side)
    return image.convert("L") if is_grey(variant) else image


def _gap(cell: int) -> int:
    return max(2, cell // 12)


def _largest_cell(width_of: Callable[[int], int], max_side: int) -> int:
    """The largest cell size whose layout width fits in `max_side`."""
    cell = max_side
    while cell > 1 and width_of(cell) > max_side:
        cell -= 1
    return cell


def _paste_cell(canvas: Image.Image, image: Image.Image, origin: tuple[int, int], cell: int) -> None:
    """Letterbox `image` into the cell at `origin` and frame the cell."""
    scale = min(cell / image.width, cell / image.height)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    fitted = image.resize(size, Image.Resampling.LANCZOS).convert(canvas.mode)
    x, y = origin
    canvas.paste(fitted, (x + (cell - size[0]) // 2, y + (cell - size[1]) // 2))
    border = BORDER_GREY if canvas.mode == "L" else (BORDER_GREY,) * 3
    ImageDraw.Draw(canvas).rectangle((x - 1, y - 1, x + cell, y + cell), outline=border)


def _canvas(variant: Variant, size: tuple[int, int]) -> Image.Image:
    return Image.new("L" if is_grey(variant) else "RGB", size, "white")


def _scale_to_width(image: Image.Image, width: int) -> Image.Image:
    height = max(1, round(image.height * width / image.width))
    return image.resize((width, height), Image.Resampling.LANCZOS)
