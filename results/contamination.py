"""A model's result on a published set beside its result on freshly generated problems.

Every published Bongard set is on the web, so a model may have seen it; problems generated today
(`bongard generate logo`) cannot have been. Which set is which is read from each set's generation
record, checked against its images (`datasets_io.generation.set_provenance`), never from its name.
Where the runs compared hold the same strategy and model on a published (or unrecorded) set and on
a fresh one, their accuracies are put side by side with their intervals: a drop the intervals do not
cover is what memory rather than reasoning would look like. Sets of other kinds (classic problems
against fresh Bongard-LOGO ones) are compared too, and said to differ in difficulty as well.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from datasets_io.catalog import open_run_dataset
from datasets_io.generation.set_provenance import SetProvenance, set_provenance
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
    baseline: SetProvenance
    """What the compared set is: published, or a folder with no generation record."""
    kinds: tuple[str, str] | None = None
    """The two sets' formats where they differ (None: problems of one kind)."""

    @property
    def drop(self) -> float:
        return self.published_accuracy.minus(self.fresh_accuracy)

    def line(self) -> str:
        said = "published" if self.baseline.kind == "published" else f"unrecorded ({self.baseline.words})"
        other = ""
        if self.kinds:
            other = f"; other kinds of problem ({self.kinds[0]} vs {self.kinds[1]}): the drop mixes memory "
            other += "with difficulty"
        return (
            f"{self.strategy} · {self.model}: {said} {self.published} {self.published_accuracy.text()}, "
            f"fresh {self.fresh} {self.fresh_accuracy.text()}; "
            f"{change_words('drop', self.fresh_accuracy, self.published_accuracy)}{other}"
        )


Sets = dict[str, tuple[str, SetProvenance]]
"""Each compared dataset (as runs name it): its format and provenance."""


def compared_sets(store: ResultsStore, run_ids: list[str]) -> Sets:
    """The format and provenance of each dataset the runs were made on, each read once."""
    sets: Sets = {}
    for run_id in run_ids:
        config = store.run_config(run_id)
        if str(config["dataset"]) not in sets:
            dataset = open_run_dataset(config)
            sets[str(config["dataset"])] = (
                dataset.format_name,
                set_provenance(dataset.format_name, dataset.root),
            )
    return sets


def contrasts(sets: Sets, table: pd.DataFrame) -> list[Contrast]:
    """Each strategy x model the runs hold on both a published (or unrecorded) set and a fresh one."""
    found = []
    for (strategy, model), rows in table[table["n"] > 0].groupby(["strategy", "model"], sort=True):
        listed = [r for _, r in rows.iterrows()]
        baseline = [r for r in listed if sets[str(r["dataset"])][1].kind in ("published", "unrecorded")]
        fresh = [r for r in listed if sets[str(r["dataset"])][1].kind == "fresh"]
        for old in baseline:
            for new in fresh:
                (old_format, provenance), (new_format, _) = (
                    sets[str(old["dataset"])],
                    sets[str(new["dataset"])],
                )
                found.append(
                    Contrast(
                        str(strategy),
                        str(model),
                        str(old["dataset"]),
                        str(new["dataset"]),
                        Rate.of(old),
                        Rate.of(new),
                        provenance,
                        (old_format, new_format) if old_format != new_format else None,
                    )
                )
    return found


def altered_sets(sets: Sets) -> list[str]:
    """A line for each compared set whose generation record does not match its images."""
    return [
        f"{name}: {provenance.words}"
        for name, (_, provenance) in sets.items()
        if provenance.kind == "altered"
    ]
