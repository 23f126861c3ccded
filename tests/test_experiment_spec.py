"""The grid an experiment file describes: every strategy x model x dataset, then its removals,
additions and overrides, each cell the run `bongard run` would make from the same flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphs.experiments.cells import cell_config
from graphs.experiments.spec import ExperimentError, read_experiment

HEAD = """name = "grid"
strategies = ["direct", { name = "multiple-choice", options = { choices = 10 }, label = "mc10" }]
models = ["openai:gpt-4o", { describer = "perception", reasoner = "openai:gpt-4o-mini", label = "split" }]
attempts = 2
params = { temperature = 0 }
[[datasets]]
name = "bongard-classic"
problems = "1-3"
[[datasets]]
name = "bongard-rwr"
sample = 5
stratify = "concept"
seed = 7
"""


def grid(tmp_path: Path, tail: str = "") -> list[str]:
    path = tmp_path / "grid.toml"
    path.write_text(HEAD + tail)
    return [cell.key for cell in read_experiment(path).cells]


def test_the_grid_is_every_dataset_strategy_and_model(tmp_path: Path) -> None:
    keys = grid(tmp_path)
    assert len(keys) == 2 * 2 * 2 and keys[0] == "direct | openai:gpt-4o | bongard-classic"
    assert keys[-1] == "mc10 | split | bongard-rwr"


def test_remove_add_and_override_change_the_cells_they_match(tmp_path: Path) -> None:
    tail = """
[[remove]]
model = "split"
[[add]]
strategy = "descriptive"
model = "split"
dataset = "bongard-rwr"
attempts = 1
[[override]]
strategy = "mc10"
dataset = "bongard-classic"
attempts = 3
options = { choices = "all" }
params = { temperature = 0.5 }
"""
    path = tmp_path / "grid.toml"
    path.write_text(HEAD + tail)
    experiment = read_experiment(path)
    cells = {cell.key: cell for cell in experiment.cells}
    assert sorted(cells) == sorted(
        [
            "direct | openai:gpt-4o | bongard-classic",
            "mc10 | openai:gpt-4o | bongard-classic",
            "direct | openai:gpt-4o | bongard-rwr",
            "mc10 | openai:gpt-4o | bongard-rwr",
            "descriptive | split | bongard-rwr",
        ]
    )
    overridden = cell_config(experiment, cells["mc10 | openai:gpt-4o | bongard-classic"])
    assert (overridden.attempts, overridden.strategy_options, overridden.agent_params) == (
        3,
        {"choices": "all"},
        {"temperature": "0.5"},
    )
    untouched = cell_config(experiment, cells["mc10 | openai:gpt-4o | bongard-rwr"])
    assert (untouched.attempts, untouched.strategy_options, untouched.agent_params) == (
        2,
        {"choices": "10"},
        {"temperature": "0"},
    )
    added = cell_config(experiment, cells["descriptive | split | bongard-rwr"])
    assert added.agents == {"describer": "perception", "reasoner": "openai:gpt-4o-mini"}
    assert added.attempts == 1 and added.sample is not None
    assert (added.sample.size, added.sample.stratify, added.sample.seed) == (5, "concept", 7)


@pytest.mark.parametrize(
    ("tail", "says"),
    [
        ('[[remove]]\nmodel = "nobody"\n', "matches no cell"),
        ('[[add]]\nstrategy = "direct"\nmodel = "openai:gpt-4o"\ndataset = "bongard-hoi"\n', "names dataset"),
        ('[[add]]\nstrategy = "direct"\nmodel = "openai:gpt-4o"\ndataset = "bongard-rwr"\n', "already"),
        ('[[override]]\nstrategy = "direct"\ncolour = "red"\n', "no key 'colour'"),
    ],
)
def test_a_change_that_cannot_apply_is_refused_at_its_line(tail: str, says: str, tmp_path: Path) -> None:
    with pytest.raises(ExperimentError, match=says) as refused:
        grid(tmp_path, tail)
    line = int(str(refused.value).split(":")[1])
    assert line > HEAD.count("\n"), str(refused.value)  # at the change, not the head of the file
