"""Bongard-RWR+ in its released layout: `dataset.json` and `labels.csv`.

`dataset.json` holds `problems: [{id, left_images: [{image_id, path}], right_images}]`
with paths relative to the dataset folder; the last image of each side is its
test image, so a variant with P panels per side lists P + 1 images.
`labels.csv` has the columns `Left-side Rule` and `Right-side Rule` (and, in
datasets this toolkit generates, `Concept Group`); the row of problem `id` is
`(id % 1000) - 1` (problems derived from one source share it).
"""

from __future__ import annotations

import csv
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, Field

from datasets_io.loaders.base import DatasetLoader, LoaderOptions, index_records, read_json
from datasets_io.problem import SIDES, BongardProblem, Concept, Panel

LEFT_RULE_COLUMN = "Left-side Rule"
RIGHT_RULE_COLUMN = "Right-side Rule"
GROUP_COLUMN = "Concept Group"
SOURCE_PROBLEMS_PER_BLOCK = 1000


class RwrPlusOptions(LoaderOptions):
    manifest: str = "dataset.json"
    """The problem manifest inside the dataset folder."""
    labels: Path | None = None
    """The concept table; by default `labels.csv` in the dataset folder."""


class RwrPlusImage(BaseModel):
    image_id: int
    path: str = Field(min_length=1)


class RwrPlusRecord(BaseModel):
    id: int = Field(ge=1)
    left_images: list[RwrPlusImage] = Field(min_length=2)
    right_images: list[RwrPlusImage] = Field(min_length=2)


class RwrPlusLoader(DatasetLoader):
    options_model = RwrPlusOptions
    options: RwrPlusOptions

    @classmethod
    def detect(cls, root: Path) -> bool:
        return (root / RwrPlusOptions().manifest).is_file()

    @property
    def manifest(self) -> Path:
        return self.root / self.options.manifest

    @property
    def labels_path(self) -> Path:
        return self.options.labels or self.root / "labels.csv"

    @property
    def concept_source(self) -> str:
        return f"{self.labels_path} (row (id % 1000) - 1)"

    @cached_property
    def _records(self) -> dict[str, list[object]]:
        data = read_json(self.manifest, self.name)
        problems = data.get("problems") if isinstance(data, dict) else None
        if not isinstance(problems, list):
            raise self.error('expected an object with a "problems" list', path=self.manifest)
        return index_records(problems, "id", "problems")

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

    def problem_ids(self) -> list[str]:
        return list(self._records)

    def load_problem(self, problem_id: str) -> BongardProblem:
        record = self.parse_record(RwrPlusRecord, self._records[problem_id], problem_id, self.manifest)
        images = {"left": record.left_images, "right": record.right_images}
        if len(record.left_images) != len(record.right_images):
            raise self.error(
                f"{len(record.left_images)} left but {len(record.right_images)} right images",
                problem_id,
                self.manifest,
            )
        panels = {
            side: [
                Panel(
                    path=self.manifest_image(image.path, problem_id, self.manifest),
                    side=side,
                    index=index,
                    role="test" if index == len(images[side]) - 1 else "context",
                )
                for index, image in enumerate(images[side])
            ]
            for side in SIDES
        }
        return self.build(
            problem_id,
            left=panels["left"][:-1],
            right=panels["right"][:-1],
            test_left=panels["left"][-1:],
            test_right=panels["right"][-1:],
            concept=self._concept(record.id, problem_id),
            concept_group=self._labels[record.id % SOURCE_PROBLEMS_PER_BLOCK - 1].get(GROUP_COLUMN) or None,
            panels_per_side=len(record.left_images) - 1,
            metadata={
                "image_ids": {side: [image.image_id for image in images[side]] for side in SIDES},
            },
        )

    def _concept(self, number: int, problem_id: str) -> Concept:
        row_number = number % SOURCE_PROBLEMS_PER_BLOCK - 1
        if not 0 <= row_number < len(self._labels):
            raise self.error(
                f"no label row {row_number} for this problem ({len(self._labels)} rows)",
                problem_id,
                self.labels_path,
            )
        row = self._labels[row_number]
        left, right = (
            (row.get(LEFT_RULE_COLUMN) or "").strip(),
            (row.get(RIGHT_RULE_COLUMN) or "").strip(),
        )
        if not (left and right):
            raise self.error(f"label row {row_number} has an empty rule", problem_id, self.labels_path)
        return Concept(left=left, right=right)
