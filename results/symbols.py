"""One model on the same problems from pixels and from symbols, side by side.

The 2026 follow-up of the cognitive paradigms (Vaishnav & Tammet, arXiv 2604.21346) measures where
perception rather than reasoning fails by giving a model the same query task as images
(`direct-rule-learning`) and as symbols (`symbolic-rule-learning`: action programs or structured
descriptions). Where the runs compared hold both for one model and dataset, their accuracies are
put side by side with their intervals and the gain from symbols.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from results.rates import Rate, change_words

PIXELS, SYMBOLS = "direct-rule-learning", "symbolic-rule-learning"


@dataclass(frozen=True)
class PixelsAndSymbols:
    model: str
    dataset: str
    pixels: Rate
    symbols: Rate

    @property
    def gain(self) -> float:
        return self.symbols.minus(self.pixels)

    def line(self) -> str:
        return (
            f"{self.model} on {self.dataset}: pixels ({PIXELS}) {self.pixels.text()}, symbols ({SYMBOLS}) "
            f"{self.symbols.text()}; {change_words('gain', self.pixels, self.symbols)}"
        )


def pixels_and_symbols(table: pd.DataFrame) -> list[PixelsAndSymbols]:
    """Each model x dataset of the comparison table scored both from pixels and from symbols."""
    scored = table[table["n"] > 0]
    found = []
    for (model, dataset), rows in scored.groupby(["model", "dataset"], sort=True):
        by_strategy = {str(row["strategy"]): row for _, row in rows.iterrows()}
        if PIXELS in by_strategy and SYMBOLS in by_strategy:
            found.append(
                PixelsAndSymbols(
                    str(model), str(dataset), Rate.of(by_strategy[PIXELS]), Rate.of(by_strategy[SYMBOLS])
                )
            )
    return found
