"""Made-up shape tables in the columns of Bongard-LOGO's own (`data/human_designed_shapes.tsv` and
`..._attributes.tsv`), for generating basic and abstract problems in tests: the authors' tables
are read from a user's checkout and never shipped, so these shapes are our own regular polygons."""

from __future__ import annotations

import csv
from pathlib import Path

SIDES = range(3, 13)
SIZES = (0.15, 0.2, 0.25, 0.3)
"""40 shapes in 10 super classes (one per number of sides) of 4 sizes each."""


def polygon(sides: int, size: float) -> str:
    return f"made_up_{sides}gon_{str(size).replace('.', 'p')}"


def write_shape_tables(folder: Path) -> Path:
    """The two tables in `folder/data/`, as in a checkout; returns `folder`. Attributes: even-sided
    (20 shapes) and big (20), so every pair of the two has 10 shapes in each combination."""
    data = folder / "data"
    data.mkdir(parents=True)
    shapes: list[list[object]] = []
    attributes: list[list[object]] = []
    for sides in SIDES:
        turn = round(360 / sides, 3)
        for size in SIZES:
            name = polygon(sides, size)
            actions = ", ".join([f"line_{size}"] * sides)
            turns = "--".join(["L0"] + [f"L{turn}"] * (sides - 1))
            shapes.append([name, f"made-up {sides}-gon of side {size}", f"{sides}gon", actions, turns])
            even, big = int(sides % 2 == 0), int(size >= 0.25)
            attributes.append([name, f"{sides}gon", 1, int(sides < 7), int(size == 0.15), even, big])
    _write(
        data / "human_designed_shapes.tsv",
        ["shape function name", "shape name", "super class", "set of base actions", "turn angles"],
        shapes,
    )
    _write(
        data / "human_designed_shapes_attributes.tsv",
        [
            "shape function name",
            "super class",
            "if stamp",
            "symmetric",
            "self_transposed",
            "even_sided",
            "big",
        ],
        attributes,
    )
    return folder


def _write(path: Path, header: list[str], rows: list[list[object]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(header)
        writer.writerows(rows)
