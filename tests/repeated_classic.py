"""A dataset of any size in the `folder` layout, made of the real classic panels (symlinks)."""

from __future__ import annotations

from pathlib import Path


def repeated_classic(classic: Path, count: int, folder: Path) -> Path:
    """`count` problems cycling through the classic problems of `classic` (Bongard-RWR+ has 5,400)."""
    for number in range(count):
        source = classic / f"{number % 100 + 1:03d}"
        for side, first in (("left", 0), ("right", 6)):
            (folder / f"p{number + 1:04d}" / side).mkdir(parents=True)
            for index in range(6):
                (folder / f"p{number + 1:04d}" / side / f"{index + 1}.png").symlink_to(
                    source / f"{first + index}.png"
                )
    return folder
