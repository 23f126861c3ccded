"""Plots written to PNG files, with matplotlib imported on the first plot.

matplotlib costs about a second of start-up; importing it here, when a figure is
drawn, keeps it out of every command that only reads or tabulates. The file-only
backend (Agg) is chosen before pyplot loads, so no display is ever needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes

DPI = 120


@contextmanager
def figure_file(path: Path, size: tuple[float, float]) -> Iterator[Axes]:
    """The axes of a new figure of `size` inches, written to `path` when the block ends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=size)
    try:
        yield axes
        figure.tight_layout()
        figure.savefig(path, dpi=DPI)
    finally:
        plt.close(figure)
