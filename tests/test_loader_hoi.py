"""The Bongard-HOI loader on annotation files and images built here in the published layout.

Records copy upstream's structure (`[positives, negatives, "<action>++<object>"]`, image
records with `im_path` and `crop_bbox`), never its data: every image is drawn here and every
annotation is made up, so each expected crop, count and concept is known.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy
import pytest
from PIL import Image

from datasets_io.catalog import open_dataset
from datasets_io.errors import DatasetError
from datasets_io.problem import BongardProblem, Concept
from tests.assertions import assert_located
from tests.cli import run_bongard
from tests.hoi_releases import (
    TEST_FILE,
    default_box,
    make_photo,
    make_record,
    write_split,
)

FORMAT = "bongard-hoi"


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace the default crop cache lives in."""
    home = tmp_path / "home"
    monkeypatch.setenv("BONGARD_HOME", str(home))
    return home


def corner(image: Image.Image) -> tuple[int, ...]:
    """The top-left pixel of an image: (x, y, tint) of where its crop began."""
    pixel = image.getpixel((0, 0))
    assert isinstance(pixel, tuple)
    return tuple(int(v) for v in pixel)


def panel_info(problem: BongardProblem, ref: str) -> dict[str, Any]:
    """What the problem's metadata records of one panel (source image, box, labels)."""
    panels = problem.metadata["panels"]
    assert isinstance(panels, dict)
    info = panels[ref]
    assert isinstance(info, dict)
    return info


def images_of(root: Path) -> Path:
    return root / "hake" / "images"


def annotations_of(root: Path) -> Path:
    return root / "bongard_hoi_release"


def source_of(root: Path, entry: dict[str, Any]) -> Path:
    return images_of(root) / str(entry["im_path"]).removeprefix("./")


# --- a correct record ---------------------------------------------------------------------------


def test_record_loads_positives_left_negatives_right_with_image_6_as_tests(
    data_dir: Path, root: Path
) -> None:
    record = make_record(images_of(root), "a")
    write_split(annotations_of(root), [record])
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.format_name == FORMAT
    assert dataset.problem_ids() == ["test_seen_obj_seen_act-0"]

    problem = dataset.problem("test_seen_obj_seen_act-0")
    assert problem.key == f"{FORMAT}/test_seen_obj_seen_act-0"
    assert (len(problem.left), len(problem.right), problem.panels_per_side) == (6, 6, 6)
    assert [p.ref for p in problem.left] == [f"left-{n}" for n in range(6)]
    assert [p.ref for p in problem.right] == [f"right-{n}" for n in range(6)]
    assert [p.ref for p in problem.test_panels] == ["left-test-6", "right-test-6"]
    assert problem.concept == Concept(left="ride bicycle", right=None)
    assert problem.concept.stated_right == "NOT ride bicycle"
    assert problem.metadata["split"] == "test_seen_obj_seen_act"
    assert problem.metadata["record"] == 0
    assert problem.metadata["task"] == "ride++bicycle"
    assert (problem.metadata["action"], problem.metadata["object"]) == ("ride", "bicycle")
    assert panel_info(problem, "left-test-6") == {
        "image": record[0][6]["im_path"],
        "crop_box": default_box(6),
        "box_scale": 1.0,
        "action": "ride",
        "object": "bicycle",
    }
    assert panel_info(problem, "right-0") == {
        "image": record[1][0]["im_path"],
        "crop_box": default_box(7),
        "box_scale": 1.0,
        "action": "hold",
        "object": "bicycle",
    }


def test_each_panel_is_its_image_cropped_to_its_box(data_dir: Path, root: Path) -> None:
    record = make_record(images_of(root), "a")
    write_split(annotations_of(root), [record])
    problem = open_dataset(FORMAT, data_dir).problem("test_seen_obj_seen_act-0")
    entries = [*record[0][:6], *record[1][:6], record[0][6], record[1][6]]
    ordered = [*problem.left, *problem.right, *problem.test_left, *problem.test_right]
    for panel, entry in zip(ordered, entries, strict=True):
        x1, y1, x2, y2 = entry["crop_bbox"]
        with Image.open(panel.path) as cropped, Image.open(source_of(root, entry)) as source:
            assert cropped.size == (x2 - x1, y2 - y1)
            assert cropped.convert("RGB").tobytes() == source.convert("RGB").crop((x1, y1, x2, y2)).tobytes()
            assert corner(cropped)[:2] == (x1, y1)


