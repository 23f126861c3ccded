"""Sheets and strips: layout, letterboxing, variants and byte-for-byte determinism."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import ImageStat

from datasets_io.catalog import open_dataset
from datasets_io.errors import DatasetError
from datasets_io.problem import SIDES, BongardProblem, Side
from datasets_io.render import (
    SQUARE_PANEL_SIZE,
    VARIANTS,
    SheetLayout,
    Variant,
    png_bytes,
    render_sheet,
    render_strip,
)
from tests.builders import distinct_color, make_folder_problem


def colored_problem(tmp_path: Path, size: tuple[int, int] = (64, 48)) -> BongardProblem:
    make_folder_problem(tmp_path / "data" / "colors", "p1", size=size)
    return open_dataset("colors", tmp_path / "data").problem("p1")


def cell_center(layout: SheetLayout, side: Side, position: int) -> tuple[int, int]:
    x, y = layout.cell_origin(side, position)
    return x + layout.cell // 2, y + layout.cell // 2


def close(pixel: object, expected: tuple[int, ...], tolerance: int = 6) -> bool:
    assert isinstance(pixel, tuple), pixel
    return all(abs(x - y) <= tolerance for x, y in zip(pixel, expected, strict=True))


def test_sheet_puts_left_panels_left_and_right_panels_right_in_order(tmp_path: Path) -> None:
    sheet = render_sheet(colored_problem(tmp_path), max_side=1024)
    layout = SheetLayout.fitting(1024, rows=3)
    assert sheet.size == (layout.width, layout.height) and layout.width <= 1024
    # Panel colours were numbered left 0-5, left test, right 0-5, right test.
    for position in range(6):
        assert close(sheet.getpixel(cell_center(layout, "left", position)), distinct_color(position))
        assert close(sheet.getpixel(cell_center(layout, "right", position)), distinct_color(7 + position))


def test_sheet_is_bongards_layout_three_rows_of_two_per_side(tmp_path: Path) -> None:
    sheet = render_sheet(colored_problem(tmp_path), max_side=1024)
    # 249-px cells, 4-px gaps and a 4-px separator: 4 * 249 + 7 * 4 = 1024, 3 * 249 + 4 * 4 = 763.
    assert sheet.size == (1024, 763)
    for side, block_x, first_color in (("left", 0, 0), ("right", 514, 7)):
        for position in range(6):
            row, column = divmod(position, 2)
            center = (block_x + 4 + column * 253 + 124, 4 + row * 253 + 124)
            assert close(sheet.getpixel(center), distinct_color(first_color + position)), (side, position)
    assert all(sheet.getpixel((x, 381)) == (0, 0, 0) for x in range(510, 514))  # the separator
    assert sheet.getpixel((509, 381)) == sheet.getpixel((514, 381)) == (255, 255, 255)


@pytest.mark.parametrize(("per_side", "height"), [(2, 257), (3, 510), (4, 510), (5, 763)])
def test_other_panel_counts_keep_two_columns_and_add_rows(tmp_path: Path, per_side: int, height: int) -> None:
    make_folder_problem(tmp_path / "data" / "colors", "p1", per_side=per_side)
    problem = open_dataset("colors", tmp_path / "data", {"panels_per_side": str(per_side)}).problem("p1")
    sheet = render_sheet(problem, max_side=1024)
    assert sheet.size == (1024, height)
    layout = SheetLayout.fitting(1024, rows=(per_side + 1) // 2)
    for position in range(per_side):
        assert layout.cell_origin("left", position)[0] < 510 <= layout.cell_origin("right", position)[0]
        assert close(sheet.getpixel(cell_center(layout, "left", position)), distinct_color(position))
        right = cell_center(layout, "right", position)
        assert close(sheet.getpixel(right), distinct_color(per_side + 1 + position))
    if per_side % 2:  # the last row's second cell stays blank
        blank = cell_center(layout, "left", per_side)
        assert sheet.getpixel(blank) == (255, 255, 255)


def test_letterboxing_keeps_the_aspect_ratio(tmp_path: Path) -> None:
    sheet = render_sheet(colored_problem(tmp_path, size=(80, 40)), max_side=1024)
    layout = SheetLayout.fitting(1024, rows=3)
    x, y = layout.cell_origin("left", 0)
    top_band = sheet.crop((x + 2, y + 2, x + layout.cell - 2, y + layout.cell // 4 - 2))
    assert ImageStat.Stat(top_band).extrema == [(255, 255)] * 3  # white above a 2:1 panel
    assert close(sheet.getpixel(cell_center(layout, "left", 0)), distinct_color(0))


def test_square_variant_crops_panels_and_is_the_case_studys_1024_by_763(tmp_path: Path) -> None:
    sheet = render_sheet(colored_problem(tmp_path, size=(80, 40)), "square")
    assert sheet.size == (1024, 763)  # "resized to 1024px width ... a height of 763px" (case study, Sec. 4)
    layout = SheetLayout(SQUARE_PANEL_SIZE, rows=3)
    assert (layout.width, layout.height) == (2104, 1568)
    scale = 1024 / layout.width
    x, y = layout.cell_origin("left", 0)
    near_corner = (round((x + 10) * scale), round((y + 10) * scale))
    # The centre crop fills the cell edge to edge and cuts off the panel's black corner mark.
    assert close(sheet.getpixel(near_corner), distinct_color(0), tolerance=12)
    first_colors: dict[Side, int] = {"left": 0, "right": 7}
    for side, first_color in first_colors.items():
        for position in range(6):
            cx, cy = cell_center(layout, side, position)
            center = (round(cx * scale), round(cy * scale))
            assert close(sheet.getpixel(center), distinct_color(first_color + position), tolerance=12)


@pytest.mark.parametrize("variant", ["grey", "square-grey"])
def test_grey_variants_are_single_channel(tmp_path: Path, variant: Variant) -> None:
    assert render_sheet(colored_problem(tmp_path), variant).mode == "L"


def test_real_rwr_sheet_shows_twelve_panels_and_is_deterministic(shared_data: Path) -> None:
    problem = open_dataset("bongard-rwr", shared_data).problem("31")
    for variant in VARIANTS:
        first, second = render_sheet(problem, variant), render_sheet(problem, variant)
        assert png_bytes(first) == png_bytes(second)
    for variant in VARIANTS:
        assert render_sheet(problem, variant).size == (1024, 763)
    sheet = render_sheet(problem)
    layout = SheetLayout.fitting(1024, rows=3)
    for side in SIDES:
        for position in range(6):
            x, y = layout.cell_origin(side, position)
            cell = sheet.crop((x, y, x + layout.cell, y + layout.cell)).convert("L")
            assert ImageStat.Stat(cell).stddev[0] > 10, f"{side} cell {position} looks empty"


def test_max_side_bounds_the_sheet(shared_data: Path) -> None:
    problem = open_dataset("bongard-classic", shared_data).problem("1")
    assert render_sheet(problem, max_side=512).width <= 512
    assert render_sheet(problem, "square", max_side=512).width == 512


def test_strip_shows_the_given_panels_in_order(tmp_path: Path) -> None:
    problem = colored_problem(tmp_path)
    assert render_strip(problem, [*problem.test_left, *problem.test_right]).size == (1021, 529)
    strip = render_strip(problem, [problem.test_right[0], problem.test_left[0]], max_side=600)
    assert strip.width <= 600
    quarter = strip.width // 4
    assert close(strip.getpixel((quarter, strip.height // 2)), distinct_color(13))
    assert close(strip.getpixel((3 * quarter, strip.height // 2)), distinct_color(6))


def test_unreadable_panel_names_problem_and_file(tmp_path: Path) -> None:
    problem = colored_problem(tmp_path)
    problem.right[2].path.write_bytes(b"\x89PNG broken")
    with pytest.raises(DatasetError) as caught:
        render_sheet(problem)
    assert (caught.value.dataset, caught.value.problem_id) == ("colors", "p1")
    assert caught.value.path == problem.right[2].path
