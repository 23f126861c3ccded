"""`bongard datasets` as a user runs it: a real process, its exit code, stdout and stderr."""

from __future__ import annotations

import re
from pathlib import Path

from PIL import Image

from tests.builders import copy_classic_subset
from tests.cli import run_bongard
from tests.rwr_plus_releases import upstream_manifest

bongard = run_bongard


def test_list_shows_both_real_datasets_with_counts(shared_data: Path) -> None:
    result = bongard("datasets", "list", "--data-dir", shared_data)
    assert result.returncode == 0, result.stderr
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert re.search(r"│ bongard-classic\s+│ 100\s+│ 6\s+│ none\s+│ 100/100", rows["bongard-classic"])
    assert re.search(r"│ bongard-rwr\s+│ 60\s+│ 6\s+│ 2\s+│ 60/60", rows["bongard-rwr"])


def test_data_dir_comes_from_the_environment(shared_data: Path) -> None:
    result = bongard("datasets", "list", env={"BONGARD_DATA": str(shared_data)})
    assert result.returncode == 0 and "bongard-rwr" in result.stdout


def test_validate_passes_on_the_real_datasets(shared_data: Path) -> None:
    for name, count in (("bongard-classic", 100), ("bongard-rwr", 60)):
        result = bongard("datasets", "validate", name, "--data-dir", shared_data)
        assert result.returncode == 0, result.stderr
        assert f"all {count} problems usable" in result.stdout


def test_show_writes_the_same_sheet_twice(shared_data: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    for out in (first, second):
        result = bongard("datasets", "show", "bongard-rwr", "31", "--out", out, "--data-dir", shared_data)
        assert result.returncode == 0, result.stderr
    assert "6 + 6 context panels, 2 test images" in result.stdout
    assert "left:  One line" in result.stdout
    assert first.read_bytes() == second.read_bytes()
    assert Image.open(first).width <= 1024


def test_show_with_loader_option_and_test_strip(shared_data: Path, tmp_path: Path) -> None:
    strip = tmp_path / "tests.png"
    result = bongard(
        "datasets",
        "show",
        "bongard-classic",
        "8",
        "--out",
        tmp_path / "s.png",
        "--tests-out",
        strip,
        "--variant",
        "square-grey",
        "-O",
        "holdout_test=true",
        "--data-dir",
        shared_data,
    )
    assert result.returncode == 0, result.stderr
    assert "5 + 5 context panels, 2 test images" in result.stdout
    assert "left-test-5, right-test-5" in result.stdout
    assert Image.open(tmp_path / "s.png").mode == "L" and strip.is_file()


def test_damaged_data_is_skipped_when_listing_and_fails_validation(shared_data: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    copy_classic_subset(shared_data, data / "bongard-classic", [1, 2, 3])
    (data / "bongard-classic" / "002" / "4.png").unlink()
    (data / "bongard-classic" / "003" / "9.png").write_bytes(b"")

    listed = bongard("datasets", "list", "--data-dir", data)
    assert listed.returncode == 0
    assert "warning: skipped dataset bongard-classic, problem 2, file" in listed.stderr
    assert "bongard-classic: 1 problems skipped" in listed.stderr
    assert re.search(r"│ bongard-classic\s+│ 2\s+│", listed.stdout)

    validated = bongard("datasets", "validate", "bongard-classic", "--data-dir", data)
    assert validated.returncode == 1
    assert "problem 2, file" in validated.stderr and "missing image 4" in validated.stderr
    assert f"problem 3, file {data / 'bongard-classic' / '003' / '9.png'}" in validated.stderr
    assert "2 of 3 problems unusable" in validated.stdout


def test_a_dataset_with_no_usable_problem_says_why_under_the_table(tmp_path: Path) -> None:
    """Bongard-RWR+ folders whose labels.csv is nowhere: the table's 0 comes with its reason."""
    data = tmp_path / "data"
    upstream_manifest(data / "bongard-rwr-plus")
    listed = bongard("datasets", "list", "--data-dir", data)
    assert listed.returncode == 0
    assert re.search(r"│ bongard-rwr-plus\s+│ bongard-rwr-plus\s+│ 0\s+│", listed.stdout)
    labels = data / "bongard-rwr-plus" / "labels.csv"
    why = f"bongard-rwr-plus: 4 of 4 problems unusable; 4 of them: file is missing ({labels})"
    assert why in listed.stdout


def test_bad_names_end_in_one_clear_line(shared_data: Path, tmp_path: Path) -> None:
    unknown = bongard("datasets", "show", "nope", "1", "--out", tmp_path / "x.png", "--data-dir", shared_data)
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("error: no dataset 'nope'") and "bongard-classic" in unknown.stderr
    no_problem = bongard(
        "datasets", "show", "bongard-rwr", "12", "--out", tmp_path / "x.png", "--data-dir", shared_data
    )
    assert no_problem.returncode == 2 and "no problem '12'" in no_problem.stderr
    bad_option = bongard(
        "datasets", "validate", "bongard-classic", "-O", "holdout_test=maybe", "--data-dir", shared_data
    )
    assert bad_option.returncode == 2 and "bad option for format bongard-classic" in bad_option.stderr


def test_without_a_data_dir_the_shared_data_beside_the_checkout_is_found(
    shared_data: Path, tmp_path: Path
) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data, target_is_directory=True)
    result = run_bongard(
        "datasets", "show", "bongard-rwr", "31", "--out", "x.png", cwd=checkout, env={"BONGARD_DATA": ""}
    )
    assert result.returncode == 0, result.stderr
    assert (checkout / "x.png").is_file()
