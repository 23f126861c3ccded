"""One figure per analysis table: each rate as a bar with its 95% interval and its n.

Every `bongard analyze` table that reports rates names them as `RATE`, `RATE_low` and `RATE_high`
beside the count they divide; `rate_figure` draws any such table, a row per group of bars, so a
new analysis gets its figure by naming its rates, not by a plotting function of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from results.figures import figure_file

ROW_HEIGHT = 0.28
"""Inches per bar: the figure grows with the table, and no label overprints another."""


def rate_figure(
    table: pd.DataFrame,
    rates: Sequence[tuple[str, str]],
    labels: Sequence[str],
    title: str,
    path: Path,
) -> None:
    """Horizontal bars, one per row and rate: `rates` pairs each rate column with the column of its
    n; `labels` are the columns that name a row. A rate with no n (nothing scored) gets no bar, only
    the word "none"."""
    names = [" / ".join(str(row[c]) for c in labels) for _, row in table.iterrows()]
    bars = len(table) * len(rates)
    with figure_file(path, (7.5, 1.2 + ROW_HEIGHT * bars)) as axes:
        y = 0.0
        ticks: list[float] = []
        for index, (_, row) in enumerate(table.iterrows()):
            for offset, (rate, n_column) in enumerate(rates):
                value, n = row[rate], row[n_column]
                position = y + offset
                known = value is not None and value == value
                if known:
                    low, high = row[f"{rate}_low"], row[f"{rate}_high"]
                    axes.barh(position, value, color=f"C{offset}", label=rate if index == 0 else None)
                    axes.errorbar(
                        value,
                        position,
                        xerr=[[value - low], [high - value]],
                        fmt="none",
                        ecolor="black",
                        capsize=3,
                    )
                    axes.annotate(
                        f"{value:.2f} (n={int(n)})", (high + 0.01, position), va="center", fontsize=7
                    )
                else:
                    axes.annotate("none", (0.01, position), va="center", fontsize=7)
            ticks.append(y + (len(rates) - 1) / 2)
            y += len(rates) + 0.6
        axes.set_yticks(ticks, names)
        axes.invert_yaxis()
        axes.set_xlim(0, 1.25)
        axes.set_xticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
        axes.set_xlabel("value with its 95% interval (n beside each bar)")
        axes.set_title(title)
        if len(rates) > 1:
            axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
