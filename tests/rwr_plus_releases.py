"""Bongard-RWR+ manifests, labels and folders built here, as its authors' scripts write them."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from datasets_io.loaders.rwr_plus import RwrPlusLoader
from datasets_io.problem import SIDES
from tests.builders import distinct_color, make_image

T = TypeVar("T")

HEADER = ["Problem", "Left-side Rule", "Right-side Rule"]


LABELS = [
    ["1", "Circles", "Squares"],
    ["2", "Open figures", "Closed figures"],
    ["3", "  Big things  ", " Small things "],
]


def write_labels(path: Path, rows: list[list[str]], header: list[str] = HEADER) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


UPSTREAM_IDS = [1, 1001, 3, 2003]


def upstream_problem(root: Path, number: int, *, plain: bool = False, sheets: bool = True) -> dict[str, Any]:
    """A manifest record as upstream writes it, its images and sheets made under `root`."""
    record: dict[str, Any] = {"id": number}
    for offset, side in enumerate(SIDES):
        images: list[Any] = []
        for index in range(7):
            image_id = 10 * number + 7 * offset + index
            make_image(root / f"images/{image_id}.png", distinct_color(image_id % 97))
            images.append(
                f"images/{image_id}.png"
                if plain
                else {"image_id": image_id, "path": f"images/{image_id}.png"}
            )
        record[f"{side}_images"] = images
    record |= {"left_side_image": "", "right_side_image": "", "whole_image": ""}
    if sheets:
        for key, name in (
            ("left_side_image", "lefts"),
            ("right_side_image", "rights"),
            ("whole_image", "wholes"),
        ):
            relative = f"{name}/{number}.jpeg"
            make_image(root / relative, (250, 250, 250), size=(102, 76))
            record[key] = relative
    return record


def upstream_manifest(root: Path, *, plain: bool = False, sheets: bool = True) -> Path:
    problems = [upstream_problem(root, number, plain=plain, sheets=sheets) for number in UPSTREAM_IDS]
    root.mkdir(parents=True, exist_ok=True)
    manifest = root / "dataset.json"
    manifest.write_text(json.dumps({"problems": problems}, indent=4), encoding="utf-8")
    return manifest


def upstream_folders(root: Path, numbers: list[int], per_side: int = 6, suffix: str = ".jpg") -> None:
    for number in numbers:
        for offset, side in enumerate(SIDES):
            for index in range(per_side + 1):
                make_image(
                    root / str(number) / side / f"{index}{suffix}", distinct_color(index + 10 * offset)
                )
    (root / "results.csv").write_text("problem_id,left_sides,right_sides\n1,10,10\n", encoding="utf-8")


def counted_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the Bongard-RWR+ problems read from their files from now on, in order: a problem
    built or summarized lists its side folders (the folders layout) or reads its manifest record."""
    loads: list[str] = []
    for reading in ("_listed_sides", "_from_manifest"):
        monkeypatch.setattr(RwrPlusLoader, reading, _counted(getattr(RwrPlusLoader, reading), loads))
    return loads


def _counted(read: Callable[[RwrPlusLoader, str], T], loads: list[str]) -> Callable[[RwrPlusLoader, str], T]:
    def counted(self: RwrPlusLoader, problem_id: str) -> T:
        loads.append(problem_id)
        return read(self, problem_id)

    return counted
