"""The `folder` loader (one folder per problem) on problems built here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.errors import DatasetError
from datasets_io.problem import BongardProblem, Concept, Panel
from tests.assertions import assert_located
from tests.builders import distinct_color, make_folder_problem, make_image

FORMAT = "folder"
CONCEPT = {"left": "Triangles", "right": "Circles", "group": "shapes"}


def scan_with_bad_problem(root: Path, data_dir: Path, bad: str) -> DatasetError:
    """Problems a-good, the bad one, z-good: the scan must keep both good ones."""
    make_folder_problem(root, "a-good", concept=CONCEPT)
    make_folder_problem(root, "z-good")
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["a-good", "z-good"]
    assert len(scan.errors) == 1
    assert scan.errors[0].problem_id == bad
    return scan.errors[0]


# --- correct problems -----------------------------------------------------------------------------


def test_problem_loads_with_panels_tests_and_concept(data_dir: Path, root: Path) -> None:
    folder = make_folder_problem(root, "p1", concept=CONCEPT)
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.format_name == FORMAT
    assert dataset.problem_ids() == ["p1"]

    problem = dataset.problem("p1")
    assert problem.dataset == FORMAT
    assert problem.id == "p1"
    assert problem.panels_per_side == 6
    assert problem.left == [
        Panel(path=folder / "left" / f"{n + 1}.png", side="left", index=n, role="context") for n in range(6)
    ]
    assert problem.right == [
        Panel(path=folder / "right" / f"{n + 1}.png", side="right", index=n, role="context") for n in range(6)
    ]
    assert problem.test_left == [
        Panel(path=folder / "test" / "left" / "q1.png", side="left", index=0, role="test")
    ]
    assert problem.test_right == [
        Panel(path=folder / "test" / "right" / "q1.png", side="right", index=0, role="test")
    ]
    assert [p.ref for p in problem.test_panels] == ["left-test-0", "right-test-0"]
    assert problem.concept == Concept(left="Triangles", right="Circles")
    assert problem.concept_group == "shapes"
    assert problem.metadata == {}


def test_panels_are_in_natural_order_and_other_files_are_ignored(data_dir: Path, root: Path) -> None:
    folder = make_folder_problem(root, "p1", per_side=0, tests_per_side=0)
    names = ["10.png", "2.png", "1.jpg", "11.PNG", "3.jpeg", "21.webp"]
    for number, name in enumerate(names):
        make_image(folder / "left" / name, distinct_color(number))
        make_image(folder / "right" / name, distinct_color(number + 6))
    (folder / "left" / "notes.txt").write_text("not an image", encoding="utf-8")
    (folder / "left" / "sub").mkdir()
    make_image(folder / "test" / "left" / "2.png", (1, 2, 3))
    make_image(folder / "test" / "left" / "10.png", (4, 5, 6))
    problem = open_dataset(FORMAT, data_dir).problem("p1")
    expected = ["1.jpg", "2.png", "3.jpeg", "10.png", "11.PNG", "21.webp"]
    assert [p.path.name for p in problem.left] == expected
    assert [p.path.name for p in problem.right] == expected
    assert [p.index for p in problem.left] == list(range(6))
    assert [(p.path.name, p.index) for p in problem.test_left] == [("2.png", 0), ("10.png", 1)]
    assert problem.test_right == []


def test_several_test_images_per_side(data_dir: Path, root: Path) -> None:
    make_folder_problem(root, "p1", tests_per_side=3)
    problem = open_dataset(FORMAT, data_dir).problem("p1")
    assert [p.ref for p in problem.test_panels] == [
        "left-test-0",
        "left-test-1",
        "left-test-2",
        "right-test-0",
        "right-test-1",
        "right-test-2",
    ]
    assert [p.path.name for p in problem.test_right] == ["q1.png", "q2.png", "q3.png"]


def test_test_folders_and_concept_file_are_optional(data_dir: Path, root: Path) -> None:
    make_folder_problem(root, "p1", tests_per_side=0)
    problem = open_dataset(FORMAT, data_dir).problem("p1")
    assert problem.test_left == []
    assert problem.test_right == []
    assert problem.concept is None
    assert problem.concept_group is None


def test_concept_file_with_left_rule_only(data_dir: Path, root: Path) -> None:
    make_folder_problem(root, "p1", concept={"left": "Has a hole"})
    problem = open_dataset(FORMAT, data_dir).problem("p1")
    assert problem.concept == Concept(left="Has a hole", right=None)
    assert problem.concept_group is None


def test_ids_are_folder_names_hidden_folders_and_files_skipped(data_dir: Path, root: Path) -> None:
    for name in ("b", "a", "c"):
        make_folder_problem(root, name)
    (root / ".cache").mkdir()
    (root / "README.txt").write_text("about this dataset", encoding="utf-8")
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.problem_ids() == ["a", "b", "c"]
    assert [p.id for p in dataset.scan().problems] == ["a", "b", "c"]


def test_panels_per_side_option(data_dir: Path, root: Path) -> None:
    folder = make_folder_problem(root, "p1", per_side=3, concept=CONCEPT)
    dataset = open_dataset(FORMAT, data_dir, {"panels_per_side": "3"})
    problem = dataset.problem("p1")
    assert problem.panels_per_side == 3
    assert [p.path for p in problem.right] == [folder / "right" / f"{n}.png" for n in (1, 2, 3)]
    # The default of six refuses the same problem.
    with pytest.raises(DatasetError, match="3 images on the left side, expected 6"):
        open_dataset(FORMAT, data_dir).problem("p1")


def test_problem_round_trips_through_json(data_dir: Path, root: Path) -> None:
    make_folder_problem(root, "with-concept", tests_per_side=2, concept=CONCEPT)
    make_folder_problem(root, "bare", tests_per_side=0)
    problems = open_dataset(FORMAT, data_dir).scan().problems
    assert len(problems) == 2
    for problem in problems:
        assert BongardProblem.model_validate_json(problem.model_dump_json()) == problem


def test_format_is_detected_when_folder_name_is_no_format(data_dir: Path) -> None:
    root = data_dir / "mydata"
    folder = make_folder_problem(root, "p1", concept=CONCEPT)
    make_folder_problem(root, "p2")
    dataset = open_dataset("mydata", data_dir)
    assert dataset.format_name == FORMAT
    assert dataset.name == "mydata"
    assert dataset.problem_ids() == ["p1", "p2"]
    problem = dataset.problem("p1")
    assert problem.dataset == "mydata"
    assert problem.left[0].path == folder / "left" / "1.png"


def test_format_path_spec_reads_any_folder(tmp_path: Path) -> None:
    root = tmp_path / "elsewhere" / "my-problems"
    make_folder_problem(root, "p1", concept=CONCEPT)
    dataset = open_dataset(f"{FORMAT}:{root}")
    assert dataset.name == "my-problems"
    assert dataset.problem("p1").concept == Concept(left="Triangles", right="Circles")


# --- bad input ----------------------------------------------------------------------------------


def test_malformed_concept_json_is_located(data_dir: Path, root: Path) -> None:
    folder = make_folder_problem(root, "p1")
    concept = folder / "concept.json"
    concept.write_text('{"left": "Triangles",', encoding="utf-8")
    error = scan_with_bad_problem(root, data_dir, "p1")
    assert_located(error, dataset=FORMAT, problem_id="p1", path=concept, reason="malformed JSON")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ({"right": "Circles"}, "left"),
        ({"left": ""}, "left"),
        ({"left": "Triangles", "colour": "red"}, "colour"),
        ({"left": "Triangles", "right": 3}, "right"),
        (["Triangles", "Circles"], "malformed concept file"),
    ],
)
def test_invalid_concept_file_is_located(data_dir: Path, root: Path, content: object, reason: str) -> None:
    folder = make_folder_problem(root, "p1")
    concept = folder / "concept.json"
    concept.write_text(json.dumps(content), encoding="utf-8")
    error = scan_with_bad_problem(root, data_dir, "p1")
    assert_located(error, dataset=FORMAT, problem_id="p1", path=concept, reason=reason)
    assert error.reason.startswith("malformed concept file")


@pytest.mark.parametrize(("side", "count"), [("left", 5), ("right", 7), ("left", 0)])
def test_wrong_number_of_panels_on_a_side_is_refused(
    data_dir: Path, root: Path, side: str, count: int
) -> None:
    folder = make_folder_problem(root, "p1", concept=CONCEPT)
    for path in (folder / side).iterdir():
        path.unlink()
    for number in range(count):
        make_image(folder / side / f"{number}.png", distinct_color(number))
    error = scan_with_bad_problem(root, data_dir, "p1")
    assert error.dataset == FORMAT
    assert error.problem_id == "p1"
    assert f"{count} images on the {side} side, expected 6" in error.reason
    assert error.path == folder / side


def test_wrong_number_of_panels_names_the_side_folder(data_dir: Path, root: Path) -> None:
    """The error must say which folder to fix, as every other bad-input error does."""
    folder = make_folder_problem(root, "p1", concept=CONCEPT)
    (folder / "left" / "6.png").unlink()
    error = scan_with_bad_problem(root, data_dir, "p1")
    assert str(folder / "left") in str(error)


@pytest.mark.parametrize("side", ["left", "right"])
def test_missing_side_folder_is_located(data_dir: Path, root: Path, side: str) -> None:
    folder = make_folder_problem(root, "p1")
    for path in (folder / side).iterdir():
        path.unlink()
    (folder / side).rmdir()
    error = scan_with_bad_problem(root, data_dir, "p1")
    assert_located(
        error,
        dataset=FORMAT,
        problem_id="p1",
        path=folder / side,
        reason=f"missing the {side}/ folder",
    )


def test_image_with_a_digit_like_name_does_not_stop_the_scan(data_dir: Path, root: Path) -> None:
    """`²`.isdigit() is true but int('²') fails: the name must not crash natural ordering."""
    folder = make_folder_problem(root, "p1")
    (folder / "left" / "6.png").rename(folder / "left" / "\u00b2.png")
    make_folder_problem(root, "a-good", concept=CONCEPT)
    make_folder_problem(root, "z-good")
    scan = open_dataset(FORMAT, data_dir).scan()
    ids = [p.id for p in scan.problems]
    assert "a-good" in ids and "z-good" in ids
    assert len(scan.problems) + len(scan.errors) == 3


def test_missing_dataset_folder_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(DatasetError) as caught:
        open_dataset(f"{FORMAT}:{missing}").problem_ids()
    assert caught.value.path == missing
    assert "missing" in caught.value.reason


def test_unknown_problem_id_is_refused(data_dir: Path, root: Path) -> None:
    make_folder_problem(root, "p1")
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem("p2")
    assert caught.value.dataset == FORMAT
    assert "'p2'" in caught.value.reason


# --- options --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"panels_per_side": "abc"}, "panels_per_side"),
        ({"panels_per_side": "0"}, "panels_per_side"),
        ({"panels_per_side": "2.5"}, "panels_per_side"),
        ({"panel_per_side": "6"}, "panel_per_side"),
    ],
)
def test_bad_option_is_refused(data_dir: Path, root: Path, options: dict[str, str], field: str) -> None:
    make_folder_problem(root, "p1", concept=CONCEPT)
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, options)
    assert caught.value.dataset == FORMAT
    assert caught.value.reason.startswith("bad option for format folder")
    assert field in caught.value.reason


def test_bad_option_is_refused_on_a_detected_folder_too(data_dir: Path) -> None:
    make_folder_problem(data_dir / "mydata", "p1", concept=CONCEPT)
    with pytest.raises(DatasetError) as caught:
        open_dataset("mydata", data_dir, {"panels_per_side": "abc"})
    assert caught.value.dataset == "mydata"
    assert "panels_per_side" in caught.value.reason
