"""The Bongard-RWR+ loader on a `dataset.json` and `labels.csv` built here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from datasets_io.catalog import Dataset, open_dataset
from datasets_io.errors import DatasetError
from datasets_io.loaders.rwr_plus import RwrPlusLoader
from datasets_io.problem import SIDES, BongardProblem, Concept, Panel, ProblemSummary
from datasets_io.render import SHIPPED_SHEET_KEY, render_sheet
from tests.assertions import assert_located
from tests.builders import distinct_color, make_image
from tests.rwr_plus_releases import (
    HEADER,
    LABELS,
    UPSTREAM_IDS,
    upstream_folders,
    upstream_manifest,
    write_labels,
)

FORMAT = "bongard-rwr-plus"


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


def test_labels_beside_the_variant_folders_are_found_where_the_authors_keep_them(data_dir: Path) -> None:
    """The authors' code reads one `data/labels.csv` for every variant folder `data/<variant>/`."""
    upstream_manifest(data_dir / "bongard-rwr-plus-gs")
    upstream_folders(data_dir / "bongard-rwr-plus-lp", [1, 3])
    beside = write_labels(data_dir / "labels.csv", LABELS)
    for variant in ("gs", "lp"):
        scan = open_dataset(f"bongard-rwr-plus:{data_dir / f'bongard-rwr-plus-{variant}'}").scan()
        assert scan.errors == [] and scan.problems
        assert scan.problems[0].concept == Concept(left="Circles", right="Squares")
    own = write_labels(data_dir / "bongard-rwr-plus-gs" / "labels.csv", LABELS[::-1])
    dataset = open_dataset(f"bongard-rwr-plus:{data_dir / 'bongard-rwr-plus-gs'}")
    assert dataset.loader.concept_source.startswith(str(own)) and beside != own  # its own file first


# --- options --------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [{"panels_per_side": "3"}, {"label": "x.csv"}])
def test_bad_option_is_refused(data_dir: Path, root: Path, labels: Path, options: dict[str, str]) -> None:
    write_manifest(root, [make_problem(root, 1)])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, options)
    assert caught.value.dataset == FORMAT
    assert "bad option" in caught.value.reason
    assert next(iter(options)) in caught.value.reason


# --- the layouts upstream publishes and writes ------------------------------------------------------
# `src/dataset/model.py`: problems with `left_images` / `right_images` as `{image_id, path}` and
# the optional sheets `left_side_image`, `right_side_image`, `whole_image` ("" when absent), written
# with every field; `scripts/generate_subproblems.py` names images `images/<image_id><ext>` and
# problems `1000 * k + source`; `scripts/combine_squares_into_matrices.py` adds `lefts/<n>.jpeg`,
# `rights/<n>.jpeg` and `wholes/<id>.jpeg`. `src/dataset/simple_model.py` is the second schema, with
# plain path strings. `scripts/split_into_matrices_stochastic.py` writes no manifest but
# `<1000 * k + source>/{left,right}/0..6.jpg` and a `results.csv`.


def assert_upstream_problems(dataset: Dataset, root: Path) -> list[BongardProblem]:
    """Ids in manifest order, 6 + 6 context and 1 + 1 test images, concepts by `id % 1000 - 1`."""
    assert dataset.problem_ids() == [str(n) for n in UPSTREAM_IDS]
    scan = dataset.scan(open_images=True)
    assert scan.errors == []
    for problem, number in zip(scan.problems, UPSTREAM_IDS, strict=True):
        for offset, side in enumerate(SIDES):
            first = 10 * number + 7 * offset
            expected = [root / f"images/{first + index}.png" for index in range(7)]
            context, test = (
                (problem.left, problem.test_left) if side == "left" else (problem.right, problem.test_right)
            )
            assert [p.path for p in context] == expected[:6]
            assert [(p.path, p.ref) for p in test] == [(expected[6], f"{side}-test-6")]
        assert problem.panels_per_side == 6
    concepts = {p.id: p.concept for p in scan.problems}
    assert concepts == {
        "1": Concept(left="Circles", right="Squares"),
        "1001": Concept(left="Circles", right="Squares"),
        "3": Concept(left="Big things", right="Small things"),
        "2003": Concept(left="Big things", right="Small things"),
    }
    return scan.problems


def test_released_manifest_with_image_objects_and_sheets(data_dir: Path, root: Path, labels: Path) -> None:
    upstream_manifest(root)
    problems = assert_upstream_problems(open_dataset(FORMAT, data_dir), root)
    assert problems[0].metadata == {
        "image_ids": {"left": [10 + n for n in range(7)], "right": [17 + n for n in range(7)]}
    }


