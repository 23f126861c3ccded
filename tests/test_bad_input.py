"""Bad input on a copy of real classic problems: every fault is named, nothing else is lost."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from datasets_io.catalog import open_dataset
from datasets_io.errors import DatasetError
from datasets_io.images import open_image


def panel(classic_copy: Path, problem: int, number: int) -> Path:
    return classic_copy / "bongard-classic" / f"{problem:03d}" / f"{number}.png"


def remove(path: Path) -> None:
    path.unlink()


def empty(path: Path) -> None:
    path.write_bytes(b"")


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:200])


def not_an_image(path: Path) -> None:
    path.write_text("these are not pixels", encoding="utf-8")


def bomb(path: Path) -> None:
    Image.new("1", (8000, 8000)).save(path)  # 64 Mpx in a few kilobytes


@pytest.mark.parametrize(
    ("damage", "structural", "reason"),
    [
        (remove, True, "missing image 7"),
        (empty, False, "image file is empty"),
        (truncate, False, "corrupt or truncated"),
        (not_an_image, False, "not an image file"),
        (bomb, False, "over the limit of 40000000 .*decompression bomb"),
    ],
)
def test_damaged_panel_is_named_and_the_other_problems_survive(
    classic_copy: Path, damage: Callable[[Path], None], structural: bool, reason: str
) -> None:
    damage(panel(classic_copy, 2, 7))
    dataset = open_dataset("bongard-classic", classic_copy)
    scan = dataset.scan(open_images=True)
    assert [p.id for p in scan.problems] == ["1", "3"]
    [error] = scan.errors
    assert (error.dataset, error.problem_id) == ("bongard-classic", "2")
    expected_path = panel(classic_copy, 2, 7).parent if structural else panel(classic_copy, 2, 7)
    assert error.path == expected_path
    assert re.search(reason, error.reason)
    assert f"dataset bongard-classic, problem 2, file {expected_path}" in str(error)
    # A listing (no decoding) skips only structurally broken problems.
    assert len(dataset.scan().errors) == (1 if structural else 0)


def test_rules_file_without_an_entry_names_the_problem_and_file(classic_copy: Path) -> None:
    rules_path = classic_copy / "bongard-classic" / "bp_solutions.json"
    rules = json.loads(rules_path.read_text("utf-8"))
    del rules["3"]
    rules_path.write_text(json.dumps(rules), encoding="utf-8")
    scan = open_dataset("bongard-classic", classic_copy).scan()
    [error] = scan.errors
    assert (error.problem_id, error.path) == ("3", rules_path)
    assert "no entry for this problem" in error.reason
    assert [p.id for p in scan.problems] == ["1", "2"]


def test_malformed_rules_entry_is_named(classic_copy: Path) -> None:
    rules_path = classic_copy / "bongard-classic" / "bp_solutions.json"
    rules = json.loads(rules_path.read_text("utf-8"))
    rules["1"] = ["only one rule"]
    rules_path.write_text(json.dumps(rules), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"problem 1, file .*bp_solutions.json: malformed rules entry"):
        open_dataset("bongard-classic", classic_copy).problem("1")


def test_malformed_rules_json_names_the_file(classic_copy: Path) -> None:
    rules_path = classic_copy / "bongard-classic" / "bp_solutions.json"
    rules_path.write_text('{"1": ["a", "b"],', encoding="utf-8")
    scan = open_dataset("bongard-classic", classic_copy).scan()
    assert scan.problems == []
    assert {(e.path, e.dataset) for e in scan.errors} == {(rules_path, "bongard-classic")}
    assert all("malformed JSON" in e.reason for e in scan.errors)


def test_two_folders_for_one_problem_are_refused(classic_copy: Path) -> None:
    (classic_copy / "bongard-classic" / "2").mkdir()
    with pytest.raises(DatasetError, match="folders 002 and 2 are both 2"):
        open_dataset("bongard-classic", classic_copy).problem_ids()


def test_unknown_dataset_names_the_valid_choices(classic_copy: Path) -> None:
    with pytest.raises(DatasetError, match=r"no dataset 'classic' in .*datasets there: bongard-classic"):
        open_dataset("classic", classic_copy)


def test_transparent_images_are_flattened_onto_white(tmp_path: Path) -> None:
    path = tmp_path / "clear.png"
    Image.new("RGBA", (4, 4), (255, 0, 0, 0)).save(path)
    image = open_image(path)
    assert image.mode == "RGB" and image.getpixel((0, 0)) == (255, 255, 255)
