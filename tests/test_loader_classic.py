"""The classic loader on the real 100 problems in `../shared/data/bongard-classic`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datasets_io.catalog import Dataset, open_dataset
from datasets_io.errors import DatasetError


@pytest.fixture(scope="module")
def classic(shared_data: Path) -> Dataset:
    return open_dataset("bongard-classic", shared_data)


def test_all_hundred_problems_load_with_their_concepts(classic: Dataset, shared_data: Path) -> None:
    scan = classic.scan()
    assert scan.errors == []
    assert [p.id for p in scan.problems] == [str(n) for n in range(1, 101)]
    rules = json.loads((shared_data / "bongard-classic" / "bp_solutions.json").read_text("utf-8"))
    for problem in scan.problems:
        assert problem.concept is not None
        assert [problem.concept.left, problem.concept.right] == rules[problem.id]


def test_problem_8_panels_and_concept(classic: Dataset, shared_data: Path) -> None:
    problem = classic.problem("8")
    assert problem.concept is not None
    assert (problem.concept.left, problem.concept.right) == (
        "Figures on the right side",
        "Figures on the left side",
    )
    folder = shared_data / "bongard-classic" / "008"
    assert [p.path for p in problem.left] == [folder / f"{n}.png" for n in range(6)]
    assert [p.path for p in problem.right] == [folder / f"{n}.png" for n in range(6, 12)]
    assert [p.index for p in problem.right] == list(range(6))
    assert problem.test_panels == []


def test_zero_padded_ids_are_accepted(classic: Dataset) -> None:
    assert classic.problem("008").id == "8"


def test_cyrillic_rules_of_problem_100(classic: Dataset) -> None:
    concept = classic.problem("100").concept
    assert concept is not None
    assert any("\u0400" <= ch <= "\u04ff" for ch in concept.left + (concept.right or ""))


def test_holdout_option_makes_panels_5_and_11_the_test_pair(shared_data: Path) -> None:
    dataset = open_dataset("bongard-classic", shared_data, {"holdout_test": "true"})
    problem = dataset.problem("8")
    folder = shared_data / "bongard-classic" / "008"
    assert problem.panels_per_side == 5
    assert [p.path.name for p in problem.context_panels] == [
        f"{n}.png" for n in (0, 1, 2, 3, 4, 6, 7, 8, 9, 10)
    ]
    assert [(p.ref, p.path) for p in problem.test_panels] == [
        ("left-test-5", folder / "5.png"),
        ("right-test-5", folder / "11.png"),
    ]


def test_unknown_problem_names_some_valid_ids(classic: Dataset) -> None:
    with pytest.raises(DatasetError, match=r"no problem '101' \(ids: 1, 2, 3, 4, 5, \.\.\.\)"):
        classic.problem("101")


def test_unknown_option_is_refused(shared_data: Path) -> None:
    with pytest.raises(DatasetError, match="bad option for format bongard-classic: holdout"):
        open_dataset("bongard-classic", shared_data, {"holdout": "yes"})
