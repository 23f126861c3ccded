"""Bongard-RWR+ in the layouts its authors publish and write, with `labels.csv` for concepts.

- Manifest (`layout=manifest`; the released dataset): `dataset.json` holds
  `problems: [{id, left_images, right_images, left_side_image, right_side_image, whole_image}]`.
  Images are objects `{image_id, path}` in one schema and plain path strings in the other
  (upstream `src/dataset/model.py` and `simple_model.py`); a record uses one of them.
  Paths are relative to the dataset folder. The three sheet paths are optional (`""` when
  absent): `whole_image` is the problem sheet the paper's models were shown, made by
  upstream `scripts/combine_squares_into_matrices.py`; `-O sheet=shipped` makes it the
  problem's sheet instead of one rendered from the panels.
- Folders (`layout=folders`; what upstream `scripts/split_into_matrices_stochastic.py`
  writes): `<id>/left/0..P.<ext>` and `<id>/right/0..P.<ext>`, no manifest.

By default (`layout=auto`) the manifest is read where it exists, else the folders.
Either way the last image of each side is its test image, so a variant with P panels per
side has P + 1 images. `labels.csv` has the columns `Left-side Rule` and `Right-side Rule`
(and, in datasets this toolkit generates, `Concept Group`); the row of problem `id` is
`(id % 1000) - 1` (problems derived from one source problem share it). It is read from the
dataset folder, else from the folder holding it: the authors' code keeps one `data/labels.csv`
beside the variant folders (`data/<variant>/`) for all of them.
"""

from __future__ import annotations

import csv
import os
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NoReturn

from pydantic import BaseModel, Field, model_validator

from datasets_io.images import IMAGE_SUFFIXES
from datasets_io.label_tables import LabelTable
from datasets_io.loaders.base import (
    DatasetLoader,
    LoaderOptions,
    has_side_folders,
    index_records,
    read_json,
)
from datasets_io.problem import SIDES, BongardProblem, Concept, Panel, ProblemSummary, Side
from datasets_io.render import SHIPPED_SHEET_KEY

LEFT_RULE_COLUMN = "Left-side Rule"
RIGHT_RULE_COLUMN = "Right-side Rule"
GROUP_COLUMN = "Concept Group"
LABELS_FILE_NAME = "labels.csv"
SOURCE_PROBLEMS_PER_BLOCK = 1000
"""Problems per source block: a problem's row of `labels.csv` is its number modulo this, less one."""

Layout = Literal["auto", "manifest", "folders"]


class RwrPlusOptions(LoaderOptions):
    manifest: str = "dataset.json"
    """The problem manifest inside the dataset folder."""
    labels: Path | None = None
    """The concept table; by default `labels.csv` in the dataset folder, else beside it."""
    layout: Layout = "auto"
    """`manifest`, `folders` (`<id>/left`, `<id>/right`), or `auto`: the manifest if it exists."""
    sheet: Literal["render", "shipped"] = "render"
    """`shipped`: each problem's sheet is the record's `whole_image`, as the paper sent it."""


class RwrPlusImage(BaseModel):
    """One image of a side: `{image_id, path}`, or in the second schema a plain path."""

    image_id: int | None
    path: str = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _plain_path(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"image_id": None, "path": value}
        if isinstance(value, dict) and "image_id" in value and value["image_id"] is None:
            raise ValueError("image_id must be a number")
        return value


class RwrPlusRecord(BaseModel):
    id: int = Field(ge=1)
    left_images: list[RwrPlusImage] = Field(min_length=2)
    right_images: list[RwrPlusImage] = Field(min_length=2)
    left_side_image: str = ""
    right_side_image: str = ""
    whole_image: str = ""

    @model_validator(mode="before")
    @classmethod
    def _one_schema(cls, value: Any) -> Any:
        if isinstance(value, dict):
            images = [
                image
                for side in ("left_images", "right_images")
                if isinstance(value.get(side), list)
                for image in value[side]
            ]
            if any(isinstance(image, str) for image in images) and any(
                isinstance(image, dict) for image in images
            ):
                raise ValueError("mixes image objects {image_id, path} and plain paths")
        return value