def test_crops_are_written_once_to_the_workspace_and_redone_when_the_image_changes(
    data_dir: Path, root: Path, workspace: Path
) -> None:
    record = make_record(images_of(root), "a")
    write_split(annotations_of(root), [record])
    first = open_dataset(FORMAT, data_dir).problem("test_seen_obj_seen_act-0")
    crops = sorted((workspace / "crops").rglob("*.png"))
    assert len(crops) == 14
    assert {p.path for p in first.all_panels} == set(crops)
    written = {path: path.stat().st_mtime_ns for path in crops}

    again = open_dataset(FORMAT, data_dir).problem("test_seen_obj_seen_act-0")
    assert again == first
    assert {path: path.stat().st_mtime_ns for path in crops} == written

    make_photo(source_of(root, record[0][0]), tint=99, size=(90, 70))
    changed = open_dataset(FORMAT, data_dir).problem("test_seen_obj_seen_act-0")
    assert changed.left[0].path != first.left[0].path
    with Image.open(changed.left[0].path) as cropped:
        assert corner(cropped) == (0, 0, 99)
    assert changed.left[1:] == first.left[1:]


def test_cache_dir_option_moves_the_crops(
    data_dir: Path, root: Path, tmp_path: Path, workspace: Path
) -> None:
    write_split(annotations_of(root), [make_record(images_of(root), "a")])
    cache = tmp_path / "elsewhere"
    problem = open_dataset(FORMAT, data_dir, {"cache_dir": str(cache)}).problem("test_seen_obj_seen_act-0")
    assert all(panel.path.is_relative_to(cache) for panel in problem.all_panels)
    assert not (workspace / "crops").exists()


def test_crop_false_keeps_whole_images_and_records_the_boxes(
    data_dir: Path, root: Path, workspace: Path
) -> None:
    record = make_record(images_of(root), "a")
    write_split(annotations_of(root), [record])
    problem = open_dataset(FORMAT, data_dir, {"crop": "false"}).problem("test_seen_obj_seen_act-0")
    assert problem.left[0].path == source_of(root, record[0][0])
    assert problem.test_right[0].path == source_of(root, record[1][6])
    assert problem.metadata["cropped"] is False
    assert panel_info(problem, "left-0")["crop_box"] == default_box(0)
    assert not (workspace / "crops").exists()


def test_openimages_boxes_are_scaled_up_and_clipped_as_upstream_does(data_dir: Path, root: Path) -> None:
    boxes = [[10, 5, 40, 30]] * 14
    boxes[1] = [30, 20, 60, 50]  # 1.6 x: [48, 32, 96, 80] -> clipped to the 80x60 image
    record = make_record(images_of(root), "o", source="openimages/images", boxes=boxes)
    write_split(annotations_of(root), [record])
    problem = open_dataset(FORMAT, data_dir).problem("test_seen_obj_seen_act-0")
    with Image.open(problem.left[0].path) as scaled, Image.open(problem.left[1].path) as clipped:
        assert scaled.size == (64 - 16, 48 - 8)
        assert corner(scaled)[:2] == (16, 8)
        assert clipped.size == (80 - 48, 60 - 32)
    assert panel_info(problem, "left-0")["box_scale"] == 1.6

    plain = open_dataset(FORMAT, data_dir, {"openimages_scale": "1"}).problem("test_seen_obj_seen_act-0")
    with Image.open(plain.left[0].path) as unscaled:
        assert unscaled.size == (30, 25)


@pytest.mark.parametrize(
    ("task", "concept"),
    [
        ("sit_on++chair", "sit on chair"),
        ("swing++tennis_racket", "swing tennis racket"),
        ("no_interaction++bicycle", "no interaction with bicycle"),
    ],
)
def test_concept_is_written_from_the_task_name(data_dir: Path, root: Path, task: str, concept: str) -> None:
    write_split(annotations_of(root), [make_record(images_of(root), "a", task=task)])
    problem = open_dataset(FORMAT, data_dir).problem("test_seen_obj_seen_act-0")
    assert problem.concept == Concept(left=concept)


