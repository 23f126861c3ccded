"""The lines printed under a comparison table, by heading: what the runs compared hold side by side."""

from __future__ import annotations

import pandas as pd

from results.contamination import altered_sets, compared_sets, contrasts
from results.mixtures import mixture_rows
from results.store import ResultsStore
from results.symbols import pixels_and_symbols

Section = tuple[str, list[str]]


def side_by_side_lines(store: ResultsStore, run_ids: list[str], table: pd.DataFrame) -> list[Section]:
    """Published sets beside freshly generated problems, pixels beside symbols, mixtures beside their members:
    each heading with its lines, the headings with none left out."""
    sets = compared_sets(store, run_ids)
    sections: list[Section] = [
        (
            "contamination check (published or unrecorded sets vs freshly generated problems)",
            [contrast.line() for contrast in contrasts(sets, table)] + altered_sets(sets),
        ),
        (
            "pixels vs symbols (the same query task, the same model and problems)",
            [pair.line() for pair in pixels_and_symbols(table)],
        ),
        (
            "mixtures (members' stored answers combined; costs are the members' calls)",
            [row.line() for row in mixture_rows(store, run_ids)],
        ),
    ]
    return [(heading, lines) for heading, lines in sections if lines]
