"""The Bongard-RWR+ loader on a `dataset.json` and `labels.csv` built here."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.errors import DatasetError
from datasets_io.problem import SIDES, BongardProblem, Concept, Panel
from tests.assertions import assert_located
from tests.builders import distinct_color, make_image

FORMAT = "bongard-rwr-plus"
HEADER = ["Problem", "Left-side Rule", "Right-side Rule"]
LABELS = [
    ["1", "Circles", "Squares"],
    ["2", "Open figures", "Closed figures"],
    ["3", "  Big things  ", " Small things "],
]


def make_problem(root: Path, number: int, per_side: int = 6) -> dict[str, Any]:
    """A manifest record with `per_side` + 1 existing images per side (the last is the test)."""
    record: dict[str, Any] = {"id": number}
    for offset, side in enumerate(SIDES):
        images = []
        for index in range(per_side + 1):
            relative = f"images/{number}/{side}_{index}.png"
            make_image(root / relative, distinct_color(index + 10 * offset))
            images.append({"image_id": number * 100 + offset * 10 + index, "path": relative})
        record[f"{side}_images"] = images
    return record


def write_manifest(root: Path, problems: list[Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "dataset.json"
    path.write_text(json.dumps({"problems": problems}), encoding="utf-8")
    return path


def write_labels(path: Path, rows: list[list[str]], header: list[str] = HEADER) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture
def labels(root: Path) -> Path:
    return write_labels(root / "labels.csv", LABELS)


# --- correct problems -----------------------------------------------------------------------------


def test_problem_loads_with_last_image_of_each_side_as_test(data_dir: Path, root: Path, labels: Path) -> None:
    write_manifest(root, [make_problem(root, 2)])
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.format_name == FORMAT
    assert dataset.problem_ids() == ["2"]

    problem = dataset.problem("2")
    images = root / "images" / "2"
    assert problem.dataset == FORMAT
    assert problem.id == "2"
    assert problem.panels_per_side == 6
    for side, context, test in (
        ("left", problem.left, problem.test_left),
        ("right", problem.right, problem.test_right),
    ):
        assert context == [
            Panel(path=images / f"{side}_{n}.png", side=side, index=n, role="context") for n in range(6)
        ]
        assert test == [Panel(path=images / f"{side}_6.png", side=side, index=6, role="test")]
    assert [p.ref for p in problem.test_panels] == ["left-test-6", "right-test-6"]
    assert problem.concept == Concept(left="Open figures", right="Closed figures")
    assert problem.concept_group is None
    assert problem.metadata == {
        "image_ids": {
            "left": [200 + n for n in range(7)],
            "right": [210 + n for n in range(7)],
        }
    }


def test_variant_with_three_panels_per_side(data_dir: Path, root: Path, labels: Path) -> None:
    write_manifest(root, [make_problem(root, 3001, per_side=3)])
    problem = open_dataset(FORMAT, data_dir).problem("3001")
    images = root / "images" / "3001"
    assert problem.panels_per_side == 3
    assert [p.path for p in problem.left] == [images / f"left_{n}.png" for n in range(3)]
    assert [p.path for p in problem.right] == [images / f"right_{n}.png" for n in range(3)]
    assert [p.index for p in problem.right] == [0, 1, 2]
    assert problem.test_left == [Panel(path=images / "left_3.png", side="left", index=3, role="test")]
    assert problem.test_right == [Panel(path=images / "right_3.png", side="right", index=3, role="test")]
    assert problem.concept == Concept(left="Circles", right="Squares")


def test_label_row_is_id_modulo_1000_minus_one(data_dir: Path, root: Path, labels: Path) -> None:
    write_manifest(
        root,
        [
            make_problem(root, 1),
            make_problem(root, 2),
            make_problem(root, 1002, per_side=4),
            make_problem(root, 2003, per_side=2),
        ],
    )
    scan = open_dataset(FORMAT, data_dir).scan()
    assert scan.errors == []
    concepts = {p.id: p.concept for p in scan.problems}
    assert concepts == {
        "1": Concept(left="Circles", right="Squares"),
        "2": Concept(left="Open figures", right="Closed figures"),
        "1002": Concept(left="Open figures", right="Closed figures"),
        "2003": Concept(left="Big things", right="Small things"),  # whitespace stripped
    }
    assert {p.id: p.panels_per_side for p in scan.problems} == {
        "1": 6,
        "2": 6,
        "1002": 4,
        "2003": 2,
    }


def test_ids_keep_manifest_order(data_dir: Path, root: Path, labels: Path) -> None:
    write_manifest(root, [make_problem(root, n) for n in (3, 1, 1002)])
    assert open_dataset(FORMAT, data_dir).problem_ids() == ["3", "1", "1002"]


def test_problem_round_trips_through_json(data_dir: Path, root: Path, labels: Path) -> None:
    write_manifest(root, [make_problem(root, 1), make_problem(root, 1002, per_side=3)])
    for problem in open_dataset(FORMAT, data_dir).scan().problems:
        assert BongardProblem.model_validate_json(problem.model_dump_json()) == problem


def test_format_is_detected_when_folder_name_is_no_format(data_dir: Path) -> None:
    root = data_dir / "mydata"
    write_manifest(root, [make_problem(root, 1)])
    write_labels(root / "labels.csv", LABELS)
    dataset = open_dataset("mydata", data_dir)
    assert dataset.format_name == FORMAT
    assert dataset.name == "mydata"
    problem = dataset.problem("1")
    assert problem.dataset == "mydata"
    assert problem.left[0].path == root / "images" / "1" / "left_0.png"


def test_format_path_spec_reads_any_folder(tmp_path: Path) -> None:
    root = (tmp_path / "elsewhere" / "rwr-copy").resolve()
    write_manifest(root, [make_problem(root, 1)])
    write_labels(root / "labels.csv", LABELS)
    dataset = open_dataset(f"{FORMAT}:{root}")
    assert dataset.name == "rwr-copy"
    assert dataset.problem("1").concept == Concept(left="Circles", right="Squares")


def test_labels_and_manifest_options(tmp_path: Path, data_dir: Path, root: Path) -> None:
    root.mkdir(parents=True)
    manifest = root / "variant.json"
    manifest.write_text(json.dumps({"problems": [make_problem(root, 1)]}), encoding="utf-8")
    table = write_labels(tmp_path / "tables" / "rules.csv", [["1", "Up", "Down"]])
    dataset = open_dataset(FORMAT, data_dir, {"manifest": "variant.json", "labels": str(table.resolve())})
    assert dataset.problem("1").concept == Concept(left="Up", right="Down")


# --- the whole dataset unusable ---------------------------------------------------------------


def test_malformed_manifest_json_is_named(data_dir: Path, root: Path, labels: Path) -> None:
    manifest = root / "dataset.json"
    manifest.write_text('{"problems": [', encoding="utf-8")
    dataset = open_dataset(FORMAT, data_dir)
    with pytest.raises(DatasetError) as caught:
        dataset.problem_ids()
    assert_located(caught.value, dataset=FORMAT, problem_id=None, path=manifest, reason="malformed JSON")
    with pytest.raises(DatasetError):
        dataset.scan()


@pytest.mark.parametrize("content", [[], {"problem": []}, {"problems": {"1": {}}}])
def test_manifest_without_problems_list_is_refused(
    data_dir: Path, root: Path, labels: Path, content: object
) -> None:
    manifest = root / "dataset.json"
    manifest.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem_ids()
    assert_located(caught.value, dataset=FORMAT, problem_id=None, path=manifest, reason='"problems" list')


def test_missing_manifest_is_named(data_dir: Path, root: Path, labels: Path) -> None:
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem_ids()
    assert_located(
        caught.value,
        dataset=FORMAT,
        problem_id=None,
        path=root / "dataset.json",
        reason="file is missing",
    )


# --- one bad problem among good ones ------------------------------------------------------------


def scan_with_bad_problem(root: Path, data_dir: Path, bad: object) -> tuple[Path, DatasetError]:
    """Problems 1, the bad one, 3: the scan must keep both good ones."""
    manifest = write_manifest(root, [make_problem(root, 1), bad, make_problem(root, 3)])
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["1", "3"]
    assert len(scan.errors) == 1
    return manifest, scan.errors[0]


@pytest.mark.parametrize("field", ["left_images", "right_images"])
def test_record_missing_a_field_is_located(data_dir: Path, root: Path, labels: Path, field: str) -> None:
    record = make_problem(root, 2)
    del record[field]
    manifest, error = scan_with_bad_problem(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="2", path=manifest, reason="malformed record")
    assert field in error.reason


def test_image_without_path_is_located(data_dir: Path, root: Path, labels: Path) -> None:
    record = make_problem(root, 2)
    del record["right_images"][4]["path"]
    manifest, error = scan_with_bad_problem(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="2", path=manifest, reason="malformed record")
    assert "right_images.4.path" in error.reason


@pytest.mark.parametrize("number", [0, -5])
def test_id_below_one_is_refused(data_dir: Path, root: Path, labels: Path, number: int) -> None:
    record = make_problem(root, 2)
    record["id"] = number
    manifest, error = scan_with_bad_problem(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id=str(number), path=manifest, reason="malformed record")


def test_side_with_a_single_image_is_refused(data_dir: Path, root: Path, labels: Path) -> None:
    record = make_problem(root, 2, per_side=0)
    manifest, error = scan_with_bad_problem(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="2", path=manifest, reason="left_images")


def test_unequal_sides_are_refused(data_dir: Path, root: Path, labels: Path) -> None:
    record = make_problem(root, 2)
    record["right_images"] = record["right_images"][:-1]
    manifest, error = scan_with_bad_problem(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="2", path=manifest, reason="7 left but 6 right images")


def test_record_without_id_is_reported_by_position(data_dir: Path, root: Path, labels: Path) -> None:
    record = make_problem(root, 2)
    del record["id"]
    manifest, error = scan_with_bad_problem(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="problems[1]", path=manifest, reason="malformed record")


def test_duplicate_ids_are_refused(data_dir: Path, root: Path, labels: Path) -> None:
    manifest = write_manifest(
        root, [make_problem(root, 2), make_problem(root, 1), make_problem(root, 2, per_side=3)]
    )
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.problem_ids() == ["2", "1"]
    scan = dataset.scan()
    assert [p.id for p in scan.problems] == ["1"]
    assert len(scan.errors) == 1
    assert_located(
        scan.errors[0],
        dataset=FORMAT,
        problem_id="2",
        path=manifest,
        reason="appears in 2 records",
    )


def test_path_escaping_the_dataset_root_is_refused(data_dir: Path, root: Path, labels: Path) -> None:
    make_image(data_dir / "outside.png", (10, 20, 30))  # exists, so only the escape is at fault
    record = make_problem(root, 2)
    record["left_images"][2]["path"] = "../outside.png"
    manifest, error = scan_with_bad_problem(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="2", path=manifest, reason="escapes")
    assert "'../outside.png'" in error.reason


def test_absolute_path_is_refused(data_dir: Path, root: Path, labels: Path) -> None:
    outside = make_image(data_dir / "outside.png", (10, 20, 30))
    record = make_problem(root, 2)
    record["right_images"][6]["path"] = str(outside)
    manifest, error = scan_with_bad_problem(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="2", path=manifest, reason="escapes")


def test_missing_image_file_is_named(data_dir: Path, root: Path, labels: Path) -> None:
    record = make_problem(root, 2)
    missing = root / "images" / "2" / "right_6.png"
    missing.unlink()
    _, error = scan_with_bad_problem(root, data_dir, record)
    assert error.dataset == FORMAT
    assert error.problem_id == "2"
    assert error.path == missing
    assert error.reason == "image listed in dataset.json is missing"


def test_missing_label_row_is_located(data_dir: Path, root: Path, labels: Path) -> None:
    manifest = write_manifest(root, [make_problem(root, 1), make_problem(root, 1005)])
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["1"]
    assert len(scan.errors) == 1
    assert manifest != labels
    assert_located(scan.errors[0], dataset=FORMAT, problem_id="1005", path=labels, reason="no label row 4")


def test_id_multiple_of_1000_does_not_wrap_to_the_last_row(data_dir: Path, root: Path, labels: Path) -> None:
    write_manifest(root, [make_problem(root, 1000)])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem("1000")
    assert_located(caught.value, dataset=FORMAT, problem_id="1000", path=labels, reason="no label row -1")


@pytest.mark.parametrize("empty", [0, 1])
def test_label_row_with_an_empty_rule_is_refused(data_dir: Path, root: Path, empty: int) -> None:
    row = ["1", "Circles", "Squares"]
    row[1 + empty] = "   "
    labels = write_labels(root / "labels.csv", [row])
    write_manifest(root, [make_problem(root, 1)])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem("1")
    assert_located(caught.value, dataset=FORMAT, problem_id="1", path=labels, reason="empty rule")


@pytest.mark.parametrize("column", ["Left-side Rule", "Right-side Rule"])
def test_labels_missing_a_column_is_located(data_dir: Path, root: Path, column: str) -> None:
    header = [name if name != column else "Rule" for name in HEADER]
    labels = write_labels(root / "labels.csv", LABELS, header)
    write_manifest(root, [make_problem(root, 1), make_problem(root, 2)])
    scan = open_dataset(FORMAT, data_dir).scan()
    assert scan.problems == []
    assert [e.problem_id for e in scan.errors] == ["1", "2"]
    for error in scan.errors:
        assert_located(error, dataset=FORMAT, problem_id=error.problem_id, path=labels, reason=column)
        assert error.reason == f"missing columns: {column}"


def test_missing_labels_file_is_named(data_dir: Path, root: Path) -> None:
    write_manifest(root, [make_problem(root, 1)])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem("1")
    assert_located(
        caught.value,
        dataset=FORMAT,
        problem_id="1",
        path=root / "labels.csv",
        reason="file is missing",
    )


# --- options --------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [{"panels_per_side": "3"}, {"label": "x.csv"}])
def test_bad_option_is_refused(data_dir: Path, root: Path, labels: Path, options: dict[str, str]) -> None:
    write_manifest(root, [make_problem(root, 1)])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, options)
    assert caught.value.dataset == FORMAT
    assert "bad option" in caught.value.reason
    assert next(iter(options)) in caught.value.reason