def test_the_test_split_files_are_read_in_order_and_files_selects_others(data_dir: Path, root: Path) -> None:
    images, annotations = images_of(root), annotations_of(root)
    unseen = [make_record(images, "u1"), make_record(images, "u2")]
    write_split(annotations, unseen, "bongard_hoi_test_unseen_obj_unseen_act.json")
    write_split(annotations, [make_record(images, "s1")], TEST_FILE)
    write_split(annotations, [make_record(images, "t1")], "bongard_hoi_train.json")
    write_split(annotations, [make_record(images, "v1")], "bongard_hoi_val_seen_obj_seen_act.json")
    assert open_dataset(FORMAT, data_dir).problem_ids() == [
        "test_seen_obj_seen_act-0",
        "test_unseen_obj_unseen_act-0",
        "test_unseen_obj_unseen_act-1",
    ]
    everything = open_dataset(FORMAT, data_dir, {"files": "bongard_hoi_*.json"})
    assert everything.problem_ids() == [
        "test_seen_obj_seen_act-0",
        "test_unseen_obj_unseen_act-0",
        "test_unseen_obj_unseen_act-1",
        "train-0",
        "val_seen_obj_seen_act-0",
    ]
    assert everything.problem("train-0").metadata["split"] == "train"


def test_flat_layout_and_the_image_root_and_annotations_options(
    tmp_path: Path, data_dir: Path, root: Path
) -> None:
    # Upstream's own layout: split files directly in one folder, images under another.
    write_split(root, [make_record(root, "flat")])
    assert open_dataset(FORMAT, data_dir).problem_ids() == ["test_seen_obj_seen_act-0"]
    assert open_dataset(FORMAT, data_dir).scan().errors == []

    images, annotations = (tmp_path / "hake-images").resolve(), tmp_path / "cache"
    record = make_record(images, "moved")
    write_split(annotations, [record])
    options = {"image_root": str(images), "annotations": str(annotations), "crop": "false"}
    problem = open_dataset(FORMAT, data_dir, options).problem("test_seen_obj_seen_act-0")
    assert problem.left[0].path == images / str(record[0][0]["im_path"]).removeprefix("./")


def test_format_is_detected_when_folder_name_is_no_format(data_dir: Path) -> None:
    root = data_dir / "hoi-copy"
    write_split(annotations_of(root), [make_record(images_of(root), "a")])
    dataset = open_dataset("hoi-copy", data_dir)
    assert dataset.format_name == FORMAT
    assert dataset.problem("test_seen_obj_seen_act-0").dataset == "hoi-copy"


def test_problem_round_trips_through_json(data_dir: Path, root: Path) -> None:
    write_split(annotations_of(root), [make_record(images_of(root), "a")])
    problem = open_dataset(FORMAT, data_dir).problem("test_seen_obj_seen_act-0")
    assert BongardProblem.model_validate_json(problem.model_dump_json()) == problem


# --- the whole dataset unusable -----------------------------------------------------------------


def test_malformed_json_file_is_named(data_dir: Path, root: Path) -> None:
    bad = annotations_of(root) / TEST_FILE
    bad.parent.mkdir(parents=True)
    bad.write_text("[[[{", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem_ids()
    assert_located(caught.value, dataset=FORMAT, problem_id=None, path=bad, reason="malformed JSON")


def test_split_file_that_is_no_list_is_refused(data_dir: Path, root: Path) -> None:
    bad = write_split(annotations_of(root), {"eat++orange": []})
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem_ids()
    assert_located(caught.value, dataset=FORMAT, problem_id=None, path=bad, reason="JSON list")


def test_folder_without_split_files_is_refused(data_dir: Path, root: Path) -> None:
    write_split(annotations_of(root), [], "bongard_hoi_train.json")
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem_ids()
    assert_located(
        caught.value, dataset=FORMAT, problem_id=None, path=annotations_of(root), reason="no annotation files"
    )


# --- one bad record among good ones -------------------------------------------------------------


def scan_with_bad_record(root: Path, data_dir: Path, bad: object) -> tuple[Path, DatasetError]:
    """Records good, the bad one, good: the scan keeps both good ones and names the bad one."""
    images = images_of(root)
    file = write_split(annotations_of(root), [make_record(images, "g1"), bad, make_record(images, "g2")])
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["test_seen_obj_seen_act-0", "test_seen_obj_seen_act-2"]
    assert len(scan.errors) == 1
    return file, scan.errors[0]


BAD_ID = "test_seen_obj_seen_act-1"


@pytest.mark.parametrize("bad", ["eat++orange", {"positives": []}, [[], []], [[], [], "a++b", "extra"]])
def test_record_that_is_no_triple_is_malformed(data_dir: Path, root: Path, bad: object) -> None:
    file, error = scan_with_bad_record(root, data_dir, bad)
    assert_located(error, dataset=FORMAT, problem_id=BAD_ID, path=file, reason="malformed record: expected")


@pytest.mark.parametrize(("side", "count"), [(0, 6), (0, 8), (1, 6), (1, 0)])
def test_wrong_number_of_images_is_located(data_dir: Path, root: Path, side: int, count: int) -> None:
    record = make_record(images_of(root), "bad")
    record[side] = (record[side] * 2)[:count]
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id=BAD_ID, path=file, reason="malformed record")
    assert ("positives" if side == 0 else "negatives") in error.reason
    assert "7" in error.reason


