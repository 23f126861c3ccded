"""The 100 classic Bongard problems: `NNN/0..11.png` and `bp_solutions.json`.

Panels 0-5 are the left side, 6-11 the right side. For synthetic problems the
case study holds out the last panel of each side (5 and 11) as the test pair,
leaving 5 + 5 context panels: the option `holdout_test` does that, in place.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from datasets_io.concept_groups import known_groups
from datasets_io.images import find_image
from datasets_io.loaders.base import DatasetLoader, LoaderOptions
from datasets_io.loaders.classic_rules import RULES_FILE_NAME, ClassicRules
from datasets_io.problem import CONTEXT_PANELS_PER_SIDE, BongardProblem, Panel, Side

HELD_OUT_INDEX = CONTEXT_PANELS_PER_SIDE - 1


class ClassicOptions(LoaderOptions):
    holdout_test: bool = False
    """Hold out panels 5 and 11 as the test pair (the case study's protocol)."""
    rules: Path | None = None
    """The rules file; by default `bp_solutions.json` in the dataset folder."""


class ClassicLoader(DatasetLoader):
    options_model = ClassicOptions
    options: ClassicOptions

    @classmethod
    def detect(cls, root: Path) -> bool:
        return (root / RULES_FILE_NAME).is_file()

    @property
    def rules(self) -> ClassicRules:
        return ClassicRules(self.options.rules or self.root / RULES_FILE_NAME, self.name)

    @property
    def concept_source(self) -> str:
        return str(self.rules.path)

    @cached_property
    def _folders(self) -> dict[str, Path]:
        return self.numbered_folders("NNN/")

    def problem_ids(self) -> list[str]:
        return list(self._folders)

    def load_problem(self, problem_id: str) -> BongardProblem:
        folder = self._folders[problem_id]
        concept = self.rules.concept(problem_id)
        sides: dict[Side, list[Panel]] = {"left": [], "right": []}
        tests: dict[Side, list[Panel]] = {"left": [], "right": []}
        for number in range(2 * CONTEXT_PANELS_PER_SIDE):
            side: Side = "left" if number < CONTEXT_PANELS_PER_SIDE else "right"
            index = number % CONTEXT_PANELS_PER_SIDE
            held_out = self.options.holdout_test and index == HELD_OUT_INDEX
            panel = Panel(
                path=find_image(folder, str(number)),
                side=side,
                index=index,
                role="test" if held_out else "context",
            )
            (tests if held_out else sides)[side].append(panel)
        return self.build(
            problem_id,
            left=sides["left"],
            right=sides["right"],
            test_left=tests["left"],
            test_right=tests["right"],
            concept=concept,
            concept_group=known_groups().get(problem_id),
            panels_per_side=HELD_OUT_INDEX if self.options.holdout_test else CONTEXT_PANELS_PER_SIDE,
            metadata={"folder": folder.name},
        )
