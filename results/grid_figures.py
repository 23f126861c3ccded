"""An experiment's figures: the grid as a heat map per dataset, and the paired differences with
their intervals, so a reader sees at once which cells differ and which only seem to."""

from __future__ import annotations

from pathlib import Path

from results.figures import FigureFormat, figure_file
from results.grid_report import GridReport


def heat_maps(report: GridReport, out: Path, form: FigureFormat = "png") -> list[Path]:
    """One heat map per dataset: strategies down, models across, each cell its accuracy and n."""
    written = []
    for dataset in dict.fromkeys(row["dataset"] for row in report.rows):
        rows = [row for row in report.rows if row["dataset"] == dataset]
        strategies = list(dict.fromkeys(row["strategy"] for row in rows))
        models = list(dict.fromkeys(row["model"] for row in rows))
        grid = [[float("nan")] * len(models) for _ in strategies]
        path = out / f"grid-{_safe(dataset)}.{form}"
        with figure_file(path, (1.6 + 1.9 * len(models), 0.9 + 0.55 * len(strategies))) as axes:
            for row in rows:
                s, m = strategies.index(row["strategy"]), models.index(row["model"])
                grid[s][m] = row["accuracy"] if row["accuracy"] is not None else float("nan")
                shown = "-" if row["accuracy"] is None else f"{row['accuracy']:.2f}\nn {row['n']}"
                axes.text(m, s, shown, ha="center", va="center", fontsize=8)
            image = axes.imshow(grid, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
            axes.set_xticks(range(len(models)), [_short(m) for m in models], rotation=20, ha="right")
            axes.set_yticks(range(len(strategies)), strategies)
            axes.set_title(f"accuracy on {dataset}")
            axes.figure.colorbar(image, ax=axes, fraction=0.05)
        written.append(path)
    return written


def differences(report: GridReport, out: Path, form: FigureFormat = "png") -> Path | None:
    """Every paired test's accuracy difference with its 95% interval; Holm-significant ones filled."""
    if not report.tests:
        return None
    path = out / f"paired-differences.{form}"
    tests = report.tests
    with figure_file(path, (6.5, 0.8 + 0.4 * len(tests))) as axes:
        for index, test in enumerate(tests):
            low, high = test.interval()
            axes.plot([low, high], [index, index], color="0.3")
            axes.plot(
                test.difference, index, "o", color="C3" if test.significant else "white", markeredgecolor="C3"
            )
        axes.axvline(0.0, color="0.6", linestyle="--", linewidth=0.8)
        labels = [f"{_short(t.first)} - {_short(t.second)}" for t in tests]
        axes.set_yticks(range(len(tests)), labels)
        axes.invert_yaxis()
        axes.set_xlabel("accuracy difference on the same problems (filled: Holm p < 0.05)")
    return path


def _short(label: str, limit: int = 28) -> str:
    text = " | ".join(part.split("@")[0] for part in label.split(" | ")[:2])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _safe(name: str) -> str:
    return "".join(char if char.isalnum() or char in "-_." else "-" for char in name)