@pytest.mark.parametrize(
    ("box", "reason"),
    [
        ([30, 10, 20, 40], "is empty"),
        ([10, 40, 30, 40], "is empty"),
        ([-1, 0, 20, 20], "negative"),
        ([0, 0, 20], "crop_bbox"),
        ([0, 0, 20, 20, 5], "crop_bbox"),
        (["left", 0, 20, 20], "crop_bbox"),
        ([0.5, 0, 20, 20], "crop_bbox"),
        (None, "crop_bbox"),
    ],
)
def test_bad_crop_box_is_a_malformed_record(data_dir: Path, root: Path, box: object, reason: str) -> None:
    record = make_record(images_of(root), "bad")
    record[1][3]["crop_bbox"] = box
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id=BAD_ID, path=file, reason="malformed record")
    assert "negatives.3.crop_bbox" in error.reason
    assert reason in error.reason


def test_crop_box_outside_its_image_is_located(data_dir: Path, root: Path) -> None:
    record = make_record(images_of(root), "bad")
    record[0][2]["crop_bbox"] = [100, 70, 140, 90]  # the image is 80x60
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id=BAD_ID, path=file, reason="lies outside the 80x60 image")
    assert record[0][2]["im_path"] in error.reason


@pytest.mark.parametrize("task", ["ride bicycle", "++bicycle", "ride++", 17])
def test_task_that_names_no_action_and_object_is_malformed(data_dir: Path, root: Path, task: object) -> None:
    record = make_record(images_of(root), "bad")
    record[2] = task
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id=BAD_ID, path=file, reason="malformed record: task")


def test_image_record_without_path_is_malformed(data_dir: Path, root: Path) -> None:
    record = make_record(images_of(root), "bad")
    del record[0][4]["im_path"]
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id=BAD_ID, path=file, reason="positives.4.im_path")


def test_missing_image_file_is_named(data_dir: Path, root: Path) -> None:
    record = make_record(images_of(root), "bad")
    missing = source_of(root, record[1][5])
    missing.unlink()
    _, error = scan_with_bad_record(root, data_dir, record)
    assert (error.dataset, error.problem_id, error.path) == (FORMAT, BAD_ID, missing)
    assert error.reason == f"image listed in {TEST_FILE} is missing"


def test_image_path_escaping_the_image_root_is_refused(data_dir: Path, root: Path) -> None:
    make_photo(root / "outside.png", tint=1)  # exists, so only the escape is at fault
    record = make_record(images_of(root), "bad")
    record[0][0]["im_path"] = "../../outside.png"
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id=BAD_ID, path=file, reason="escapes")


def test_image_that_is_no_image_is_named_when_cropping(data_dir: Path, root: Path) -> None:
    record = make_record(images_of(root), "bad")
    broken = source_of(root, record[0][3])
    broken.write_bytes(b"not a picture")
    _, error = scan_with_bad_record(root, data_dir, record)
    assert (error.dataset, error.problem_id, error.path) == (FORMAT, BAD_ID, broken)
    assert "not an image" in error.reason


def test_unwritable_crop_cache_is_a_located_error(data_dir: Path, root: Path, tmp_path: Path) -> None:
    write_split(annotations_of(root), [make_record(images_of(root), "a")])
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, {"cache_dir": str(blocker)}).problem("test_seen_obj_seen_act-0")
    assert caught.value.problem_id == "test_seen_obj_seen_act-0"
    assert caught.value.path is not None and caught.value.path.is_relative_to(blocker)
    assert "crop cache" in caught.value.reason


