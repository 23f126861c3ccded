"""The Bongard-RWR loader on the real 60 problems in `../shared/data/bongard-rwr`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from datasets_io.catalog import Dataset, open_dataset

RWR_IDS = [
    *range(1, 12), *range(13, 20), *range(21, 25), 28, *range(30, 35), *range(36, 43), 47,
    50, 51, 52, 56, 57, 59, 62, 63, 70, 71, 72, 76, 78, 86, 87, 88, 90, 91, 92,
    95, 96, 97, 98, 100,
]  # fmt: skip


@pytest.fixture(scope="module")
def rwr(shared_data: Path) -> Dataset:
    return open_dataset("bongard-rwr", shared_data)


def test_all_sixty_problems_load_with_classic_concepts(rwr: Dataset, shared_data: Path) -> None:
    scan = rwr.scan()
    assert scan.errors == []
    assert [p.id for p in scan.problems] == [str(n) for n in RWR_IDS]
    classic = open_dataset("bongard-classic", shared_data)
    for problem in scan.problems:
        assert problem.concept == classic.problem(problem.id).concept


def test_problem_31_has_six_plus_six_panels_and_two_test_images(rwr: Dataset, shared_data: Path) -> None:
    problem = rwr.problem("31")
    folder = shared_data / "bongard-rwr" / "31"
    assert len(problem.left) == len(problem.right) == 6
    assert [p.path for p in problem.left] == [folder / "left" / f"{n}.jpg" for n in range(6)]
    assert [(p.ref, p.path) for p in problem.test_panels] == [
        ("left-test-6", folder / "left" / "6.jpg"),
        ("right-test-6", folder / "right" / "6.jpg"),
    ]
    assert problem.concept is not None
    assert (problem.concept.left, problem.concept.right) == ("One line", "Two lines")


def test_rules_file_is_configurable(shared_data: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text('{"31": ["Straight", "Bent"]}', encoding="utf-8")
    dataset = open_dataset("bongard-rwr", shared_data, {"rules": str(rules)})
    concept = dataset.problem("31").concept
    assert concept is not None and concept.left == "Straight"
    scan = dataset.scan(["31", "8"])
    assert [p.id for p in scan.problems] == ["31"]
    assert "problem 8" in str(scan.errors[0]) and str(rules) in str(scan.errors[0])


def test_format_path_spec_reads_any_folder(shared_data: Path, tmp_path: Path) -> None:
    copy = tmp_path / "my-rwr"
    shutil.copytree(shared_data / "bongard-rwr" / "31", copy / "31")
    rules = shared_data / "bongard-classic" / "bp_solutions.json"
    dataset = open_dataset(f"bongard-rwr:{copy}", options={"rules": str(rules)})
    assert dataset.name == "my-rwr"
    assert dataset.problem_ids() == ["31"]
    assert dataset.problem("31").test_panels[0].path == copy / "31" / "left" / "6.jpg"
