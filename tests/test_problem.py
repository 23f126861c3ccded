"""The problem model: validation rules and exact JSON round trips."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from datasets_io.problem import BongardProblem, Concept, Panel, PanelRole, Side
from tests.builders import make_image


def panels(root: Path, side: Side, count: int, role: PanelRole = "context", start: int = 0) -> list[Panel]:
    return [
        Panel(
            path=make_image(root / f"{side}-{role}-{i}.png", (200, 200, 200)),
            side=side,
            index=i,
            role=role,
        )
        for i in range(start, start + count)
    ]


def problem_fields(root: Path, per_side: int = 6) -> dict[str, object]:
    return {
        "dataset": "unit",
        "id": "1",
        "left": panels(root, "left", per_side),
        "right": panels(root, "right", per_side),
        "test_left": panels(root, "left", 1, "test", start=per_side),
        "test_right": panels(root, "right", 1, "test", start=per_side),
        "concept": Concept(left="a circle", right="no circle"),
        "concept_group": "Shape",
        "metadata": {"source": "generated", "ids": [1, 2]},
    }


def test_json_round_trip_is_exact(tmp_path: Path) -> None:
    problem = BongardProblem.model_validate(problem_fields(tmp_path))
    restored = BongardProblem.model_validate_json(problem.model_dump_json())
    assert restored == problem
    assert [p.ref for p in restored.all_panels][-2:] == ["left-test-6", "right-test-6"]
    assert restored.key == "unit/1"


def test_six_context_panels_per_side_by_default(tmp_path: Path) -> None:
    fields = problem_fields(tmp_path)
    fields["right"] = panels(tmp_path, "right", 5)
    with pytest.raises(ValidationError, match="right side has 5 context panels, expected 6"):
        BongardProblem.model_validate(fields)


def test_a_variant_sets_the_panel_count(tmp_path: Path) -> None:
    fields = problem_fields(tmp_path, per_side=3)
    problem = BongardProblem.model_validate({**fields, "panels_per_side": 3})
    assert len(problem.context_panels) == 6


def test_panel_must_sit_in_the_list_of_its_side_and_role(tmp_path: Path) -> None:
    fields = problem_fields(tmp_path)
    fields["test_left"] = panels(tmp_path, "right", 1, "test", start=6)
    with pytest.raises(ValidationError, match="right-test-6 is listed among the left test panels"):
        BongardProblem.model_validate(fields)


def test_duplicate_panels_are_refused(tmp_path: Path) -> None:
    fields = problem_fields(tmp_path)
    left = panels(tmp_path, "left", 6)
    fields["left"] = [*left[:5], left[0]]
    with pytest.raises(ValidationError, match="duplicate panels: left-0"):
        BongardProblem.model_validate(fields)


def test_missing_image_files_are_refused_unless_the_context_says_not_to_check(
    tmp_path: Path,
) -> None:
    fields = problem_fields(tmp_path)
    missing = tmp_path / "gone.png"
    fields["left"] = [Panel(path=missing, side="left", index=0), *panels(tmp_path, "left", 6)[1:]]
    with pytest.raises(ValidationError, match=r"panel left-0: no image file at .*gone\.png"):
        BongardProblem.model_validate(fields)
    problem = BongardProblem.model_validate(fields, context={"check_paths": False})
    assert problem.left[0].path == missing


def test_empty_left_rule_is_refused() -> None:
    with pytest.raises(ValidationError):
        Concept(left="")