@pytest.mark.parametrize("options", [{"crop": "sometimes"}, {"openimages_scale": "0"}, {"imageroot": "/x"}])
def test_bad_option_is_refused(data_dir: Path, root: Path, options: dict[str, str]) -> None:
    write_split(annotations_of(root), [make_record(images_of(root), "a")])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, options)
    assert "bad option" in caught.value.reason
    assert next(iter(options)) in caught.value.reason


# --- the commands ---------------------------------------------------------------------------------


def test_datasets_list_show_and_validate(data_dir: Path, root: Path, tmp_path: Path, workspace: Path) -> None:
    images = images_of(root)
    write_split(
        annotations_of(root), [make_record(images, "a"), make_record(images, "b", task="eat++orange")]
    )
    env = {"BONGARD_HOME": str(workspace)}
    listed = run_bongard("datasets", "list", "--data-dir", data_dir, env=env)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if FORMAT in line)
    assert [cell.strip() for cell in row.split("│")[2:7]] == [FORMAT, "2", "6", "2", "2/2"]

    sheet = tmp_path / "sheet.png"
    shown = run_bongard(
        "datasets",
        "show",
        FORMAT,
        "test_seen_obj_seen_act-1",
        "--out",
        sheet,
        "--data-dir",
        data_dir,
        env=env,
    )
    assert shown.returncode == 0, shown.stderr
    assert "left:  eat orange" in shown.stdout and "right: NOT eat orange" in shown.stdout
    assert sheet.is_file()

    valid = run_bongard("datasets", "validate", FORMAT, "--data-dir", data_dir, env=env)
    assert valid.returncode == 0 and "all 2 problems usable" in valid.stdout

    # A damaged source is caught by validation of the uncropped images too.
    source_of(root, json.loads((annotations_of(root) / TEST_FILE).read_text())[1][0][2]).write_bytes(b"")
    damaged = run_bongard("datasets", "validate", FORMAT, "-O", "crop=false", "--data-dir", data_dir, env=env)
    assert damaged.returncode == 1
    assert "test_seen_obj_seen_act-1" in damaged.stderr and "empty" in damaged.stderr


@pytest.mark.parametrize(("orientation", "turns"), [(6, -1), (8, 1), (3, 2)])
def test_a_photo_with_an_exif_orientation_is_cropped_as_cv2_reads_it(
    data_dir: Path, root: Path, orientation: int, turns: int
) -> None:
    """cv2.imread turns a JPEG as its EXIF tag says before upstream crops it: the crop box lies on
    the turned photo. The expectation turns the stored pixels with numpy (6: a quarter turn
    clockwise, 8: anticlockwise, 3: a half turn), not with the code under test."""
    record = make_record(images_of(root), "a")
    entry = record[0][0]
    stored = Image.new("RGB", (64, 48))
    stored.putdata([(4 * x, 5 * y, 90) for y in range(48) for x in range(64)])
    jpeg = source_of(root, entry).with_suffix(".jpg")
    exif = Image.Exif()
    exif[0x0112] = orientation  # Orientation
    stored.save(jpeg, quality=95, exif=exif)
    entry["im_path"] = str(entry["im_path"]).replace(".png", ".jpg")
    entry["crop_bbox"] = [3, 2, 30, 20]
    write_split(annotations_of(root), [record])
    problem = open_dataset(FORMAT, data_dir).problem("test_seen_obj_seen_act-0")
    with Image.open(jpeg) as raw:
        as_cv2_reads = numpy.rot90(numpy.asarray(raw.convert("RGB")), k=turns)
    with Image.open(problem.left[0].path) as cropped:
        ours = numpy.asarray(cropped.convert("RGB"))
    assert numpy.array_equal(ours, as_cv2_reads[2:20, 3:30])
    read = cv2.imread(str(jpeg))  # OpenCV itself (BGR), with its own JPEG decoder
    assert read is not None
    by_cv2 = read[2:20, 3:30, ::-1]
    assert ours.shape == by_cv2.shape and numpy.abs(ours.astype(int) - by_cv2).mean() < 2