class RwrPlusLoader(DatasetLoader):
    options_model = RwrPlusOptions
    options: RwrPlusOptions

    @classmethod
    def detect(cls, root: Path) -> bool:
        if (root / RwrPlusOptions().manifest).is_file():
            return True
        return (root / LABELS_FILE_NAME).is_file() and has_side_folders(root)

    @property
    def manifest(self) -> Path:
        return self.root / self.options.manifest

    def survey_inputs(self) -> list[Path]:
        """Its concept table, which may sit beside the dataset folder."""
        return [self.labels_path]

    @property
    def labels_path(self) -> Path:
        """The option's file, else `labels.csv` in the dataset folder, else the one beside it."""
        if self.options.labels is not None:
            return self.options.labels
        inside, beside = self.root / LABELS_FILE_NAME, self.root.parent / LABELS_FILE_NAME
        return beside if not inside.is_file() and beside.is_file() else inside

    @property
    def concept_source(self) -> str:
        return f"{self.labels_path} (row (id % 1000) - 1)"

    @cached_property
    def layout(self) -> Literal["manifest", "folders"]:
        if self.options.layout != "auto":
            return self.options.layout
        return "folders" if not self.manifest.is_file() and has_side_folders(self.root) else "manifest"

    @cached_property
    def _records(self) -> dict[str, list[object]]:
        data = read_json(self.manifest, self.name)
        problems = data.get("problems") if isinstance(data, dict) else None
        if not isinstance(problems, list):
            raise self.error('expected an object with a "problems" list', path=self.manifest)
        return index_records(problems, "id", "problems")

    @cached_property
    def _folders(self) -> dict[str, Path]:
        return self.numbered_folders("<id>/left, <id>/right")

    @cached_property
    def _labels(self) -> list[dict[str, str]]:
        try:
            with self.labels_path.open(encoding="utf-8-sig", newline="") as handle:
                reader = csv.DictReader(handle)
                missing = {LEFT_RULE_COLUMN, RIGHT_RULE_COLUMN} - set(reader.fieldnames or [])
                if missing:
                    raise self.error(f"missing columns: {', '.join(sorted(missing))}", path=self.labels_path)
                return list(reader)
        except FileNotFoundError:
            raise self.error("file is missing", path=self.labels_path) from None
        except (csv.Error, UnicodeDecodeError) as error:
            raise self.error(f"malformed CSV: {error}", path=self.labels_path) from None

    def label_table(self) -> LabelTable:
        """`labels.csv` row by row; a problem's row is `(id % 1000) - 1`, as the loader reads it."""
        rows = tuple(self._row_concept(row_number) for row_number in range(len(self._labels)))
        row_of = {
            problem_id: int(problem_id) % SOURCE_PROBLEMS_PER_BLOCK - 1
            for problem_id in self.problem_ids()
            if problem_id.isascii() and problem_id.isdigit()
        }
        return LabelTable(
            str(self.labels_path), rows, {key: row for key, row in row_of.items() if 0 <= row < len(rows)}
        )

    def problem_ids(self) -> list[str]:
        return list(self._folders if self.layout == "folders" else self._records)

    def summary(self, problem_id: str) -> ProblemSummary:
        """In the folders layout, from the sides' listings alone: the listing refuses all that
        building the problem would (a gap, a twin, fewer than two images, unequal sides), and its
        panels, made and checked, were 0.45 s of a survey of 5,000 problems."""
        if self.layout != "folders":
            return super().summary(problem_id)
        folder, names = self._listed_sides(problem_id)
        self._check_sides_equal({side: len(names[side]) for side in SIDES}, problem_id)
        number = int(problem_id)
        concept = self._concept(number, problem_id)
        return ProblemSummary(self.name, problem_id, concept, self._group(number), {"folder": folder.name})

    def load_problem(self, problem_id: str) -> BongardProblem:
        if self.layout == "folders":
            number, images, metadata = self._from_folder(problem_id)
        else:
            number, images, metadata = self._from_manifest(problem_id)
        counts = {side: len(images[side]) for side in SIDES}
        self._check_sides_equal(counts, problem_id)
        panels = {
            side: [
                Panel(
                    path=path,
                    side=side,
                    index=index,
                    role="test" if index == counts[side] - 1 else "context",
                )
                for index, path in enumerate(images[side])
            ]
            for side in SIDES
        }
        concept = self._concept(number, problem_id)
        return self.build(
            problem_id,
            listed=self.layout == "folders",
            left=panels["left"][:-1],
            right=panels["right"][:-1],
            test_left=panels["left"][-1:],
            test_right=panels["right"][-1:],
            concept=concept,
            concept_group=self._group(number),
            panels_per_side=counts["left"] - 1,
            metadata=metadata,
        )

    def _from_manifest(self, problem_id: str) -> tuple[int, dict[Side, list[Path]], dict[str, Any]]:
        record = self.parse_record(RwrPlusRecord, self._records[problem_id], problem_id, self.manifest)
        entries = {"left": record.left_images, "right": record.right_images}
        images: dict[Side, list[Path]] = {
            side: [self.manifest_image(image.path, problem_id, self.manifest) for image in entries[side]]
            for side in SIDES
        }
        metadata: dict[str, Any] = {}
        ids = {side: [image.image_id for image in entries[side]] for side in SIDES}
        if all(image_id is not None for side in SIDES for image_id in ids[side]):
            metadata["image_ids"] = ids
        if self.options.sheet == "shipped":
            if not record.whole_image:
                raise self.error(
                    "the record has no whole_image sheet (option sheet=shipped)", problem_id, self.manifest
                )
            sheet = self.manifest_image(record.whole_image, problem_id, self.manifest)
            metadata[SHIPPED_SHEET_KEY] = str(sheet)
        return record.id, images, metadata

    def _check_sides_equal(self, counts: dict[Side, int], problem_id: str) -> None:
        if counts["left"] != counts["right"]:
            raise self.error(
                f"{counts['left']} left but {counts['right']} right images",
                problem_id,
                self.manifest if self.layout == "manifest" else self._folders[problem_id],
            )

    def _group(self, number: int) -> str | None:
        return self._labels[number % SOURCE_PROBLEMS_PER_BLOCK - 1].get(GROUP_COLUMN) or None

    def _from_folder(self, problem_id: str) -> tuple[int, dict[Side, list[Path]], dict[str, Any]]:
        folder, names = self._listed_sides(problem_id)
        images: dict[Side, list[Path]] = {}
        for side in SIDES:
            side_folder = folder / side
            images[side] = [side_folder / name for name in names[side]]
        return int(problem_id), images, {"folder": folder.name}

    def _listed_sides(self, problem_id: str) -> tuple[Path, dict[Side, list[str]]]:
        """A problem's folder and the names of each side's images, in number order."""
        folder = self._folders[problem_id]
        if self.options.sheet == "shipped":
            raise self.error(
                "the folder layout ships no sheets; drop the option sheet=shipped", problem_id, folder
            )
        return folder, {side: self._numbered_names(folder / side, problem_id) for side in SIDES}

    def _numbered_names(self, folder: Path, problem_id: str) -> list[str]:
        """The names of the images `0.<ext>` ... `P.<ext>` of one side, in number order; gaps and
        twins are refused."""
        numbered: dict[int, list[str]] = {}
        images = 0
        try:
            with os.scandir(folder) as entries:  # a listing's file types, without a stat per image
                for entry in entries:
                    name = entry.name
                    dot = name.rfind(".")  # none: -1, and the last character is no suffix
                    stem = name[:dot]
                    if (
                        stem.isdigit()
                        and stem.isascii()
                        and name[dot:].lower() in IMAGE_SUFFIXES
                        and entry.is_file()
                    ):
                        numbered.setdefault(int(stem), []).append(name)
                        images += 1
        except (FileNotFoundError, NotADirectoryError):
            raise self.error(f"missing folder {folder.name}/", problem_id, folder) from None
        if images != len(numbered) or max(numbered, default=-1) != images - 1:
            self._refuse_twins_and_gaps(numbered, problem_id, folder)
        if images < 2:
            raise self.error(
                f"{images} numbered image(s); a side needs context images and a test image",
                problem_id,
                folder,
            )
        return [numbered[number][0] for number in range(images)]

    def _refuse_twins_and_gaps(
        self, numbered: dict[int, list[str]], problem_id: str, folder: Path
    ) -> NoReturn:
        """The error of a side whose images are not numbered 0, 1, 2, ... once each."""
        twin = min((number for number, names in numbered.items() if len(names) > 1), default=None)
        if twin is not None:
            names = ", ".join(sorted(numbered[twin]))
            raise self.error(f"two images numbered {twin}: {names}", problem_id, folder)
        missing = sorted(set(range(max(numbered) + 1)) - numbered.keys())
        raise self.error(
            f"no image numbered {', '.join(map(str, missing))} (images are numbered 0, 1, 2, ...)",
            problem_id,
            folder,
        )

    def _concept(self, number: int, problem_id: str) -> Concept:
        row_number = number % SOURCE_PROBLEMS_PER_BLOCK - 1
        if not 0 <= row_number < len(self._labels):
            raise self.error(
                f"no label row {row_number} for this problem ({len(self._labels)} rows)",
                problem_id,
                self.labels_path,
            )
        return self._row_concept(row_number, problem_id)

    def _row_concept(self, row_number: int, problem_id: str | None = None) -> Concept:
        row = self._labels[row_number]
        left, right = (
            (row.get(LEFT_RULE_COLUMN) or "").strip(),
            (row.get(RIGHT_RULE_COLUMN) or "").strip(),
        )
        if not (left and right):
            raise self.error(f"label row {row_number} has an empty rule", problem_id, self.labels_path)
        return Concept(left=left, right=right)