def test_second_schema_with_plain_paths_loads_alike(data_dir: Path, root: Path, labels: Path) -> None:
    upstream_manifest(root, plain=True)
    problems = assert_upstream_problems(open_dataset(FORMAT, data_dir), root)
    assert all(p.metadata == {} for p in problems)


@pytest.mark.parametrize("plain", [False, True])
def test_shipped_sheet_option_makes_whole_image_the_sheet(
    data_dir: Path, root: Path, labels: Path, plain: bool
) -> None:
    upstream_manifest(root, plain=plain)
    dataset = open_dataset(FORMAT, data_dir, {"sheet": "shipped"})
    problems = assert_upstream_problems(dataset, root)
    assert [p.metadata[SHIPPED_SHEET_KEY] for p in problems] == [
        str(root / "wholes" / f"{number}.jpeg") for number in UPSTREAM_IDS
    ]
    rendered = open_dataset(FORMAT, data_dir).problem("1")
    assert SHIPPED_SHEET_KEY not in rendered.metadata


def test_shipped_sheet_option_refuses_a_record_without_a_sheet(
    data_dir: Path, root: Path, labels: Path
) -> None:
    manifest = upstream_manifest(root)
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["problems"][2]["whole_image"] = ""
    manifest.write_text(json.dumps(data), encoding="utf-8")
    assert open_dataset(FORMAT, data_dir).scan().errors == []  # the panels alone are fine
    scan = open_dataset(FORMAT, data_dir, {"sheet": "shipped"}).scan()
    assert [p.id for p in scan.problems] == ["1", "1001", "2003"]
    assert_located(
        scan.errors[0], dataset=FORMAT, problem_id="3", path=manifest, reason="no whole_image sheet"
    )


@pytest.mark.parametrize(
    ("whole_image", "reason"), [("../outside.png", "escapes"), ("wholes/missing.jpeg", "is missing")]
)
def test_shipped_sheet_path_is_checked_like_an_image(
    data_dir: Path, root: Path, labels: Path, whole_image: str, reason: str
) -> None:
    make_image(data_dir / "outside.png", (1, 2, 3))
    manifest = upstream_manifest(root)
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["problems"][0]["whole_image"] = whole_image
    manifest.write_text(json.dumps(data), encoding="utf-8")
    scan = open_dataset(FORMAT, data_dir, {"sheet": "shipped"}).scan()
    assert len(scan.problems) == 3
    assert scan.errors[0].problem_id == "1"
    assert reason in scan.errors[0].reason


def test_record_mixing_both_schemas_is_refused(data_dir: Path, root: Path, labels: Path) -> None:
    record = make_problem(root, 2)
    record["right_images"] = [image["path"] for image in record["right_images"]]
    manifest, error = scan_with_bad_problem(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="2", path=manifest, reason="mixes image objects")


@pytest.mark.parametrize(
    ("entry", "where"),
    [("", "left_images.2.path"), (17, "left_images.2"), ({"image_id": None, "path": "x.png"}, "image_id")],
)
def test_malformed_image_entry_is_located(
    data_dir: Path, root: Path, labels: Path, entry: object, where: str
) -> None:
    record = make_problem(root, 2)
    if isinstance(entry, str):
        record["left_images"] = [image["path"] for image in record["left_images"]]
        record["right_images"] = [image["path"] for image in record["right_images"]]
    record["left_images"][2] = entry
    manifest, error = scan_with_bad_problem(root, data_dir, record)
    assert_located(error, dataset=FORMAT, problem_id="2", path=manifest, reason="malformed record")
    assert where in error.reason


# --- `<id>/{left,right}/0..6` folders, as split_into_matrices_stochastic.py writes them ------------


def test_side_folders_load_without_a_manifest(data_dir: Path, root: Path, labels: Path) -> None:
    upstream_folders(root, [1001, 3, 1, 2003])
    (root / "1" / "left" / ".DS_Store").write_bytes(b"\0")
    (root / "1" / "right" / "notes.txt").write_text("not an image", encoding="utf-8")
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.problem_ids() == ["1", "3", "1001", "2003"]
    scan = dataset.scan(open_images=True)
    assert scan.errors == []
    problem = scan.problems[2]
    assert problem.id == "1001"
    for side, context, test in (
        ("left", problem.left, problem.test_left),
        ("right", problem.right, problem.test_right),
    ):
        folder = root / "1001" / side
        assert context == [Panel(path=folder / f"{n}.jpg", side=side, index=n) for n in range(6)]
        assert test == [Panel(path=folder / "6.jpg", side=side, index=6, role="test")]
    assert problem.metadata == {"folder": "1001"}
    assert {p.id: p.concept for p in scan.problems} == {
        "1": Concept(left="Circles", right="Squares"),
        "3": Concept(left="Big things", right="Small things"),
        "1001": Concept(left="Circles", right="Squares"),
        "2003": Concept(left="Big things", right="Small things"),
    }


