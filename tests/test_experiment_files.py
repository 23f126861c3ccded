"""The experiment files shipped for the papers' headline tables read, build every cell's run, and
label each model as the paper's row, so `compare --published` reads each cell against its number."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.registry import dropped_decoding
from graphs.experiments.cells import cell_config
from graphs.experiments.spec import read_experiment
from results.published import published_numbers

FILES = sorted((Path(__file__).resolve().parent.parent / "experiments").glob("*.toml"))
TABLES = {
    "case-study-table-1": ("002", "Table 1"),
    "wonderland-table-1": ("003", "Table 1"),
    "paradigms-table-1": ("004", "Table 1"),
    "rwr-plus-table-2": ("000", "Table 2"),
}


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_each_headline_table_has_a_file_whose_cells_are_its_numbers(path: Path) -> None:
    experiment = read_experiment(path)
    paper, table = TABLES[experiment.name]
    numbers = [n for n in published_numbers() if (n.paper, n.table) == (paper, table)]
    runs = {(n.strategy, n.row, tuple(sorted(n.options.items()))) for n in numbers}
    for cell in experiment.cells:
        config = cell_config(experiment, cell)
        for spec in set(config.agents.values()):
            dropped_decoding(spec, {})  # a spec of a known provider, with parameters it takes
        options = tuple(sorted((k, v) for k, v in config.strategy_options.items() if k != "protocol"))
        assert (config.strategy, cell.model.shown, options) in {
            (s, r, tuple(o for o in opts if o[0] != "protocol")) for s, r, opts in runs
        }, cell.key
    assert len(FILES) == len(TABLES)
