"""Images and dataset folders that tests make themselves, so every expected value is known."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from PIL import Image, ImageDraw

from datasets_io.problem import SIDES


def make_image(path: Path, color: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> Path:
    """A solid-colour image with a black square in its top-left corner, saved by suffix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    image = Image.new("RGB", size, color)
    ImageDraw.Draw(image).rectangle((0, 0, size[0] // 8, size[1] // 8), fill="black")
    image.save(path)
    return path


def distinct_color(number: int) -> tuple[int, int, int]:
    """Colours far enough apart to tell panels apart after resampling."""
    return ((number * 67) % 200 + 30, (number * 131) % 200 + 30, (number * 29) % 200 + 30)


def make_folder_problem(
    root: Path,
    name: str,
    per_side: int = 6,
    tests_per_side: int = 1,
    concept: dict[str, str] | None = None,
    size: tuple[int, int] = (64, 48),
) -> Path:
    """A problem in the `folder` layout with distinctly coloured panels numbered 1..N."""
    folder = root / name
    number = 0
    for side in SIDES:
        for index in range(per_side):
            make_image(folder / side / f"{index + 1}.png", distinct_color(number), size)
            number += 1
        for index in range(tests_per_side):
            make_image(folder / "test" / side / f"q{index + 1}.png", distinct_color(number), size)
            number += 1
    if concept is not None:
        (folder / "concept.json").write_text(json.dumps(concept), encoding="utf-8")
    return folder


def copy_classic_subset(shared_data: Path, target: Path, numbers: list[int]) -> Path:
    """A small copy of the real classic dataset that a test may damage."""
    source = shared_data / "bongard-classic"
    target.mkdir(parents=True, exist_ok=True)
    for number in numbers:
        shutil.copytree(source / f"{number:03d}", target / f"{number:03d}")
    shutil.copy(source / "bp_solutions.json", target / "bp_solutions.json")
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    target.chmod(0o755)
    return target


def aged(data: Path) -> None:
    """What under `data` was written in the last second dated a second back, as if written before
    the run or survey that follows (what is older keeps its time): a survey is kept only where what
    it read is older than its start (`datasets_io.survey_cache`)."""
    then = time.time_ns() - 1_000_000_000
    for path in [data, *data.rglob("*")]:
        if path.lstat().st_mtime_ns > then:
            os.utime(path, ns=(then, then), follow_symlinks=False)
