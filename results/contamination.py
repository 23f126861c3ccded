"""A model's result on a published set beside its result on fresh problems of the same kind.

Every published Bongard set is on the web, so a model may have seen it; problems generated today
(`bongard generate logo`) cannot have been. Where the runs compared hold the same strategy and model
on a published set and on a generated one read by the same loader, their accuracies are put side by
side with their intervals: a drop from the published to the fresh set that the intervals do not
cover is what memory rather than reasoning would look like.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from datasets_io.catalog import open_run_dataset
from datasets_io.generation.logo_generation import read_manifest
from results.rates import Rate, change_words
from results.store import ResultsStore


@dataclass(frozen=True)
class Contrast:
    strategy: str
    model: str
    published: str
    fresh: str
    published_accuracy: Rate
    fresh_accuracy: Rate

    @property
    def drop(self) -> float:
        return self.published_accuracy.minus(self.fresh_accuracy)

    def line(self) -> str:
        return (
            f"{self.strategy} · {self.model}: published {self.published} {self.published_accuracy.text()}, "
            f"fresh {self.fresh} {self.fresh_accuracy.text()}; "
            f"{change_words('drop', self.fresh_accuracy, self.published_accuracy)}"
        )


def contrasts(store: ResultsStore, run_ids: list[str], table: pd.DataFrame) -> list[Contrast]:
    """Each strategy x model the runs hold on both a published and a generated set of one loader."""
    kinds: dict[str, tuple[str, bool]] = {}
    for run_id in run_ids:
        dataset = open_run_dataset(store.run_config(run_id))
        kinds[str(store.run_config(run_id)["dataset"])] = (
            dataset.format_name,
            read_manifest(dataset.root) is not None,
        )
    scored = table[table["n"] > 0]
    found = []
    for (strategy, model), rows in scored.groupby(["strategy", "model"], sort=True):
        published = [r for _, r in rows.iterrows() if not kinds[str(r["dataset"])][1]]
        fresh = [r for _, r in rows.iterrows() if kinds[str(r["dataset"])][1]]
        for old in published:
            for new in fresh:
                if kinds[str(old["dataset"])][0] == kinds[str(new["dataset"])][0]:
                    found.append(
                        Contrast(
                            str(strategy),
                            str(model),
                            str(old["dataset"]),
                            str(new["dataset"]),
                            Rate.of(old),
                            Rate.of(new),
                        )
                    )
    return found
