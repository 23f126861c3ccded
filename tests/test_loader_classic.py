"""The classic loader on the real 100 problems in `../shared/data/bongard-classic`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from datasets_io.catalog import Dataset, find_datasets, open_dataset
from datasets_io.errors import DatasetError
from datasets_io.loaders.classic import ClassicLoader
from datasets_io.problem import Concept
from datasets_io.render import render_sheet
from tests.assertions import assert_located
from tests.builders import make_image
from tests.wonderland_release import WONDERLAND_PROBLEMS, make_wonderland, wonderland_rules


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


# --- the high-resolution layout of the Bongard-in-Wonderland repository -----------------------------
# ml-research/bongard-in-wonderland: `data/bongard-problems-high-res/p0016/0.png ... 11.png` (macOS
# `.DS_Store` files among them) and the rules in `data/solutions/bp_solutions.json`; its concept
# evaluation (`experiments/evaluate/eval_detect_concepts.py`) scores panels 0-5 against the left
# rule and 6-11 against the right one. Panels and rules here are made up, in that shape.


@pytest.fixture
def wonderland(tmp_path: Path) -> Path:
    return make_wonderland(tmp_path / "bongard-in-wonderland")


def test_wonderland_panels_load_with_the_rules_beside_them(wonderland: Path) -> None:
    dataset = open_dataset(f"bongard-classic:{wonderland}")
    assert dataset.problem_ids() == ["16", "19", "29", "36"]
    rules = wonderland.parent / "solutions" / "bp_solutions.json"
    assert dataset.loader.concept_source == str(rules)
    scan = dataset.scan(open_images=True)
    assert scan.errors == []
    for problem, number in zip(scan.problems, WONDERLAND_PROBLEMS, strict=True):
        folder = wonderland / f"p{number:04d}"
        assert [(p.path, p.index) for p in problem.left] == [(folder / f"{n}.png", n) for n in range(6)]
        assert [(p.path, p.index) for p in problem.right] == [(folder / f"{n + 6}.png", n) for n in range(6)]
        assert problem.test_panels == []
        assert problem.concept == Concept(left=f"left rule {number}", right=f"right rule {number}")
        assert problem.metadata == {"folder": f"p{number:04d}"}


def test_wonderland_data_folder_works_as_a_data_directory(wonderland: Path) -> None:
    data = wonderland.parent
    assert [folder.name for folder in find_datasets(data)] == ["bongard-problems-high-res"]
    dataset = open_dataset("bongard-problems-high-res", data)
    assert dataset.format_name == "bongard-classic"
    assert dataset.problem("0016").id == "16"


def test_wonderland_whole_problem_images_are_the_sheet_when_asked(wonderland: Path) -> None:
    """The authors' Tasks 1, 1.1 and 3 send `data/bpimgs/pNNNN.png`, the whole problem as published
    (panels column-major): `-O sheet=shipped` sends it instead of a sheet rendered from the panels."""
    sheet = wonderland.parent / "bpimgs" / "p0019.png"
    make_image(sheet, (30, 60, 90), size=(700, 300))
    data = wonderland.parent
    problem = open_dataset("bongard-problems-high-res", data, {"sheet": "shipped"}).problem("19")
    assert render_sheet(problem).tobytes() == Image.open(sheet).convert("RGB").tobytes()
    assert render_sheet(open_dataset("bongard-problems-high-res", data).problem("19")).size != (700, 300)
    with pytest.raises(DatasetError) as caught:
        open_dataset("bongard-problems-high-res", data, {"sheet": "shipped"}).problem("16")
    assert_located(
        caught.value,
        dataset="bongard-problems-high-res",
        problem_id="16",
        path=wonderland.parent / "bpimgs" / "p0016.png",
        reason="no shipped sheet p0016.png",
    )
    elsewhere = make_image(wonderland.parent.parent / "sheets" / "p0016.png", (1, 2, 3), size=(64, 32))
    chosen = {"sheet": "shipped", "sheets": str(elsewhere.parent)}
    sixteen = open_dataset("bongard-problems-high-res", data, chosen).problem("16")
    assert render_sheet(sixteen).size == (64, 32)
    with pytest.raises(DatasetError, match="cannot hold out panels 5 and 11"):
        open_dataset("bongard-problems-high-res", data, {"sheet": "shipped", "holdout_test": "true"})


def test_wonderland_panels_with_the_classic_rules_file(wonderland: Path, shared_data: Path) -> None:
    rules_file = shared_data / "bongard-classic" / "bp_solutions.json"
    rules = json.loads(rules_file.read_text(encoding="utf-8"))
    dataset = open_dataset(f"bongard-classic:{wonderland}", options={"rules": str(rules_file)})
    for problem in dataset.scan().problems:
        assert problem.concept is not None
        assert [problem.concept.left, problem.concept.right] == rules[problem.id]


def test_wonderland_holdout_makes_panels_5_and_11_the_test_pair(wonderland: Path) -> None:
    problem = open_dataset(f"bongard-classic:{wonderland}", options={"holdout_test": "true"}).problem("19")
    folder = wonderland / "p0019"
    assert problem.panels_per_side == 5
    assert [(p.ref, p.path) for p in problem.test_panels] == [
        ("left-test-5", folder / "5.png"),
        ("right-test-5", folder / "11.png"),
    ]


def test_rules_in_the_dataset_folder_come_first(wonderland: Path) -> None:
    (wonderland / "bp_solutions.json").write_text(json.dumps({"16": ["mine", "yours"]}), encoding="utf-8")
    dataset = open_dataset(f"bongard-classic:{wonderland}")
    assert dataset.problem("16").concept == Concept(left="mine", right="yours")


def test_rules_of_a_sibling_classic_copy_are_found(tmp_path: Path) -> None:
    images = make_wonderland(tmp_path / "w", [16])
    data = tmp_path / "data"
    data.mkdir()
    images.rename(data / "classic-high-res")
    (data / "bongard-classic").mkdir()
    (data / "bongard-classic" / "bp_solutions.json").write_text(
        json.dumps({"16": ["a", "b"]}), encoding="utf-8"
    )
    assert open_dataset("classic-high-res", data).problem("16").concept == Concept(left="a", right="b")


def test_both_layouts_in_one_folder_load_in_number_order(wonderland: Path, shared_data: Path) -> None:
    shutil.copytree(shared_data / "bongard-classic" / "008", wonderland / "008")
    (wonderland / "008").chmod(0o755)
    rules = wonderland_rules(WONDERLAND_PROBLEMS) | {"8": ["eight left", "eight right"]}
    (wonderland / "bp_solutions.json").write_text(json.dumps(rules), encoding="utf-8")
    dataset = open_dataset(f"bongard-classic:{wonderland}")
    assert dataset.problem_ids() == ["8", "16", "19", "29", "36"]
    assert dataset.scan().errors == []


# --- bad problems and folders in the high-resolution layout --------------------------------------------


def test_missing_panel_is_named(wonderland: Path) -> None:
    (wonderland / "p0019" / "7.png").unlink()
    scan = open_dataset(f"bongard-classic:{wonderland}").scan()
    assert [p.id for p in scan.problems] == ["16", "29", "36"]
    assert_located(
        scan.errors[0],
        dataset=wonderland.name,
        problem_id="19",
        path=wonderland / "p0019",
        reason="missing image 7",
    )


def test_corrupt_panel_is_named_by_validation(wonderland: Path) -> None:
    broken = wonderland / "p0029" / "3.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    scan = open_dataset(f"bongard-classic:{wonderland}").scan(open_images=True)
    assert [p.id for p in scan.problems] == ["16", "19", "36"]
    assert_located(scan.errors[0], dataset=wonderland.name, problem_id="29", path=broken, reason="image")


def test_problem_without_rules_entry_is_named(wonderland: Path) -> None:
    rules = wonderland.parent / "solutions" / "bp_solutions.json"
    entries = wonderland_rules(WONDERLAND_PROBLEMS)
    del entries["36"]
    entries["29"] = ["only one rule"]
    rules.write_text(json.dumps(entries), encoding="utf-8")
    scan = open_dataset(f"bongard-classic:{wonderland}").scan()
    assert [p.id for p in scan.problems] == ["16", "19"]
    errors = {e.problem_id: e for e in scan.errors}
    assert_located(
        errors["29"], dataset=wonderland.name, problem_id="29", path=rules, reason="malformed rules entry"
    )
    assert_located(errors["36"], dataset=wonderland.name, problem_id="36", path=rules, reason="no entry")


def test_missing_rules_file_names_the_dataset_folder_one(tmp_path: Path) -> None:
    images = make_wonderland(tmp_path / "w", [16])
    (images.parent / "solutions" / "bp_solutions.json").unlink()
    with pytest.raises(DatasetError) as caught:
        open_dataset(f"bongard-classic:{images}").problem("16")
    assert_located(
        caught.value,
        dataset=images.name,
        problem_id="16",
        path=images / "bp_solutions.json",
        reason="file is missing",
    )


@pytest.mark.parametrize(("twin", "named"), [("p016", "p0016 and p016"), ("016", "016 and p0016")])
def test_two_folders_of_one_problem_are_refused(wonderland: Path, twin: str, named: str) -> None:
    (wonderland / twin).mkdir()
    dataset = open_dataset(f"bongard-classic:{wonderland}")
    with pytest.raises(DatasetError) as caught:
        dataset.problem_ids()
    assert_located(caught.value, dataset=wonderland.name, problem_id=None, path=wonderland, reason=named)
    assert "are both 16" in caught.value.reason


def test_folder_without_problem_folders_names_both_layouts(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DatasetError) as caught:
        open_dataset(f"bongard-classic:{empty}").problem_ids()
    assert_located(caught.value, dataset="empty", problem_id=None, path=empty, reason="NNN/ or pNNNN/")


def test_detection_needs_problem_folders(tmp_path: Path, wonderland: Path) -> None:
    assert ClassicLoader.detect(wonderland)
    assert not ClassicLoader.detect(wonderland.parent / "solutions")  # a rules file alone
    bare = tmp_path / "bare" / "p0001"
    bare.mkdir(parents=True)
    assert not ClassicLoader.detect(bare.parent)  # p-folders without panels
