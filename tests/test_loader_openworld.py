"""The Bongard-OpenWorld loader on record files and images built here, so every value is known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.errors import DatasetError
from datasets_io.loaders.openworld import OpenWorldLoader
from datasets_io.problem import BongardProblem, Concept, Panel
from tests.assertions import assert_located
from tests.builders import make_image
from tests.openworld_releases import (
    CAPTION,
    UPSTREAM_CATEGORIES,
    UPSTREAM_SPLITS,
    github_release,
    hf_release,
    make_record,
    upstream_image,
    upstream_record,
    write_jsonl,
    write_records,
)

FORMAT = "bongard-openworld"


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
    assert problem.concept_group == "Color / Material / Shape"
    assert problem.metadata == {"concept_keywords": "dog, frisbee", "common_sense": "3", "split": "test"}


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
    assert problem.concept_group == "Taste / Nutrition / Food"
    assert problem.metadata["common_sense"] == "2"


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


# --- the releases as their authors publish them -------------------------------------------------
# The GitHub release (README, "Data Preparation"): `assets/data/bongard-ow/` holds `images/<uid>/`,
# `bbox_data.pkl`, the combined `bongard_ow.json` and `bongard_ow_{train,val,test}.json`. The
# Hugging Face release has the same records one per line: `{train,val,test}.jsonl` and
# `bongard_ow.jsonl`. Uids are four-digit strings; image names are `pos__<n>__<time>__<url>` and
# `neg__<n>__...`, n = 6 being the query; the combined files add each image's source `urls`.


SPLIT_OF = {uid: split for split, uids in UPSTREAM_SPLITS.items() for uid in uids}
UPSTREAM_ORDER = ["0008", "0013", "0002", "0000", "0001"]  # test, train, val files; records in file order


def assert_upstream_problem(problem: BongardProblem, root: Path) -> None:
    """Positives 0-5 left, positive 6 the left query; negatives likewise on the right."""
    uid = problem.id
    assert [p.path for p in problem.left] == [root / upstream_image(uid, "pos", n) for n in range(6)]
    assert [p.path for p in problem.right] == [root / upstream_image(uid, "neg", n) for n in range(6)]
    assert [(p.ref, p.path) for p in problem.test_panels] == [
        ("left-test-6", root / upstream_image(uid, "pos", 6)),
        ("right-test-6", root / upstream_image(uid, "neg", 6)),
    ]
    assert problem.concept == Concept(left=f"A caption of problem {uid}.", right=None)


def test_github_release_reads_the_splits_and_skips_the_combined_copies(data_dir: Path, root: Path) -> None:
    github_release(root)
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.problem_ids() == UPSTREAM_ORDER
    scan = dataset.scan(open_images=True)
    assert scan.errors == []
    assert len(scan.problems) == 5
    for problem in scan.problems:
        assert_upstream_problem(problem, root)
        assert problem.metadata["split"] == SPLIT_OF[problem.id]
        assert problem.metadata["common_sense"] == UPSTREAM_CATEGORIES[problem.id]
    groups = {p.id: p.concept_group for p in scan.problems}
    assert groups == {
        "0008": "Anything else",
        "0013": "And / Or / Not",
        "0002": "Unusual Observations",
        "0000": "Anything else",
        "0001": "Human-Object Interaction (HOI)",
    }


def test_github_release_folder_is_detected_by_its_files(data_dir: Path) -> None:
    github_release(data_dir / "bongard-ow")
    dataset = open_dataset("bongard-ow", data_dir)
    assert dataset.format_name == FORMAT
    assert len(dataset.problem_ids()) == 5


def test_combined_file_alone_is_the_dataset(data_dir: Path, root: Path) -> None:
    github_release(root)
    for split in UPSTREAM_SPLITS:
        (root / f"bongard_ow_{split}.json").unlink()
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.problem_ids() == ["0000", "0001", "0002", "0008", "0013"]
    scan = dataset.scan()
    assert scan.errors == []
    assert {p.metadata["split"] for p in scan.problems} == {None}
    for problem in scan.problems:
        assert_upstream_problem(problem, root)


def test_combined_file_adds_problems_no_split_has(data_dir: Path, root: Path) -> None:
    github_release(root, {"test": ["0008"]})
    combined = json.loads((root / "bongard_ow.json").read_text(encoding="utf-8"))
    combined.append(upstream_record(root, "0013", urls=True))
    (root / "bongard_ow.json").write_text(json.dumps(combined), encoding="utf-8")
    scan = open_dataset(FORMAT, data_dir).scan()
    assert scan.errors == []
    assert [(p.id, p.metadata["split"]) for p in scan.problems] == [("0008", "test"), ("0013", None)]


def test_combined_record_contradicting_its_split_record_is_refused(data_dir: Path, root: Path) -> None:
    github_release(root)
    combined_path = root / "bongard_ow.json"
    combined = json.loads(combined_path.read_text(encoding="utf-8"))
    changed = next(record for record in combined if record["uid"] == "0013")
    changed["caption"] = "Another caption."
    changed["imageFiles"] = list(reversed(changed["imageFiles"]))
    combined_path.write_text(json.dumps(combined), encoding="utf-8")
    scan = open_dataset(FORMAT, data_dir).scan()
    assert sorted(p.id for p in scan.problems) == ["0000", "0001", "0002", "0008"]
    assert len(scan.errors) == 1
    assert_located(
        scan.errors[0],
        dataset=FORMAT,
        problem_id="0013",
        path=combined_path,
        reason="differs from the one in bongard_ow_test.json in caption, imageFiles",
    )


def test_malformed_combined_copy_of_a_split_record_is_refused(data_dir: Path, root: Path) -> None:
    github_release(root, {"test": ["0008", "0013"]})
    combined_path = root / "bongard_ow.json"
    combined = json.loads(combined_path.read_text(encoding="utf-8"))
    del combined[0]["caption"]
    combined_path.write_text(json.dumps(combined), encoding="utf-8")
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["0013"]
    assert_located(scan.errors[0], dataset=FORMAT, problem_id="0008", path=combined_path, reason="caption")


def test_hugging_face_jsonl_release_loads(data_dir: Path, root: Path) -> None:
    hf_release(root)
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.problem_ids() == UPSTREAM_ORDER
    scan = dataset.scan(open_images=True)
    assert scan.errors == []
    for problem in scan.problems:
        assert_upstream_problem(problem, root)
        assert problem.metadata["split"] == SPLIT_OF[problem.id]


def test_hugging_face_folder_is_detected_but_another_train_jsonl_is_not(data_dir: Path) -> None:
    hf_release(data_dir / "ow-hf")
    assert open_dataset("ow-hf", data_dir).format_name == FORMAT
    other = write_jsonl(data_dir / "chat" / "train.jsonl", [json.dumps({"prompt": "hi", "answer": "hello"})])
    assert not OpenWorldLoader.detect(other.parent)
    assert not OpenWorldLoader.detect(data_dir / "missing")


def test_json_release_is_read_where_both_releases_lie(data_dir: Path, root: Path) -> None:
    github_release(root, {"test": ["0008"]})
    hf_release(root, {"test": ["0013"]})
    assert open_dataset(FORMAT, data_dir).problem_ids() == ["0008"]


def test_combined_jsonl_alone_is_the_dataset(data_dir: Path, root: Path) -> None:
    hf_release(root)
    for split in UPSTREAM_SPLITS:
        (root / f"{split}.jsonl").unlink()
    scan = open_dataset(FORMAT, data_dir).scan()
    assert scan.errors == []
    assert [p.id for p in scan.problems] == ["0000", "0001", "0002", "0008", "0013"]


def test_jsonl_blank_lines_are_skipped(data_dir: Path, root: Path) -> None:
    record = json.dumps(upstream_record(root, "0008"))
    write_jsonl(root / "test.jsonl", ["", record, "   ", json.dumps(upstream_record(root, "0013"))])
    assert open_dataset(FORMAT, data_dir).problem_ids() == ["0008", "0013"]


def test_jsonl_caption_with_a_line_separator_character_stays_one_record(data_dir: Path, root: Path) -> None:
    record = upstream_record(root, "0008")
    record["caption"] = "A dog\u2028on a sofa\u0085."
    write_jsonl(root / "test.jsonl", [json.dumps(record, ensure_ascii=False) + "\r"])
    problem = open_dataset(FORMAT, data_dir).problem("0008")
    assert problem.concept == Concept(left="A dog\u2028on a sofa\u0085.")


def test_jsonl_line_that_is_no_json_is_reported_by_position_and_line(data_dir: Path, root: Path) -> None:
    good = [json.dumps(upstream_record(root, uid)) for uid in ("0008", "0013")]
    file = write_jsonl(root / "test.jsonl", [good[0], "", '{"uid": "0009", "caption": ', good[1]])
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.problem_ids() == ["0008", "test[1]", "0013"]
    scan = dataset.scan()
    assert [p.id for p in scan.problems] == ["0008", "0013"]
    assert len(scan.errors) == 1
    assert_located(
        scan.errors[0], dataset=FORMAT, problem_id="test[1]", path=file, reason="malformed JSON on line 3"
    )


@pytest.mark.parametrize("line", ['"just a string"', "[1, 2]", "17"])
def test_jsonl_line_that_is_no_object_is_a_malformed_record(data_dir: Path, root: Path, line: str) -> None:
    file = write_jsonl(root / "val.jsonl", [json.dumps(upstream_record(root, "0001")), line])
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["0001"]
    assert_located(scan.errors[0], dataset=FORMAT, problem_id="val[1]", path=file, reason="malformed record")


def test_jsonl_record_missing_a_field_is_located(data_dir: Path, root: Path) -> None:
    bad = upstream_record(root, "0013")
    del bad["imageFiles"]
    file = write_jsonl(root / "test.jsonl", [json.dumps(upstream_record(root, "0008")), json.dumps(bad)])
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["0008"]
    assert_located(scan.errors[0], dataset=FORMAT, problem_id="0013", path=file, reason="imageFiles")


def test_duplicate_uid_across_jsonl_splits_is_refused(data_dir: Path, root: Path) -> None:
    hf_release(root, {"test": ["0008"], "train": ["0008", "0000"]})
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["0000"]
    assert_located(
        scan.errors[0],
        dataset=FORMAT,
        problem_id="0008",
        path=root / "test.jsonl",
        reason="appears in 2 records",
    )


def test_jsonl_file_that_is_no_text_is_named(data_dir: Path, root: Path) -> None:
    root.mkdir(parents=True)
    bad = root / "test.jsonl"
    bad.write_bytes(b"\xff\xfe\x00{")
    write_jsonl(root / "train.jsonl", [json.dumps(upstream_record(root, "0000"))])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem_ids()
    assert_located(caught.value, dataset=FORMAT, problem_id=None, path=bad, reason="not UTF-8")


def test_files_option_reads_jsonl_too(data_dir: Path, root: Path) -> None:
    hf_release(root)
    assert open_dataset(FORMAT, data_dir, {"files": "val.jsonl"}).problem_ids() == ["0001"]


def test_files_option_matching_the_combined_file_keeps_it_a_supplement(data_dir: Path, root: Path) -> None:
    github_release(root)
    dataset = open_dataset(FORMAT, data_dir, {"files": "bongard_ow*.json"})
    assert dataset.problem_ids() == UPSTREAM_ORDER
    assert dataset.scan().errors == []


def test_folder_without_any_release_file_names_what_it_looked_for(data_dir: Path, root: Path) -> None:
    write_jsonl(root / "notes.jsonl", ["{}"])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir).problem_ids()
    assert_located(caught.value, dataset=FORMAT, problem_id=None, path=root, reason="train/val/test.jsonl")


# --- commonSense: the concept categories of Vaishnav & Tammet, Table A.1 -------------------------

CATEGORY_NAMES = [
    "Anything else",
    "Human-Object Interaction (HOI)",
    "Taste / Nutrition / Food",
    "Color / Material / Shape",
    "Functionality / Status / Affordance",
    "And / Or / Not",
    "Factual Knowledge",
    "Meta Class",
    "Relationship",
    "Unusual Observations",
]


def test_every_common_sense_id_is_named(data_dir: Path, root: Path) -> None:
    write_records(root, "test", [make_record(root, f"ow-{n}", common_sense=str(n)) for n in range(10)])
    scan = open_dataset(FORMAT, data_dir).scan()
    assert scan.errors == []
    assert [p.concept_group for p in scan.problems] == CATEGORY_NAMES
    assert [p.metadata["common_sense"] for p in scan.problems] == [str(n) for n in range(10)]


@pytest.mark.parametrize("value", ["10", "-1", "HOI", ""])
def test_unknown_common_sense_id_is_refused(data_dir: Path, root: Path, value: str) -> None:
    file, error = scan_with_bad_record(root, data_dir, make_record(root, "bad", common_sense=value))
    assert_located(error, dataset=FORMAT, problem_id="bad", path=file, reason="commonSense")
    assert f"unknown category id {value!r}" in error.reason


def test_empty_image_file_name_is_refused(data_dir: Path, root: Path) -> None:
    record = make_record(root, "bad")
    record["imageFiles"][3] = ""
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="bad", path=file, reason="imageFiles.3")


# --- linked image folders -------------------------------------------------------------------------


def test_linked_image_folder_is_followed(tmp_path: Path, data_dir: Path, root: Path) -> None:
    """The README's `images/` kept on another disk and linked into the dataset folder."""
    disk = (tmp_path / "big-disk").resolve()
    github_release(disk, {"test": ["0008", "0013"]})
    root.mkdir(parents=True)
    (root / "images").symlink_to(disk / "images", target_is_directory=True)
    for name in ("bongard_ow_test.json", "bongard_ow.json"):
        (disk / name).rename(root / name)
    scan = open_dataset(FORMAT, data_dir).scan(open_images=True)
    assert scan.errors == []
    for problem in scan.problems:
        assert_upstream_problem(problem, disk)


