"""The Bongard-LOGO loader on problem folders built here in the released (ShapeBongard_V2) layout.

Folders, task names, the split file and the action programs copy upstream's structure, never
its data: every image is drawn here and every task name and program is made up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.errors import DatasetError
from datasets_io.problem import BongardProblem, Concept, Panel
from tests.assertions import assert_located
from tests.builders import make_image
from tests.cli import run_bongard
from tests.logo_releases import FOUR_STROKES, make_task, programs_for, task_folder, write_json

FORMAT = "bongard-logo"
FF = "ff_nact4_0007"
FF_TWO = "ff_nact2_3_0001"
BD = "bd_thin_rectangle-quarter_moon_0000"
HD = "hd_has_acute_angle-exist_sector_0003"
SPLIT_FILE = "ShapeBongard_V2_split.json"


# --- correct problems ---------------------------------------------------------------------------


def test_positives_are_left_negatives_right_and_image_6_is_the_test(data_dir: Path, root: Path) -> None:
    folder = make_task(root, FF)
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.format_name == FORMAT
    problem = dataset.problem(FF)
    assert problem.key == f"{FORMAT}/{FF}"
    assert problem.left == [Panel(path=folder / "1" / f"{n}.png", side="left", index=n) for n in range(6)]
    assert problem.right == [Panel(path=folder / "0" / f"{n}.png", side="right", index=n) for n in range(6)]
    assert problem.test_left == [Panel(path=folder / "1" / "6.png", side="left", index=6, role="test")]
    assert problem.test_right == [Panel(path=folder / "0" / "6.png", side="right", index=6, role="test")]
    assert problem.panels_per_side == 6
    assert problem.metadata == {"problem_type": "ff", "problem_type_name": "free-form", "strokes": [4]}


def test_ids_list_free_form_then_basic_then_abstract_tasks(data_dir: Path, root: Path) -> None:
    for task in (HD, BD, FF_TWO, FF, "bd_square_0001"):
        make_task(root, task)
    (root / "ff" / "images" / ".hidden").mkdir()
    assert open_dataset(FORMAT, data_dir).problem_ids() == [FF_TWO, FF, "bd_square_0001", BD, HD]


@pytest.mark.parametrize(
    ("task", "concept", "parts"),
    [
        (FF, "the same free-form shape drawn in 4 strokes", {"strokes": [4]}),
        (FF_TWO, "the same two free-form shapes, drawn in 2 and 3 strokes", {"strokes": [2, 3]}),
        (BD, "thin rectangle and quarter moon", {"shapes": ["thin_rectangle", "quarter_moon"]}),
        ("bd_acute_traingle_0002", "acute triangle", {"shapes": ["acute_traingle"]}),
        (HD, "shapes that have an acute angle and contain a sector",
         {"attributes": ["has_acute_angle", "exist_sector"]}),
        ("hd_convex_0000", "shapes that are convex", {"attributes": ["convex"]}),
        ("hd_has_five_straight_lines_0001", "shapes that have five straight lines",
         {"attributes": ["has_five_straight_lines"]}),
        ("hd_necked-symmetric_0002", "shapes that have a neck and are symmetric",
         {"attributes": ["necked", "symmetric"]}),
    ],
)  # fmt: skip
def test_concepts_are_written_from_task_names(
    data_dir: Path, root: Path, task: str, concept: str, parts: dict[str, list[object]]
) -> None:
    make_task(root, task)
    problem = open_dataset(FORMAT, data_dir).problem(task)
    assert problem.concept == Concept(left=concept, right=None)
    assert problem.concept.stated_right == f"NOT {concept}"
    assert {k: v for k, v in problem.metadata.items() if not k.startswith("problem_type")} == parts


def test_a_task_name_stating_no_concept_loads_without_one(data_dir: Path, root: Path) -> None:
    make_task(root, "ff_mine")
    problem = open_dataset(FORMAT, data_dir).problem("ff_mine")
    assert problem.concept is None
    assert problem.metadata == {"problem_type": "ff", "problem_type_name": "free-form"}


def test_free_form_concept_names_the_strokes_of_the_action_program(data_dir: Path, root: Path) -> None:
    make_task(root, FF)
    make_task(root, FF_TWO)
    make_task(root, "ff_nact5_0002")
    two_shapes = [["line_normal_1.000-0.500", "arc_square_0.500_0.875-0.500"], FOUR_STROKES[:3]]
    write_json(
        root / "ff" / "ff_action_programs.json",
        {FF: programs_for([FOUR_STROKES]), FF_TWO: programs_for(two_shapes)},
    )
    dataset = open_dataset(FORMAT, data_dir)
    assert dataset.problem(FF).concept == Concept(
        left="the same free-form shape drawn in 4 strokes: plain line; turn left 90°, zigzag line; "
        "turn right 90°, circle-studded arc of 90°; turn left 120°, triangle-studded line"
    )
    assert dataset.problem(FF_TWO).concept == Concept(
        left="the same two free-form shapes, one in 2 strokes (plain line; square-studded arc of 270°), "
        "one in 3 strokes (plain line; turn left 90°, zigzag line; turn right 90°, circle-studded arc of 90°)"
    )
    # A task the programs file does not cover keeps the concept its name states.
    assert dataset.problem("ff_nact5_0002").concept == Concept(
        left="the same free-form shape drawn in 5 strokes"
    )


def test_test_image_option_chooses_each_side_s_test_panel(data_dir: Path, root: Path) -> None:
    folder = make_task(root, BD)
    problem = open_dataset(FORMAT, data_dir, {"test_image": "0"}).problem(BD)
    assert [p.index for p in problem.left] == [1, 2, 3, 4, 5, 6]
    assert [p.index for p in problem.right] == [1, 2, 3, 4, 5, 6]
    assert problem.test_left == [Panel(path=folder / "1" / "0.png", side="left", index=0, role="test")]
    assert [p.ref for p in problem.test_panels] == ["left-test-0", "right-test-0"]


def test_split_option_reads_the_tasks_of_one_split(data_dir: Path, root: Path) -> None:
    for task in (FF, FF_TWO, BD, HD):
        make_task(root, task)
    write_json(root / SPLIT_FILE, {"test_ff": [FF, FF_TWO], "test_bd": [BD], "train": [HD, FF, BD]})
    assert open_dataset(FORMAT, data_dir, {"split": "test_ff"}).problem_ids() == [FF_TWO, FF]
    assert open_dataset(FORMAT, data_dir, {"split": "train"}).problem_ids() == [BD, FF, HD]
    train_hd = open_dataset(FORMAT, data_dir, {"split": "train", "types": "hd"})
    assert train_hd.problem_ids() == [HD]
    assert open_dataset(FORMAT, data_dir, {"types": "bd, hd"}).problem_ids() == [BD, HD]


def test_split_file_option_reads_a_split_file_elsewhere(data_dir: Path, root: Path, tmp_path: Path) -> None:
    make_task(root, BD)
    split_file = write_json(tmp_path / "my_split.json", {"mine": [BD]})
    dataset = open_dataset(FORMAT, data_dir, {"split": "mine", "split_file": str(split_file)})
    assert dataset.problem_ids() == [BD]


def test_format_is_detected_when_folder_name_is_no_format(data_dir: Path) -> None:
    root = data_dir / "ShapeBongard_V2"
    make_task(root, HD)
    dataset = open_dataset("ShapeBongard_V2", data_dir)
    assert dataset.format_name == FORMAT
    assert dataset.problem(HD).dataset == "ShapeBongard_V2"
    by_path = open_dataset(f"{FORMAT}:{root}")
    assert by_path.problem_ids() == [HD]


def test_problem_round_trips_through_json(data_dir: Path, root: Path) -> None:
    make_task(root, HD)
    problem = open_dataset(FORMAT, data_dir).problem(HD)
    assert BongardProblem.model_validate_json(problem.model_dump_json()) == problem


# --- the whole dataset unusable -----------------------------------------------------------------


def test_folder_without_problem_type_folders_is_refused(data_dir: Path, root: Path) -> None:
    (root / "images").mkdir(parents=True)
    with pytest.raises(DatasetError) as caught:
        open_dataset(f"{FORMAT}:{root}").problem_ids()
    assert_located(caught.value, dataset=FORMAT, problem_id=None, path=root, reason="no problem folders")


def test_missing_split_file_is_named(data_dir: Path, root: Path) -> None:
    make_task(root, FF)
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, {"split": "test_ff"}).problem_ids()
    assert_located(caught.value, dataset=FORMAT, problem_id=None, path=root / SPLIT_FILE, reason="missing")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"test_ff": [', "malformed JSON"),
        ('["ff_nact4_0007"]', "JSON object"),
        ('{"train": []}', "no split 'test_ff' (splits: train)"),
        ('{"test_ff": "ff_nact4_0007"}', "not a list of task names"),
        ('{"test_ff": [7]}', "not a list of task names"),
    ],
)
def test_bad_split_file_is_named(data_dir: Path, root: Path, content: str, reason: str) -> None:
    make_task(root, FF)
    (root / SPLIT_FILE).write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, {"split": "test_ff"}).problem_ids()
    assert_located(caught.value, dataset=FORMAT, problem_id=None, path=root / SPLIT_FILE, reason=reason)


# --- one bad problem among good ones ------------------------------------------------------------


def scan_with_bad_task(root: Path, data_dir: Path, bad: str) -> DatasetError:
    """Tasks before and after the bad one load; the bad one is named."""
    make_task(root, "bd_first_0000")
    make_task(root, "bd_zeta_0000")
    scan = open_dataset(FORMAT, data_dir).scan(open_images=True)
    assert [p.id for p in scan.problems] == ["bd_first_0000", "bd_zeta_0000"]
    assert len(scan.errors) == 1
    return scan.errors[0]


def test_missing_image_is_named(data_dir: Path, root: Path) -> None:
    folder = make_task(root, "bd_middle_0000")
    (folder / "0" / "3.png").rename(folder / "0" / "9.png")  # still 7 images, but no 3
    error = scan_with_bad_task(root, data_dir, "bd_middle_0000")
    assert_located(
        error, dataset=FORMAT, problem_id="bd_middle_0000", path=folder / "0", reason="missing image 3"
    )


@pytest.mark.parametrize(("label", "change", "count"), [("1", "remove", 6), ("0", "add", 8)])
def test_wrong_number_of_images_is_named(
    data_dir: Path, root: Path, label: str, change: str, count: int
) -> None:
    folder = make_task(root, "bd_middle_0000")
    if change == "remove":
        (folder / label / "6.png").unlink()
    else:
        make_image(folder / label / "7.png", (1, 2, 3))
    error = scan_with_bad_task(root, data_dir, "bd_middle_0000")
    role = "positive" if label == "1" else "negative"
    reason = f"{count} {role} images in {label}/, expected 7"
    assert_located(error, dataset=FORMAT, problem_id="bd_middle_0000", path=folder / label, reason=reason)


def test_missing_side_folder_is_named(data_dir: Path, root: Path) -> None:
    folder = make_task(root, "bd_middle_0000")
    for image in (folder / "0").iterdir():
        image.unlink()
    (folder / "0").rmdir()
    error = scan_with_bad_task(root, data_dir, "bd_middle_0000")
    reason = "missing the 0/ folder of negative images"
    assert_located(error, dataset=FORMAT, problem_id="bd_middle_0000", path=folder / "0", reason=reason)


def test_image_that_is_no_image_fails_validation(data_dir: Path, root: Path) -> None:
    folder = make_task(root, "bd_middle_0000")
    (folder / "1" / "2.png").write_bytes(b"\x89PNG truncated")
    error = scan_with_bad_task(root, data_dir, "bd_middle_0000")
    assert_located(error, dataset=FORMAT, problem_id="bd_middle_0000", path=folder / "1" / "2.png", reason="")
    assert "corrupt" in error.reason or "not an image" in error.reason


def test_split_naming_a_missing_or_untyped_task_is_named(data_dir: Path, root: Path) -> None:
    make_task(root, FF)
    write_json(root / SPLIT_FILE, {"test": [FF, "ff_nact9_0999", "xx_nact4_0001"]})
    scan = open_dataset(FORMAT, data_dir, {"split": "test"}).scan()
    assert [p.id for p in scan.problems] == [FF]
    missing, untyped = scan.errors
    folder = task_folder(root, "ff_nact9_0999")
    assert_located(
        missing, dataset=FORMAT, problem_id="ff_nact9_0999", path=folder, reason="problem folder is missing"
    )
    assert_located(
        untyped, dataset=FORMAT, problem_id="xx_nact4_0001", path=None, reason="does not start with ff_"
    )


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("line_normal_0.5-0.5", "expected [positive programs, negative programs]"),
        ([[], []], "positives"),
        ([[[["line_normal_0.5-0.5"]]]], "expected [positive programs, negative programs]"),
        ([[[[17]]], []], "positives.0.0.0"),
        ([[[["line_normal-0.5"]]], []], "unreadable action 'line_normal-0.5'"),
        ([[[["spiral_normal_0.5-0.5"]]], []], "unreadable action"),
        ([[[["line_normal_0.5-left"]]], []], "left"),
    ],
)
def test_malformed_action_program_is_named(data_dir: Path, root: Path, entry: object, reason: str) -> None:
    make_task(root, FF)
    make_task(root, "ff_nact4_0008")
    programs = write_json(
        root / "ff" / "ff_action_programs.json", {FF: entry, "ff_nact4_0008": programs_for([FOUR_STROKES])}
    )
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == ["ff_nact4_0008"]
    assert len(scan.errors) == 1
    assert_located(
        scan.errors[0], dataset=FORMAT, problem_id=FF, path=programs, reason="malformed action program"
    )
    assert reason in scan.errors[0].reason


def test_programs_file_that_is_no_object_is_named(data_dir: Path, root: Path) -> None:
    make_task(root, FF)
    make_task(root, BD)
    programs = write_json(root / "ff" / "ff_action_programs.json", [FOUR_STROKES])
    scan = open_dataset(FORMAT, data_dir).scan()
    assert [p.id for p in scan.problems] == [BD]  # only free-form concepts read the programs
    assert_located(scan.errors[0], dataset=FORMAT, problem_id=FF, path=programs, reason="JSON object")


@pytest.mark.parametrize(
    "options", [{"types": "ff,xx"}, {"types": ""}, {"test_image": "7"}, {"test_image": "-1"}, {"splits": "x"}]
)
def test_bad_option_is_refused(data_dir: Path, root: Path, options: dict[str, str]) -> None:
    make_task(root, FF)
    with pytest.raises(DatasetError) as caught:
        open_dataset(FORMAT, data_dir, options)
    assert "bad option" in caught.value.reason
    assert next(iter(options)) in caught.value.reason


# --- the commands ---------------------------------------------------------------------------------


def test_datasets_list_show_and_validate(data_dir: Path, root: Path, tmp_path: Path) -> None:
    for task in (FF, BD, HD):
        make_task(root, task)
    make_task(root, "ff_mine")  # loads, without a concept
    listed = run_bongard("datasets", "list", "--data-dir", data_dir)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if FORMAT in line)
    assert [cell.strip() for cell in row.split("│")[2:7]] == [FORMAT, "4", "6", "2", "3/4"]

    sheet, tests = tmp_path / "sheet.png", tmp_path / "tests.png"
    shown = run_bongard(
        "datasets", "show", FORMAT, HD, "--out", sheet, "--tests-out", tests, "--data-dir", data_dir
    )
    assert shown.returncode == 0, shown.stderr
    assert "left:  shapes that have an acute angle and contain a sector" in shown.stdout
    assert "left-test-6, right-test-6" in shown.stdout
    assert sheet.is_file() and tests.is_file()

    assert run_bongard("datasets", "validate", FORMAT, "--data-dir", data_dir).returncode == 0
    (task_folder(root, BD) / "0" / "5.png").write_bytes(b"")
    damaged = run_bongard("datasets", "validate", FORMAT, "--data-dir", data_dir)
    assert damaged.returncode == 1
    assert BD in damaged.stderr and "1 of 4 problems unusable" in damaged.stdout


SHAPE_TABLE = (
    "shape function name\tshape name\tsuper class\tset of base actions\tturn angles\n"
    "closed_circle\tround loop\tarc\tarc_0.5_360.0\tL0\n"
    "thin_rectangle\tslim box\tquadrangle\tline_1.0, line_0.2\tL0--L90.0\n"
)
"""The layout of the authors' `data/human_designed_shapes.tsv` (its columns), with made-up names."""


