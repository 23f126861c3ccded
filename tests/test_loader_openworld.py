"""The Bongard-OpenWorld loader on record files and images built here, so every value is known."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.errors import DatasetError
from datasets_io.problem import BongardProblem, Concept, Panel
from tests.assertions import assert_located
from tests.builders import distinct_color, make_image

FORMAT = "bongard-openworld"
CAPTION = "A dog is catching a frisbee in the air."


def make_record(
    image_root: Path, uid: str, *, common_sense: str = "0", caption: str = CAPTION
) -> dict[str, Any]:
    """A record whose 14 images exist under `image_root` as `images/<uid>/<n>.jpg`."""
    files = [f"images/{uid}/{number}.jpg" for number in range(14)]
    for number, name in enumerate(files):
        make_image(image_root / name, distinct_color(number))
    return {
        "uid": uid,
        "commonSense": common_sense,
        "concept": "dog, frisbee",
        "caption": caption,
        "imageFiles": files,
    }


def write_records(folder: Path, split: str, records: list[object]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"bongard_ow_{split}.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


# --- a correct record -------------------------------------------------------------------------


def test_record_loads_positives_left_negatives_right(data_dir: Path, root: Path) -> None:
    record = make_record(root, "ow-1", common_sense="3")
    write_records(root, "test", [record])
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.format_name == FORMAT
    assert dataset.problem_ids() == ["ow-1"]

    problem = dataset.problem("ow-1")
    image = root / "images" / "ow-1"
    assert problem.dataset == FORMAT
    assert problem.id == "ow-1"
    assert problem.key == f"{FORMAT}/ow-1"
    assert problem.panels_per_side == 6
    assert problem.left == [
        Panel(path=image / f"{n}.jpg", side="left", index=n, role="context") for n in range(6)
    ]
    assert problem.right == [
        Panel(path=image / f"{n + 7}.jpg", side="right", index=n, role="context") for n in range(6)
    ]
    assert problem.test_left == [Panel(path=image / "6.jpg", side="left", index=6, role="test")]
    assert problem.test_right == [Panel(path=image / "13.jpg", side="right", index=6, role="test")]
    assert [p.ref for p in problem.test_panels] == ["left-test-6", "right-test-6"]
    assert problem.concept == Concept(left=CAPTION, right=None)
    assert problem.concept_group == "3"
    assert problem.metadata == {"concept_keywords": "dog, frisbee", "split": "test"}


def test_ids_follow_sorted_record_files_then_record_order(data_dir: Path, root: Path) -> None:
    write_records(root, "train", [make_record(root, "zeta"), make_record(root, "alpha")])
    write_records(root, "test", [make_record(root, "mid")])
    write_records(root, "val", [make_record(root, "beta")])
    (root / "notes.json").write_text("not a record file", encoding="utf-8")
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.problem_ids() == ["mid", "zeta", "alpha", "beta"]
    splits = {p.id: p.metadata["split"] for p in dataset.scan().problems}
    assert splits == {"mid": "test", "zeta": "train", "alpha": "train", "beta": "val"}


def test_numeric_uid_and_common_sense_become_strings(data_dir: Path, root: Path) -> None:
    record = make_record(root, "17")
    record["uid"] = 17
    record["commonSense"] = 2
    write_records(root, "test", [record])
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.problem_ids() == ["17"]
    problem = dataset.problem("17")
    assert problem.id == "17"
    assert problem.concept_group == "2"


def test_problem_round_trips_through_json(data_dir: Path, root: Path) -> None:
    write_records(root, "test", [make_record(root, "ow-1")])
    problem = open_dataset(FORMAT, data_dir).problem("ow-1")
    assert BongardProblem.model_validate_json(problem.model_dump_json()) == problem


def test_format_is_detected_when_folder_name_is_no_format(data_dir: Path) -> None:
    root = data_dir / "mydata"
    write_records(root, "test", [make_record(root, "ow-1")])
    dataset = open_dataset("mydata", data_dir)
    assert dataset.format_name == FORMAT
    assert dataset.name == "mydata"
    problem = dataset.problem("ow-1")
    assert problem.dataset == "mydata"
    assert problem.left[0].path == root / "images" / "ow-1" / "0.jpg"


def test_format_path_spec_reads_any_folder(tmp_path: Path) -> None:
    root = (tmp_path / "elsewhere" / "ow-copy").resolve()
    write_records(root, "val", [make_record(root, "ow-1")])
    dataset = open_dataset(f"{FORMAT}:{root}")
    assert dataset.name == "ow-copy"
    assert dataset.problem("ow-1").metadata["split"] == "val"


def test_image_root_option_moves_where_image_files_are_read(tmp_path: Path, data_dir: Path) -> None:
    images = (tmp_path / "ow-images").resolve()
    root = data_dir / FORMAT
    write_records(root, "test", [make_record(images, "ow-1")])
    dataset = open_dataset(FORMAT, data_dir, {"image_root": str(images)})
    problem = dataset.problem("ow-1")
    assert problem.left[0].path == images / "images" / "ow-1" / "0.jpg"
    assert problem.test_right[0].path == images / "images" / "ow-1" / "13.jpg"
    # Without the option the same record points into the dataset folder, where nothing is.
    error = open_dataset(FORMAT, data_dir).scan().errors
    assert len(error) == 1 and str(root / "images" / "ow-1" / "0.jpg") in str(error[0])


def test_files_option_selects_record_files(data_dir: Path, root: Path) -> None:
    write_records(root, "test", [make_record(root, "in-test")])
    write_records(root, "train", [make_record(root, "in-train")])
    dataset = open_dataset(FORMAT, data_dir, {"files": "*_train.json"})
    assert dataset.problem_ids() == ["in-train"]


# --- the whole dataset unusable ---------------------------------------------------------------


def test_malformed_json_file_is_named(data_dir: Path, root: Path) -> None:
    write_records(root, "train", [make_record(root, "ow-1")])
    bad = root / "bongard_ow_test.json"
    bad.write_text('[{"uid": "ow-2", ', encoding="utf-8")
    dataset = open_dataset(FORMAT, data_dir)
    with pytest.raises(DatasetError) as caught:
        dataset.problem_ids()
    assert_located(caught.value, dataset=FORMAT, problem_id=None, path=bad, reason="malformed JSON")
    with pytest.raises(DatasetError) as caught_scan:
        dataset.scan()
    assert caught_scan.value.path == bad


def test_record_file_that_is_no_list_is_refused(data_dir: Path, root: Path) -> None:
    root.mkdir(parents=True)
    bad = root / "bongard_ow_test.json"
    bad.write_text('{"uid": "ow-1"}', encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem_ids()
    assert_located(caught.value, dataset=FORMAT, problem_id=None, path=bad, reason="JSON list")


def test_folder_without_record_files_is_refused(data_dir: Path, root: Path) -> None:
    root.mkdir(parents=True)
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem_ids()
    assert_located(caught.value, dataset=FORMAT, problem_id=None, path=root, reason="no record files")


def test_missing_dataset_folder_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(DatasetError) as caught:
        open_dataset(f"{FORMAT}:{missing}").problem_ids()
    assert caught.value.path == missing
    assert "missing" in caught.value.reason


# --- one bad record among good ones -------------------------------------------------------------


def scan_with_bad_record(root: Path, data_dir: Path, bad: object) -> tuple[Path, DatasetError]:
    """Records good-1, the bad one, good-2: the scan must keep both good ones."""
    file = write_records(root, "test", [make_record(root, "good-1"), bad, make_record(root, "good-2")])
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["good-1", "good-2"]
    assert len(scan.errors) == 1
    return file, scan.errors[0]


@pytest.mark.parametrize("field", ["caption", "commonSense", "concept", "imageFiles"])
def test_record_missing_a_field_is_located(data_dir: Path, root: Path, field: str) -> None:
    record = make_record(root, "bad")
    del record[field]
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="bad", path=file, reason="malformed record")
    assert field in error.reason


@pytest.mark.parametrize("count", [0, 13, 15])
def test_wrong_number_of_image_files_is_located(data_dir: Path, root: Path, count: int) -> None:
    record = make_record(root, "bad")
    files = [*record["imageFiles"], "images/bad/0.jpg"]
    record["imageFiles"] = files[:count]
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="bad", path=file, reason="imageFiles")


def test_empty_caption_is_refused(data_dir: Path, root: Path) -> None:
    record = make_record(root, "bad", caption="")
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="bad", path=file, reason="caption")


def test_record_that_is_no_object_is_reported_by_position(data_dir: Path, root: Path) -> None:
    file, error = scan_with_bad_record(root, data_dir, "just a string")
    assert_located(
        error,
        dataset=FORMAT,
        problem_id="bongard_ow_test[1]",
        path=file,
        reason="malformed record",
    )


def test_record_without_uid_is_reported_by_position(data_dir: Path, root: Path) -> None:
    record = make_record(root, "bad")
    del record["uid"]
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="bongard_ow_test[1]", path=file, reason="uid")
    assert open_dataset(FORMAT, data_dir).problem_ids() == [
        "good-1",
        "bongard_ow_test[1]",
        "good-2",
    ]


def test_duplicate_uid_in_one_file_is_refused(data_dir: Path, root: Path) -> None:
    file = write_records(
        root,
        "test",
        [make_record(root, "dup"), make_record(root, "ok"), make_record(root, "dup")],
    )
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.problem_ids() == ["dup", "ok"]
    scan = dataset.scan()
    assert [p.id for p in scan.problems] == ["ok"]
    assert len(scan.errors) == 1
    assert_located(scan.errors[0], dataset=FORMAT, problem_id="dup", path=file, reason="appears in 2 records")


def test_duplicate_uid_across_files_is_refused(data_dir: Path, root: Path) -> None:
    first = write_records(root, "test", [make_record(root, "dup")])
    write_records(root, "train", [make_record(root, "dup"), make_record(root, "ok")])
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["ok"]
    assert len(scan.errors) == 1
    assert_located(
        scan.errors[0], dataset=FORMAT, problem_id="dup", path=first, reason="appears in 2 records"
    )


def test_image_path_escaping_the_image_root_is_refused(data_dir: Path, root: Path) -> None:
    make_image(data_dir / "outside.png", (10, 20, 30))  # exists, so only the escape is at fault
    record = make_record(root, "bad")
    record["imageFiles"] = ["../outside.png", *record["imageFiles"][1:]]
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="bad", path=file, reason="escapes")
    assert "'../outside.png'" in error.reason


def test_absolute_image_path_is_refused(data_dir: Path, root: Path) -> None:
    outside = make_image(data_dir / "outside.png", (10, 20, 30))
    record = make_record(root, "bad")
    record["imageFiles"] = [*record["imageFiles"][:13], str(outside)]
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="bad", path=file, reason="escapes")


def test_symlink_leading_out_of_the_image_root_is_refused(data_dir: Path, root: Path) -> None:
    outside = make_image(data_dir / "outside.png", (10, 20, 30))
    record = make_record(root, "bad")
    (root / "images" / "bad" / "link.png").symlink_to(outside)
    record["imageFiles"] = [
        *record["imageFiles"][:5],
        "images/bad/link.png",
        *record["imageFiles"][6:],
    ]
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="bad", path=file, reason="escapes")


def test_escape_is_judged_against_the_image_root_option(tmp_path: Path, data_dir: Path) -> None:
    images = (tmp_path / "ow-images").resolve()
    root = data_dir / FORMAT
    record = make_record(images, "ow-1")
    # Inside the dataset folder but outside the image root: still an escape.
    make_image(root / "stray.png", (1, 2, 3))
    record["imageFiles"] = [f"../data/{FORMAT}/stray.png", *record["imageFiles"][1:]]
    file = write_records(root, "test", [record])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, {"image_root": str(images)}).problem("ow-1")
    assert_located(caught.value, dataset=FORMAT, problem_id="ow-1", path=file, reason="escapes")


def test_missing_image_file_is_named(data_dir: Path, root: Path) -> None:
    record = make_record(root, "bad")
    missing = root / "images" / "bad" / "9.jpg"
    missing.unlink()
    _, error = scan_with_bad_record(root, data_dir, record)
    assert error.dataset == FORMAT
    assert error.problem_id == "bad"
    assert error.path == missing
    assert error.reason == "image listed in bongard_ow_test.json is missing"


def test_unknown_problem_id_is_refused(data_dir: Path, root: Path) -> None:
    write_records(root, "test", [make_record(root, "ow-1")])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem("ow-2")
    assert caught.value.dataset == FORMAT
    assert "ow-2" in caught.value.reason


# --- options --------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [{"panels_per_side": "6"}, {"imageroot": "/x"}])
def test_bad_option_is_refused(data_dir: Path, root: Path, options: dict[str, str]) -> None:
    write_records(root, "test", [make_record(root, "ow-1")])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, options)
    assert caught.value.dataset == FORMAT
    assert "bad option" in caught.value.reason
    assert next(iter(options)) in caught.value.reason