def test_linked_problem_folder_and_linked_image_root_are_followed(
    tmp_path: Path, data_dir: Path, root: Path
) -> None:
    disk = (tmp_path / "big-disk").resolve()
    write_records(root, "test", [upstream_record(root, "0008"), upstream_record(disk, "0013")])
    (root / "images" / "0013").symlink_to(disk / "images" / "0013", target_is_directory=True)
    assert open_dataset(FORMAT, data_dir).scan().errors == []
    linked_root = tmp_path / "linked-root"
    linked_root.symlink_to(root, target_is_directory=True)
    scan = open_dataset(FORMAT, data_dir, {"image_root": str(linked_root)}).scan()
    assert scan.errors == []
    assert scan.problems[0].left[0].path == root / upstream_image("0008", "pos", 0)


def test_image_file_linking_out_of_a_linked_folder_is_refused(
    tmp_path: Path, data_dir: Path, root: Path
) -> None:
    disk = (tmp_path / "big-disk").resolve()
    record = upstream_record(disk, "0013")
    secret = make_image(tmp_path / "private" / "photo.png", (1, 2, 3))
    (disk / "images" / "0013" / "link.png").symlink_to(secret)
    record["imageFiles"][2] = "images/0013/link.png"
    root.mkdir(parents=True)
    (root / "images").symlink_to(disk / "images", target_is_directory=True)
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="0013", path=file, reason="escapes")
    assert str(secret.resolve()) in error.reason


