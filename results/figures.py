"""Plots written to PNG, SVG or PDF files, with matplotlib imported on the first plot.

matplotlib costs about a second of start-up; importing it here, when a figure is
drawn, keeps it out of every command that only reads or tabulates. The file-only
backend (Agg) is chosen before pyplot loads, so no display is ever needed.

Figures are laid out by matplotlib's constrained layout and saved with a tight
bounding box, so no title, label or legend is ever cut at the edge. Vector files
keep their text as text (SVG) or embedded TrueType (PDF), as journals ask, and
so a figure can still be edited and searched.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from matplotlib.axes import Axes

FigureFormat = Literal["png", "svg", "pdf"]
FIGURE_FORMATS: tuple[FigureFormat, ...] = ("png", "svg", "pdf")
DPI = 120
STYLE: dict[str, Any] = {"svg.fonttype": "none", "pdf.fonttype": 42, "font.size": 9}


@contextmanager
def figure_file(path: Path, size: tuple[float, float]) -> Iterator[Axes]:
    """The axes of a new figure of `size` inches, written to `path` (its suffix names the
    format) when the block ends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(STYLE):  # type: ignore[arg-type]  # its keys are typed as literals
        figure, axes = plt.subplots(figsize=size, layout="constrained")
        try:
            yield axes
            figure.savefig(path, dpi=DPI, bbox_inches="tight")
        finally:
            plt.close(figure)