def test_basic_shape_concepts_take_the_display_names_of_the_authors_table(
    data_dir: Path, root: Path, tmp_path: Path
) -> None:
    """With `-O shapes=CHECKOUT` a shape is named as the authors' table names it; a shape the table
    lacks is read aloud from its function name, as without the table."""
    make_task(root, "bd_closed_circle-thin_rectangle_0000")
    make_task(root, "bd_quarter_moon_0001")
    checkout = tmp_path / "Bongard-LOGO"
    (checkout / "data").mkdir(parents=True)
    (checkout / "data" / "human_designed_shapes.tsv").write_text(SHAPE_TABLE, encoding="utf-8")
    plain = open_dataset(FORMAT, data_dir).problem("bd_closed_circle-thin_rectangle_0000")
    assert plain.concept == Concept(left="closed circle and thin rectangle")
    for given in (checkout, checkout / "data", checkout / "data" / "human_designed_shapes.tsv"):
        named = open_dataset(FORMAT, data_dir, {"shapes": str(given)})
        assert named.problem("bd_closed_circle-thin_rectangle_0000").concept == Concept(
            left="round loop and slim box"
        )
        assert named.problem("bd_quarter_moon_0001").concept == Concept(left="quarter moon")
    with pytest.raises(DatasetError, match="the shape table is missing"):
        open_dataset(FORMAT, data_dir, {"shapes": str(tmp_path / "nowhere.tsv")}).problem(
            "bd_quarter_moon_0001"
        )
