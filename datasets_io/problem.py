"""The pydantic models every room speaks: panels, concepts and Bongard problems.

Images are referenced by path and never embedded, so problems stay small, JSON
round-trips are exact and the agent layer decides how to encode pixels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationInfo, model_validator

Side = Literal["left", "right"]
SIDES: tuple[Side, Side] = ("left", "right")
PanelRole = Literal["context", "test"]
CONTEXT_PANELS_PER_SIDE = 6


class Panel(BaseModel):
    """One image of a problem: where it is, which side it belongs to, its place there.

    `index` is the image's position among all images of its side in the
    upstream layout, so a held-out test image keeps its original number.
    """

    model_config = ConfigDict(frozen=True)

    path: Path
    side: Side
    index: int = Field(ge=0)
    role: PanelRole = "context"

    @property
    def ref(self) -> str:
        """A short stable name used in traces: `left-3`, `right-test-6`."""
        middle = "-test" if self.role == "test" else ""
        return f"{self.side}{middle}-{self.index}"


class Concept(BaseModel):
    """The rule that holds on every left panel and the one that holds on every right panel.

    `right` is None where a dataset states no rule for the right side
    (Bongard-OpenWorld's negatives only lack the left concept).
    """

    model_config = ConfigDict(frozen=True)

    left: str = Field(min_length=1)
    right: str | None = None

    @property
    def stated_right(self) -> str:
        """The right rule as a prompt or a judge reads it: where a dataset states none, the
        negation of the left one, `NOT <left>`, as the case study writes Bongard-OpenWorld's."""
        return self.right if self.right is not None else f"NOT {self.left}"


class BongardProblem(BaseModel):
    """A Bongard problem: context panels per side, optional test panels, its concept.

    Validation checks the number of context panels (6 per side unless a variant
    sets `panels_per_side`), that panels sit in the list of their side and role,
    that panel references are unique and, unless the validation context says
    `{"check_paths": False}`, that every image file exists.
    """

    dataset: str = Field(min_length=1)
    id: str = Field(min_length=1)
    left: list[Panel]
    right: list[Panel]
    test_left: list[Panel] = Field(default_factory=list)
    test_right: list[Panel] = Field(default_factory=list)
    concept: Concept | None = None
    concept_group: str | None = None
    panels_per_side: int = Field(default=CONTEXT_PANELS_PER_SIDE, ge=1)
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_panels(self, info: ValidationInfo) -> BongardProblem:
        for side, panels in (("left", self.left), ("right", self.right)):
            if len(panels) != self.panels_per_side:
                raise ValueError(
                    f"{side} side has {len(panels)} context panels, expected {self.panels_per_side}"
                )
        groups = {
            ("left", "context"): self.left,
            ("right", "context"): self.right,
            ("left", "test"): self.test_left,
            ("right", "test"): self.test_right,
        }
        for (side, role), panels in groups.items():
            for panel in panels:
                if panel.side != side or panel.role != role:
                    raise ValueError(f"panel {panel.ref} is listed among the {side} {role} panels")
        refs = [panel.ref for panel in self.all_panels]
        duplicates = sorted({ref for ref in refs if refs.count(ref) > 1})
        if duplicates:
            raise ValueError(f"duplicate panels: {', '.join(duplicates)}")
        check_paths = not (isinstance(info.context, dict) and info.context.get("check_paths") is False)
        if check_paths:
            for panel in self.all_panels:
                if not panel.path.is_file():
                    raise ValueError(f"panel {panel.ref}: no image file at {panel.path}")
        return self

    @property
    def context_panels(self) -> list[Panel]:
        """Left context panels, then right ones: the order of a sheet."""
        return [*self.left, *self.right]

    @property
    def test_panels(self) -> list[Panel]:
        """Left test panels, then right ones."""
        return [*self.test_left, *self.test_right]

    @property
    def all_panels(self) -> list[Panel]:
        return [*self.context_panels, *self.test_panels]

    @property
    def key(self) -> str:
        """`dataset/id`: unique across datasets."""
        return f"{self.dataset}/{self.id}"


def own_id(key: str, dataset: str) -> str:
    """The dataset's own id in a stored problem key (`dataset/id`): the key less the dataset's name,
    which holds slashes where the dataset was given as a folder's path (a key of another dataset is
    read at its first slash)."""
    prefix = f"{dataset}/"
    return key[len(prefix) :] if key.startswith(prefix) else key.split("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class ProblemSummary:
    """What a run keeps of each of its problems until the problem's item starts: enough to select,
    sample and offer its concept as a distractor. The problem itself, panels and all, is loaded
    when its item starts (`Dataset.load`), so a run's memory does not grow with its dataset."""

    dataset: str
    id: str
    concept: Concept | None
    concept_group: str | None
    metadata: Mapping[str, JsonValue]

    @property
    def key(self) -> str:
        """`dataset/id`, as `BongardProblem.key`."""
        return f"{self.dataset}/{self.id}"

    @classmethod
    def of(cls, problem: BongardProblem) -> ProblemSummary:
        return cls(problem.dataset, problem.id, problem.concept, problem.concept_group, problem.metadata)
