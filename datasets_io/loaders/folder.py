"""A simple layout for custom data: one folder per problem.

```
my-dataset/
  problem-a/
    left/    1.png ... 6.png     context panels of the left side (natural order)
    right/   1.png ... 6.png
    test/left/  q1.png           optional test images whose true side is left
    test/right/ q2.png           optional test images whose true side is right
    concept.json                 {"left": "...", "right": "...", "group": "..."}
```
`concept.json` is optional (a problem without it has no concept); `right` and
`group` inside it are optional. Problem ids are the folder names.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from datasets_io.errors import describe_validation_error
from datasets_io.images import list_images, natural_key
from datasets_io.loaders.base import DatasetLoader, LoaderOptions, read_json
from datasets_io.problem import CONTEXT_PANELS_PER_SIDE, SIDES, BongardProblem, Concept, Panel, Side

CONCEPT_FILE = "concept.json"


class FolderOptions(LoaderOptions):
    panels_per_side: int = Field(default=CONTEXT_PANELS_PER_SIDE, ge=1)
    """Context panels expected on each side."""


class ConceptFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    left: str = Field(min_length=1)
    right: str | None = None
    group: str | None = None


class FolderLoader(DatasetLoader):
    options_model = FolderOptions
    options: FolderOptions
    generic_layout = True

    @classmethod
    def detect(cls, root: Path) -> bool:
        return root.is_dir() and any(
            (p / "left").is_dir() and (p / "right").is_dir() for p in root.iterdir() if p.is_dir()
        )

    @property
    def concept_source(self) -> str:
        return f"<problem>/{CONCEPT_FILE}"

    @cached_property
    def _folders(self) -> dict[str, Path]:
        if not self.root.is_dir():
            raise self.error("dataset folder is missing", path=self.root)
        folders = sorted(
            (p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")),
            key=natural_key,
        )
        return {p.name: p for p in folders}

    def problem_ids(self) -> list[str]:
        return list(self._folders)

    def load_problem(self, problem_id: str) -> BongardProblem:
        folder = self._folders[problem_id]
        concept_file = self._read_concept(folder, problem_id)
        context = {side: self._panels(folder / side, side, problem_id) for side in SIDES}
        tests = {side: self._panels(folder / "test" / side, side, problem_id, test=True) for side in SIDES}
        return self.build(
            problem_id,
            left=context["left"],
            right=context["right"],
            test_left=tests["left"],
            test_right=tests["right"],
            concept=Concept(left=concept_file.left, right=concept_file.right) if concept_file else None,
            concept_group=concept_file.group if concept_file else None,
            panels_per_side=self.options.panels_per_side,
        )

    def _panels(self, folder: Path, side: Side, problem_id: str, test: bool = False) -> list[Panel]:
        if not folder.is_dir():
            if test:
                return []
            raise self.error(f"missing the {side}/ folder", problem_id, folder)
        images = list_images(folder)
        if not test and len(images) != self.options.panels_per_side:
            raise self.error(
                f"{len(images)} images on the {side} side, expected {self.options.panels_per_side}",
                problem_id,
                folder,
            )
        return [
            Panel(path=path, side=side, index=index, role="test" if test else "context")
            for index, path in enumerate(images)
        ]

    def _read_concept(self, folder: Path, problem_id: str) -> ConceptFile | None:
        path = folder / CONCEPT_FILE
        if not path.exists():
            return None
        try:
            return ConceptFile.model_validate(read_json(path, self.name))
        except ValidationError as error:
            raise self.error(
                f"malformed concept file: {describe_validation_error(error)}", problem_id, path
            ) from None
