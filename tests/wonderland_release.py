"""The high-resolution layout of the Bongard-in-Wonderland repository, with made-up panels and rules."""

from __future__ import annotations

import json
from pathlib import Path

from tests.builders import distinct_color, make_image

WONDERLAND_PROBLEMS = [16, 19, 29, 36]


def wonderland_rules(numbers: list[int]) -> dict[str, list[str]]:
    return {str(n): [f"left rule {n}", f"right rule {n}"] for n in numbers}


def make_wonderland(top: Path, numbers: list[int] = WONDERLAND_PROBLEMS) -> Path:
    """The repository's `data/` folder; returns its `bongard-problems-high-res`."""
    images = top / "data" / "bongard-problems-high-res"
    for number in numbers:
        for panel in range(12):
            make_image(
                images / f"p{number:04d}" / f"{panel}.png", distinct_color(panel + number), size=(96, 96)
            )
    (images / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    if (images / "p0029").is_dir():
        (images / "p0029" / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    solutions = top / "data" / "solutions" / "bp_solutions.json"
    solutions.parent.mkdir(parents=True, exist_ok=True)
    solutions.write_text(json.dumps(wonderland_rules(numbers), indent=4), encoding="utf-8")
    return images