def test_side_folders_are_listed_and_their_images_not_looked_up_again(
    data_dir: Path, root: Path, labels: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing a side's folder finds its images (a gap or a folder named like one is refused), so the
    problem's check that each image exists is skipped: a stat per image, 0.4 s of a survey of 5,000."""
    upstream_folders(root, [1, 2])
    looked_up: list[Path] = []
    is_file = Path.is_file

    def counted(path: Path) -> bool:
        looked_up.append(path)
        return is_file(path)

    monkeypatch.setattr(Path, "is_file", counted)
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["1", "2"] and scan.errors == []
    assert [path for path in looked_up if path.suffix == ".jpg"] == []
    (root / "2" / "left" / "6.jpg").unlink()
    (root / "2" / "left" / "6.jpg").mkdir()
    scan = open_dataset(FORMAT, data_dir).scan()  # a folder named like an image is no image
    assert [p.id for p in scan.problems] == ["1"]
    assert_located(
        scan.errors[0], dataset=FORMAT, problem_id="2", path=root / "2", reason="6 left but 7 right images"
    )


def test_a_survey_of_side_folders_keeps_what_building_each_problem_would(
    data_dir: Path, root: Path, labels: Path
) -> None:
    """The folders layout is surveyed from its listings, without building panels: the same summaries,
    and the same refusals, as summarizing each problem built whole."""
    upstream_folders(root, [1, 2, 3, 4, 5, 6, 1001, 2999])
    (root / "2" / "left" / "3.jpg").unlink()  # a gap
    make_image(root / "3" / "right" / "2.png", (0, 0, 0))  # a twin
    (root / "4" / "right" / "6.jpg").unlink()  # sides unequal
    for image in (root / "5" / "left").iterdir():  # one image on a side
        if image.name != "0.jpg":
            image.unlink()
    shutil.rmtree(root / "6" / "right")  # a side missing
    dataset = open_dataset(FORMAT, data_dir)
    surveyed, scanned = dataset.survey(), dataset.scan()
    assert surveyed.problems == [ProblemSummary.of(problem) for problem in scanned.problems]
    assert [p.id for p in surveyed.problems] == ["1", "1001"]
    assert [str(error) for error in surveyed.errors] == [str(error) for error in scanned.errors]
    assert len(surveyed.errors) == 6  # 2999 has no label row


def test_side_folders_are_detected_with_labels_and_read_by_path(
    tmp_path: Path, labels: Path, root: Path
) -> None:
    upstream_folders(root, [1, 1001])
    assert RwrPlusLoader.detect(root)
    assert open_dataset(f"{FORMAT}:{root}").problem_ids() == ["1", "1001"]
    bare = tmp_path / "no-labels"
    upstream_folders(bare, [1])
    assert not RwrPlusLoader.detect(bare)


def test_side_folders_with_fewer_panels_and_png(data_dir: Path, root: Path, labels: Path) -> None:
    upstream_folders(root, [2], per_side=3, suffix=".PNG")
    problem = open_dataset(FORMAT, data_dir).problem("2")
    assert problem.panels_per_side == 3
    assert [p.path.name for p in problem.test_panels] == ["3.PNG", "3.PNG"]


def test_layout_option_chooses_between_manifest_and_folders(data_dir: Path, root: Path, labels: Path) -> None:
    write_manifest(root, [make_problem(root, 1)])
    upstream_folders(root, [2, 3])
    assert open_dataset(FORMAT, data_dir).problem_ids() == ["1"]
    assert open_dataset(FORMAT, data_dir, {"layout": "folders"}).problem_ids() == ["2", "3"]
    (root / "dataset.json").unlink()
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, {"layout": "manifest"}).problem_ids()
    assert_located(
        caught.value, dataset=FORMAT, problem_id=None, path=root / "dataset.json", reason="file is missing"
    )


def scan_with_bad_folder(root: Path, data_dir: Path) -> DatasetError:
    """Folders 1, 2 (to be damaged by the test), 3: the scan keeps 1 and 3."""
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["1", "3"]
    assert len(scan.errors) == 1
    return scan.errors[0]


