"""A generated dataset on disk: the released Bongard-RWR+ layout, plus the image pool behind it.

`dataset.json` and `labels.csv` are what the `bongard-rwr-plus` loader reads
(problem `id` -> label row `id % 1000 - 1`); `pool.json` keeps every rendered
image with its prompts, its source image and its review decision, so variants
(other P, no removal, train / validation / test splits, impure sides) can be
built later from the same pool without rendering again. Other manifests of
the same folder (`l2.json`, `test.json`, `impure.json`...) are read with
`-O manifest=NAME`.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from datasets_io.errors import DatasetError, describe_validation_error
from datasets_io.loaders.rwr_plus import (
    GROUP_COLUMN,
    LABELS_FILE_NAME,
    LEFT_RULE_COLUMN,
    RIGHT_RULE_COLUMN,
    SOURCE_PROBLEMS_PER_BLOCK,
)
from datasets_io.problem import PanelRole, Side

POOL_FILE = "pool.json"
MANIFEST_FILE = "dataset.json"
SOURCE_COLUMN = "Source"
Decision = Literal["left", "right", "none"]


class PoolImage(BaseModel):
    """One rendered image: where it came from, how it was made, and what the review said."""

    image_id: int = Field(ge=0)
    source: str
    """The source problem's id."""
    side: Side
    source_index: int = Field(ge=0)
    """The source image's index on its side (the side's test image has the last one)."""
    source_role: PanelRole
    variant: int = Field(ge=0)
    path: str
    """Relative to the dataset folder."""
    positive: str
    negative: str
    seed: int
    decision: Decision | None = None
    """left / right: the side the reviewer put it on; none: neither; None: not reviewed yet."""
    reviewer: str | None = None

    @property
    def accepted(self) -> bool:
        return self.decision == self.side


class SourceConcept(BaseModel):
    """A source problem's concept, its label row and its group."""

    source: str
    row: int = Field(ge=0, lt=SOURCE_PROBLEMS_PER_BLOCK - 1)
    left: str
    right: str
    group: str | None = None


class Matrix(BaseModel):
    """One generated problem: image ids per side, context images first, the test image last."""

    id: int = Field(ge=1)
    source: str
    left: list[int]
    right: list[int]


def matrix_id(row: int, number: int) -> int:
    """The released scheme: problem `number` of the source in label row `row` is `number * 1000 + row + 1`."""
    return number * SOURCE_PROBLEMS_PER_BLOCK + row + 1


def with_test_last(subset: Sequence[int], seed: int, source: str, side: Side, number: int) -> list[int]:
    """A subset with its test image (chosen with the seed) moved last; the same subset always gets
    the same test image."""
    ordered = list(subset)
    test = random.Random(f"{seed}:{source}:{side}:{number}").randrange(len(ordered))
    return [*ordered[:test], *ordered[test + 1 :], ordered[test]]


def build_matrices(
    concept: SourceConcept, left: Sequence[Sequence[int]], right: Sequence[Sequence[int]], seed: int
) -> list[Matrix]:
    """Every left side with every right side (Alg. 2, last line): len(left) x len(right) problems."""
    lefts = [with_test_last(s, seed, concept.source, "left", m) for m, s in enumerate(left)]
    rights = [with_test_last(s, seed, concept.source, "right", n) for n, s in enumerate(right)]
    return [
        Matrix(id=matrix_id(concept.row, m * len(rights) + n), source=concept.source, left=lp, right=rp)
        for m, lp in enumerate(lefts)
        for n, rp in enumerate(rights)
    ]


def write_manifest(folder: Path, name: str, matrices: Sequence[Matrix], pool: Sequence[PoolImage]) -> Path:
    """A problem manifest in the released layout, listing images by id and relative path."""
    paths = {image.image_id: image.path for image in pool}

    def listed(ids: list[int]) -> list[dict[str, object]]:
        return [{"image_id": image_id, "path": paths[image_id]} for image_id in ids]

    problems = [
        {"id": m.id, "source": m.source, "left_images": listed(m.left), "right_images": listed(m.right)}
        for m in matrices
    ]
    path = folder / name
    path.write_text(json.dumps({"problems": problems}, indent=1), encoding="utf-8")
    return path


def read_manifest(folder: Path, name: str) -> list[Matrix]:
    """The problems of a manifest this module wrote, as matrices of image ids."""
    problems = json.loads((folder / name).read_text(encoding="utf-8"))["problems"]
    return [
        Matrix(
            id=p["id"],
            source=str(p["source"]),
            left=[image["image_id"] for image in p["left_images"]],
            right=[image["image_id"] for image in p["right_images"]],
        )
        for p in problems
    ]


def write_labels(folder: Path, concepts: Sequence[SourceConcept]) -> Path:
    """`labels.csv`: one row per source problem, in row order, with its group and source id."""
    rows = sorted(concepts, key=lambda c: c.row)
    if [c.row for c in rows] != list(range(len(rows))):
        raise ValueError("label rows must be 0, 1, 2, ... in order")
    path = folder / LABELS_FILE_NAME
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([LEFT_RULE_COLUMN, RIGHT_RULE_COLUMN, GROUP_COLUMN, SOURCE_COLUMN])
        writer.writerows([c.left, c.right, c.group or "", c.source] for c in rows)
    return path


class Pool(BaseModel):
    """Everything `pool.json` holds: the source concepts and every rendered image."""

    concepts: list[SourceConcept]
    images: list[PoolImage]

    def write(self, folder: Path) -> Path:
        path = folder / POOL_FILE
        path.write_text(self.model_dump_json(indent=1), encoding="utf-8")
        return path

    @classmethod
    def read(cls, folder: Path) -> Pool:
        path = folder / POOL_FILE
        if not path.is_file():
            raise DatasetError(f"no image pool here (is {folder} a generated dataset?)", path=path)
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as error:
            raise DatasetError(
                f"malformed image pool: {describe_validation_error(error)}", path=path
            ) from None

    def of_side(self, source: str, side: Side, accepted_only: bool = True) -> list[PoolImage]:
        return [
            image
            for image in self.images
            if image.source == source and image.side == side and (image.accepted or not accepted_only)
        ]
