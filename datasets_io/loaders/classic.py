"""The 100 classic Bongard problems: a folder of 12 panels per problem and `bp_solutions.json`.

Two folder layouts are read, alone or together:

- `NNN/0..11.<ext>`, zero-padded numbers (kaminskaz/inzynierka `data_raw/bp`, 104 x 104 px);
- `pNNNN/0..11.png`, the high-resolution panels of the Bongard-in-Wonderland study
  (ml-research/bongard-in-wonderland `data/bongard-problems-high-res/p0016/...`).

In both, panels 0-5 are the left side and 6-11 the right side; a problem's id is its
number without padding (`008` and `p0008` are both problem 8). The rules come from the
option `rules`, else the first `bp_solutions.json` found in the dataset folder, in a
sibling `solutions/` folder (where the Wonderland repository keeps it beside its images)
or in a sibling `bongard-classic/` folder (the same rules beside another copy's panels).

For synthetic problems the case study holds out the last panel of each side (5 and 11)
as the test pair, leaving 5 + 5 context panels: the option `holdout_test` does that, in
place.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import model_validator

from datasets_io.concept_groups import known_groups
from datasets_io.errors import DatasetError
from datasets_io.images import IMAGE_SUFFIXES, find_image
from datasets_io.label_tables import LabelTable
from datasets_io.loaders.base import DatasetLoader, LoaderOptions, numeric_folders
from datasets_io.loaders.classic_rules import RULES_FILE_NAME, ClassicRules
from datasets_io.problem import CONTEXT_PANELS_PER_SIDE, BongardProblem, Panel, Side
from datasets_io.render import SHIPPED_SHEET_KEY

HELD_OUT_INDEX = CONTEXT_PANELS_PER_SIDE - 1
PANELS_PER_PROBLEM = 2 * CONTEXT_PANELS_PER_SIDE
HIGH_RES_FOLDER = re.compile(r"p([0-9]+)")
LAYOUTS = "NNN/ or pNNNN/"
SHEETS_FOLDER = "bpimgs"


class ClassicOptions(LoaderOptions):
    holdout_test: bool = False
    """Hold out panels 5 and 11 as the test pair (the case study's protocol)."""
    rules: Path | None = None
    """The rules file; by default `bp_solutions.json` in the dataset folder or beside it."""
    sheet: Literal["render", "shipped"] = "render"
    """`shipped`: each problem's sheet is its whole-problem image `pNNNN.png`, the image Bongard in
    Wonderland's Tasks 1, 1.1 and 3 send, instead of one rendered from the panels."""
    sheets: Path | None = None
    """Where the `pNNNN.png` sheets are; by default `bpimgs/` beside the dataset folder, as in the
    Wonderland repository (`data/bpimgs` beside `data/bongard-problems-high-res`)."""

    @model_validator(mode="after")
    def _whole_sheet_shows_every_panel(self) -> ClassicOptions:
        if self.sheet == "shipped" and self.holdout_test:
            raise ValueError("a shipped sheet shows all 12 panels: it cannot hold out panels 5 and 11")
        return self


def high_res_folders(root: Path) -> dict[str, Path]:
    """The `pNNNN` folders, keyed by the number without padding, in numeric order."""
    if not root.is_dir():
        return {}
    found = [
        (int(match.group(1)), folder)
        for folder in root.iterdir()
        if folder.is_dir() and (match := HIGH_RES_FOLDER.fullmatch(folder.name))
    ]
    folders: dict[str, Path] = {}
    for number, folder in sorted(found, key=lambda item: (item[0], item[1].name)):
        if str(number) in folders:
            raise DatasetError(
                f"folders {folders[str(number)].name} and {folder.name} are both {number}", path=root
            )
        folders[str(number)] = folder
    return folders


def problem_folders(root: Path) -> dict[str, Path]:
    """Every problem folder of either layout by id, in numeric order; one id twice is refused."""
    numbered, high_res = numeric_folders(root), high_res_folders(root)
    clash = min(numbered.keys() & high_res.keys(), key=int, default=None)
    if clash is not None:
        raise DatasetError(
            f"folders {numbered[clash].name} and {high_res[clash].name} are both {clash}", path=root
        )
    merged = numbered | high_res
    return {problem_id: merged[problem_id] for problem_id in sorted(merged, key=int)}


def has_panels(folder: Path) -> bool:
    """Whether a folder holds the first and the last panel of a problem."""
    return all(
        any((folder / f"{stem}{suffix}").is_file() for suffix in IMAGE_SUFFIXES)
        for stem in ("0", str(PANELS_PER_PROBLEM - 1))
    )


class ClassicLoader(DatasetLoader):
    options_model = ClassicOptions
    options: ClassicOptions

    @classmethod
    def detect(cls, root: Path) -> bool:
        try:
            folders = problem_folders(root)
        except DatasetError:
            return (root / RULES_FILE_NAME).is_file()
        if (root / RULES_FILE_NAME).is_file():
            return bool(folders)
        return any(has_panels(folder) for folder in high_res_folders(root).values())

    @cached_property
    def rules(self) -> ClassicRules:
        return ClassicRules(self.options.rules or self._default_rules, self.name)

    @property
    def _default_rules(self) -> Path:
        candidates = [
            self.root / RULES_FILE_NAME,
            self.root.parent / "solutions" / RULES_FILE_NAME,
            self.root.parent / "bongard-classic" / RULES_FILE_NAME,
        ]
        return next((path for path in candidates if path.is_file()), candidates[0])

    @property
    def concept_source(self) -> str:
        return str(self.rules.path)

    @cached_property
    def _folders(self) -> dict[str, Path]:
        if not self.root.is_dir():
            raise self.error("dataset folder is missing", path=self.root)
        folders = problem_folders(self.root)
        if not folders:
            raise self.error(f"no problem folders ({LAYOUTS}) found", path=self.root)
        return folders

    def label_table(self) -> LabelTable:
        return self.rules.table(self.problem_ids())

    def problem_ids(self) -> list[str]:
        return list(self._folders)

    def load_problem(self, problem_id: str) -> BongardProblem:
        folder = self._folders[problem_id]
        concept = self.rules.concept(problem_id)
        sides: dict[Side, list[Panel]] = {"left": [], "right": []}
        tests: dict[Side, list[Panel]] = {"left": [], "right": []}
        for number in range(PANELS_PER_PROBLEM):
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
            metadata={"folder": folder.name} | self._shipped_sheet(problem_id),
        )

    def _shipped_sheet(self, problem_id: str) -> dict[str, str]:
        """With `sheet=shipped`, where the problem's whole-problem image is (else nothing)."""
        if self.options.sheet != "shipped":
            return {}
        folder = self.options.sheets or self.root.parent / SHEETS_FOLDER
        path = folder / f"p{int(problem_id):04d}.png"
        if not path.is_file():
            raise self.error(f"no shipped sheet {path.name} (option sheet=shipped)", problem_id, path)
        return {SHIPPED_SHEET_KEY: str(path)}