@pytest.fixture
def folders(root: Path, labels: Path) -> Path:
    upstream_folders(root, [1, 2, 3])
    return root / "2"


def test_side_folder_with_a_gap_is_refused(data_dir: Path, root: Path, folders: Path) -> None:
    (folders / "left" / "4.jpg").unlink()
    error = scan_with_bad_folder(root, data_dir)
    assert_located(error, dataset=FORMAT, problem_id="2", path=folders / "left", reason="no image numbered 4")


def test_two_images_with_one_number_are_refused(data_dir: Path, root: Path, folders: Path) -> None:
    make_image(folders / "right" / "3.png", (0, 0, 0))
    error = scan_with_bad_folder(root, data_dir)
    assert_located(
        error, dataset=FORMAT, problem_id="2", path=folders / "right", reason="two images numbered 3"
    )
    assert "3.jpg, 3.png" in error.reason


def test_missing_side_folder_is_refused(data_dir: Path, root: Path, folders: Path) -> None:
    for image in (folders / "right").iterdir():
        image.unlink()
    (folders / "right").rmdir()
    error = scan_with_bad_folder(root, data_dir)
    assert_located(
        error, dataset=FORMAT, problem_id="2", path=folders / "right", reason="missing folder right/"
    )


def test_side_with_one_image_is_refused(data_dir: Path, root: Path, folders: Path) -> None:
    for index in range(1, 7):
        (folders / "left" / f"{index}.jpg").unlink()
    error = scan_with_bad_folder(root, data_dir)
    assert_located(error, dataset=FORMAT, problem_id="2", path=folders / "left", reason="1 numbered image(s)")


def test_sides_of_unequal_length_are_refused(data_dir: Path, root: Path, folders: Path) -> None:
    (folders / "right" / "6.jpg").unlink()
    error = scan_with_bad_folder(root, data_dir)
    assert_located(error, dataset=FORMAT, problem_id="2", path=folders, reason="7 left but 6 right images")


def test_corrupt_image_in_a_side_folder_is_named_by_validation(
    data_dir: Path, root: Path, folders: Path
) -> None:
    broken = folders / "left" / "2.jpg"
    broken.write_bytes(b"not a jpeg")
    scan = open_dataset(FORMAT, data_dir).scan(open_images=True)
    assert [p.id for p in scan.problems] == ["1", "3"]
    assert_located(scan.errors[0], dataset=FORMAT, problem_id="2", path=broken, reason="not an image")


def test_side_folder_without_a_label_row_is_located(data_dir: Path, root: Path, labels: Path) -> None:
    upstream_folders(root, [1, 1005])
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["1"]
    assert_located(scan.errors[0], dataset=FORMAT, problem_id="1005", path=labels, reason="no label row 4")


def test_folder_layout_ships_no_sheets(data_dir: Path, root: Path, labels: Path) -> None:
    upstream_folders(root, [1])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, {"sheet": "shipped"}).problem("1")
    assert_located(caught.value, dataset=FORMAT, problem_id="1", path=root / "1", reason="ships no sheets")


@pytest.mark.parametrize("options", [{"layout": "zip"}, {"sheet": "whole"}])
def test_bad_layout_or_sheet_option_is_refused(
    data_dir: Path, root: Path, labels: Path, options: dict[str, str]
) -> None:
    write_manifest(root, [make_problem(root, 1)])
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, options)
    assert "bad option" in caught.value.reason
    assert next(iter(options)) in caught.value.reason


def test_shipped_sheet_is_the_sheet_a_strategy_sends(data_dir: Path, root: Path, labels: Path) -> None:
    upstream_manifest(root)
    sheet = root / "wholes" / "1001.jpeg"
    make_image(sheet, (200, 40, 40), size=(1024, 758))  # upstream sheets are 1024 px wide
    problem = open_dataset(FORMAT, data_dir, {"sheet": "shipped"}).problem("1001")
    with Image.open(sheet) as shipped:
        expected = shipped.convert("RGB")
    assert render_sheet(problem).tobytes() == expected.tobytes()
    grey = render_sheet(problem, "grey")
    assert (grey.mode, grey.size) == ("L", (1024, 758))
    assert render_sheet(problem, max_side=512).size == (512, 379)
    with pytest.raises(DatasetError) as caught:
        render_sheet(problem, "square")
    assert_located(caught.value, dataset=FORMAT, problem_id="1001", path=sheet, reason="no square variant")
    rendered = open_dataset(FORMAT, data_dir).problem("1001")
    assert render_sheet(rendered).size != expected.size