def test_image_file_linking_inside_the_image_root_is_accepted(data_dir: Path, root: Path) -> None:
    record = make_record(root, "ow-1")
    (root / "images" / "ow-1" / "same.jpg").symlink_to(root / "images" / "ow-1" / "3.jpg")
    record["imageFiles"][0] = "images/ow-1/same.jpg"
    write_records(root, "test", [record])
    problem = open_dataset(FORMAT, data_dir).problem("ow-1")
    assert problem.left[0].path == root / "images" / "ow-1" / "3.jpg"


def test_dotted_path_that_stays_inside_is_accepted_and_one_that_leaves_is_not(
    data_dir: Path, root: Path
) -> None:
    record = make_record(root, "ow-1")
    record["imageFiles"][0] = "images/other/../ow-1/0.jpg"
    write_records(root, "test", [record])
    assert open_dataset(FORMAT, data_dir).problem("ow-1").left[0].path == root / "images" / "ow-1" / "0.jpg"
    make_image(data_dir / "outside.png", (10, 20, 30))
    record["imageFiles"][0] = "images/../../outside.png"
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="ow-1", path=file, reason="escapes")


def test_looping_link_is_named(data_dir: Path, root: Path) -> None:
    record = make_record(root, "bad")
    loop = root / "images" / "loop"
    loop.symlink_to(loop)
    record["imageFiles"][1] = "images/loop/x.jpg"
    file, error = scan_with_bad_record(root, data_dir, record)
    assert_located(
        error, dataset=FORMAT, problem_id="bad", path=file, reason="cannot resolve 'images/loop/x.jpg'"
    )


# --- selecting problems by number ---------------------------------------------------------------


def test_zero_padded_uid_is_found_as_written(data_dir: Path, root: Path) -> None:
    github_release(root)
    assert open_dataset(FORMAT, data_dir).problem("0008").id == "0008"


def test_problems_selected_by_number_find_zero_padded_uids(data_dir: Path, root: Path) -> None:
    from graphs.runs.runner import parse_selection

    github_release(root)
    dataset = open_dataset(FORMAT, data_dir)
    assert [dataset.resolve_id(n) for n in parse_selection("8,13,0-2")] == [
        "0008",
        "0013",
        "0000",
        "0001",
        "0002",
    ]
    assert [dataset.resolve_id(n) for n in parse_selection("0008-0008")] == ["0008"]
    assert dataset.problem("13").id == "0013"
