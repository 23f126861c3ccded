"""The Bongard-RWR+ concept groups file: its entries agree with the classic rules and the paper."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from datasets_io.concept_groups import CONCEPT_GROUPS, check_group, known_groups

# Checked by hand against the paper: Tables 14 and 15 (concept group, left rule, right rule) and
# App. C.10 (concepts #76, #17, #3), matched to bp_solutions.json by rule text.
PAPER_GROUPS = {
    "1": "Count",  # Empty picture | Not empty picture (Table 14)
    "2": "Size",  # Large figures | Small figures (Tables 14, 15)
    "3": "Contour",  # #3 Outline figures | Solid figures (C.10)
    "4": "Angle",  # Convex figures | Nonconvex figures (Table 14)
    "5": "Shape",  # Polygons | Curvilinear figures (Table 15)
    "14": "Contour",  # Large total line length | Small total line length (Table 15)
    "17": "Rotation",  # An acute angle directed inward | No angle directed inward (Table 14, C.10)
    "23": "Count",  # One figure | Two figures (Tables 14, 15)
    "24": "Shape",  # A circle | No circle (Table 14)
    "32": "Angle",  # A sharp projection | No sharp projection (Table 14)
    "33": "Angle",  # Acute angle | No acute angle (Table 14)
    "38": "Size",  # Triangle larger than circle | Triangle smaller than circle (Table 15)
    "42": "Position",  # Points inside the figure outline are (not) on a straight line (Table 14)
    "47": "Position",  # Triangle inside of the circle | Circle inside of the triangle (Tables 14, 15)
    "50": "Position",  # Axes of symmetry | No axes of symmetry (Table 14)
    "56": "Similarity",  # All figures of the same color | Figures of different colors (Tables 14, 15)
    "59": "Similarity",  # Figures are similar | Figures are not similar (Table 14)
    "63": "Contour",  # Shading thicker on the right side | ... left side (Table 14)
    "70": "Branching",  # There are no side branches of the second order | ... are ... (Table 14)
    "76": "Angle",  # #76 Long sides concave | Long sides convex (C.10)
    "86": "Count",  # Three parts | Five parts (Tables 14, 15)
    "88": "Count",  # Three parts | Five parts (Tables 14, 15)
    "90": "Count",  # Three parts | Four parts (Tables 14, 15)
    "91": "Similarity",  # Three identical elements | Four identical elements (Tables 14, 15)
    "92": "Branching",  # The chain does not branch | The chain branches (Table 14)
    "97": "Shape",  # Triangles | Circles (Tables 14, 15)
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    text = files("datasets_io").joinpath("data", "concept_groups.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@pytest.fixture(scope="module")
def solutions(shared_data: Path) -> dict[str, list[str]]:
    path = shared_data / "bongard-classic" / "bp_solutions.json"
    loaded: dict[str, list[str]] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def test_the_nine_groups_in_the_papers_order(document: dict[str, Any]) -> None:
    assert CONCEPT_GROUPS == (
        "Size",
        "Position",
        "Count",
        "Branching",
        "Similarity",
        "Contour",
        "Shape",
        "Rotation",
        "Angle",
    )
    assert tuple(document["groups"]) == CONCEPT_GROUPS
    assert "partial" in document["_about"].lower()


def test_every_entry_has_one_of_the_nine_groups(document: dict[str, Any]) -> None:
    problems = document["problems"]
    assert problems
    for number, entry in problems.items():
        assert entry["group"] in CONCEPT_GROUPS, number
        assert entry["source"], number
        assert entry["match"] == "exact" or entry["match"].startswith(("exact in ", "wording: ")), number


def test_numbers_are_classic_problems_in_numeric_order(document: dict[str, Any]) -> None:
    numbers = list(document["problems"])
    assert all(number.isdigit() and 1 <= int(number) <= 100 for number in numbers)
    assert numbers == sorted(numbers, key=int)


def test_rules_are_the_classic_rules(document: dict[str, Any], solutions: dict[str, list[str]]) -> None:
    for number, entry in document["problems"].items():
        assert [entry["left"], entry["right"]] == solutions[number], number


def test_every_grouped_problem_is_a_bongard_rwr_problem(document: dict[str, Any], shared_data: Path) -> None:
    rwr = {path.name for path in (shared_data / "bongard-rwr").iterdir() if path.is_dir()}
    assert set(document["problems"]) <= rwr


def test_the_pairs_matched_by_hand_are_present() -> None:
    groups = known_groups()
    assert {number: groups.get(number) for number in PAPER_GROUPS} == PAPER_GROUPS
    assert set(groups) == set(PAPER_GROUPS)


def test_a_few_pairs_word_for_word(solutions: dict[str, list[str]]) -> None:
    groups = known_groups()
    assert solutions["76"] == ["Long sides concave", "Long sides convex"] and groups["76"] == "Angle"
    assert solutions["3"] == ["Outline figures", "Solid figures"] and groups["3"] == "Contour"
    assert solutions["17"] == ["An acute angle directed inward", "No angle directed inward"]
    assert groups["17"] == "Rotation"
    assert solutions["63"] == ["Shading thicker on the right side", "Shading thicker on the left side"]
    assert groups["63"] == "Contour"
    assert solutions["97"] == ["Triangles", "Circles"] and groups["97"] == "Shape"


def test_the_paper_groups_no_triangles_versus_quadrangles() -> None:
    # Classic 6, 10, 96 and 98 share "Triangles | Quadrangles", which the paper never ties to a group.
    assert not {"6", "10", "96", "98"} & set(known_groups())


def test_known_groups_is_a_copy() -> None:
    first = known_groups()
    first["1"] = "Shape"
    first["999"] = "Size"
    assert known_groups()["1"] == "Count"
    assert "999" not in known_groups()


def test_check_group() -> None:
    assert check_group("angle") == "Angle"
    assert check_group("Angle") == "Angle"
    assert check_group(" BRANCHING ") == "Branching"
    assert [check_group(name.lower()) for name in CONCEPT_GROUPS] == list(CONCEPT_GROUPS)


@pytest.mark.parametrize("name", ["Colour", "", "Angles", "Orientation"])
def test_check_group_rejects_other_names(name: str) -> None:
    with pytest.raises(ValueError, match="Size, Position, Count, Branching") as raised:
        check_group(name)
    assert all(group in str(raised.value) for group in CONCEPT_GROUPS)
