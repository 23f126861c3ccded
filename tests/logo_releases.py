"""Bongard-LOGO problem folders built here in the released (ShapeBongard_V2) layout: folders, task
names and action programs copy upstream's structure, never its data (every image drawn here, every
task name and program made up)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.builders import distinct_color, make_image


def task_folder(root: Path, task: str) -> Path:
    return root / task.split("_")[0] / "images" / task


def make_task(root: Path, task: str) -> Path:
    """`<type>/images/<task>/{1,0}/0..6.png`, every image a distinct colour."""
    folder = task_folder(root, task)
    for label in ("1", "0"):
        for index in range(7):
            number = index + (0 if label == "1" else 7)
            make_image(folder / label / f"{index}.png", distinct_color(number), (96, 96))
    return folder


def write_json(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def programs_for(shapes: list[list[str]]) -> list[list[list[list[str]]]]:
    """A task's programs: 7 positives with these shapes, 7 negatives with the first stroke changed."""
    changed = [["arc_normal_0.500_0.625-0.500", *shape[1:]] for shape in shapes]
    return [[shapes] * 7, [changed] * 7]


FOUR_STROKES = [
    "line_normal_0.500-0.500",
    "line_zigzag_0.700-0.750",
    "arc_circle_0.500_0.625-0.250",
    "line_triangle_0.300-0.833",
]
