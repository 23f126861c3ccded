"""Bongard-RWR: `<id>/{left,right}/0..6.<jpg|jpeg|png>`; image 6 of each side is its test image.

The upstream dataset ships no rules: each problem translates the classic
problem with the same number, so concepts are joined by id from a classic
rules file (by default the sibling `bongard-classic/bp_solutions.json`).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from datasets_io.concept_groups import known_groups
from datasets_io.images import find_image
from datasets_io.label_tables import LabelTable
from datasets_io.loaders.base import DatasetLoader, LoaderOptions, has_side_folders
from datasets_io.loaders.classic_rules import RULES_FILE_NAME, ClassicRules
from datasets_io.loaders.rwr_plus import LABELS_FILE_NAME
from datasets_io.problem import CONTEXT_PANELS_PER_SIDE, SIDES, BongardProblem, Panel

TEST_INDEX = CONTEXT_PANELS_PER_SIDE


class RwrOptions(LoaderOptions):
    rules: Path | None = None
    """The classic rules file; by default `../bongard-classic/bp_solutions.json`."""


class RwrLoader(DatasetLoader):
    options_model = RwrOptions
    options: RwrOptions

    @classmethod
    def detect(cls, root: Path) -> bool:
        if (root / LABELS_FILE_NAME).is_file():
            return False  # Bongard-RWR+ folders (`<id>/left`, `<id>/right` and a labels.csv)
        return has_side_folders(root)

    @property
    def rules(self) -> ClassicRules:
        default = self.root.parent / "bongard-classic" / RULES_FILE_NAME
        return ClassicRules(self.options.rules or default, self.name)

    @property
    def concept_source(self) -> str:
        return f"{self.rules.path} (classic problem with the same number)"

    @cached_property
    def _folders(self) -> dict[str, Path]:
        return self.numbered_folders("<id>/left, <id>/right")

    def label_table(self) -> LabelTable:
        return self.rules.table(self.problem_ids())

    def problem_ids(self) -> list[str]:
        return list(self._folders)

    def load_problem(self, problem_id: str) -> BongardProblem:
        folder = self._folders[problem_id]
        concept = self.rules.concept(problem_id)
        panels = {
            side: [
                Panel(
                    path=find_image(folder / side, str(index)),
                    side=side,
                    index=index,
                    role="test" if index == TEST_INDEX else "context",
                )
                for index in range(TEST_INDEX + 1)
            ]
            for side in SIDES
        }
        return self.build_with_tests(
            problem_id,
            panels,
            TEST_INDEX,
            concept=concept,
            concept_group=known_groups().get(problem_id),
        )
