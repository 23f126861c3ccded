"""Bongard-HOI: the published annotation files over the HAKE image tree, crops applied.

Each split file `bongard_hoi_<split>.json` (train, val_* and test_* with the four
`{seen,unseen}_obj_{seen,unseen}_act` test sets) is a JSON list of problems, each
`[positives, negatives, "<action>++<object>"]`: 7 positive and 7 negative image
records `{im_path, crop_bbox: [x1, y1, x2, y2], sub_bbox, obj_bbox, sub_class,
obj_class, act_class, ...}`, `im_path` relative to the image root (upstream's
`assets/data/hake/images`). Upstream trains on the crop `[y1:y2, x1:x2]` of each
image, never on the whole photograph, and its OpenImages boxes are 1.6 times too
small (it scales them up and clips them to the image); the last image of each
list is that side's query. Upstream reads photographs with `cv2.imread`, which turns
them as their EXIF orientation tag says, so the boxes lie on the turned image and the
crop is taken from it here too.

Here positives are the left side and negatives the right side; images 0-5 are
context panels and image 6 the test panel of its side, as upstream and the case
study (Images to Sides uses the additional test images) have it. Records carry no
id: a problem is `<split>-<position in its file>`, e.g. `test_seen_obj_unseen_act-12`.
The task name states the concept of the positives (`ride++bicycle` -> "ride
bicycle"); negatives show the same object under other actions, so no right rule.

Panels are cropped when a problem is loaded: each crop is written once, as PNG, to a
cache folder (`cache_dir`, default `<workspace>/crops`) under a name derived from the
source file (path, size, modification time) and the box, so panels stay plain files.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from functools import cached_property
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from datasets_io.errors import DatasetError, describe_validation_error
from datasets_io.images import open_image
from datasets_io.loaders.base import DatasetLoader, LoaderOptions, read_json
from datasets_io.problem import BongardProblem, Concept, Panel, Side
from datasets_io.workspace import workspace_home

IMAGES_PER_SIDE = 7
TEST_INDEX = IMAGES_PER_SIDE - 1
TASK_SEPARATOR = "++"
FILE_PREFIX = "bongard_hoi_"
RELEASE_FOLDER = "bongard_hoi_release"
"""The folder the published annotation archive unpacks to."""
NESTED_IMAGE_ROOT = Path("hake") / "images"
OPENIMAGES_FOLDER = "openimages"
OPENIMAGES_SCALE = 1.6
CROP_SUFFIX = ".png"
CROP_READING = "exif-oriented"
"""How a source photo is read before its crop (part of the cache key: crops cut before issue 33
from unturned photos are not reused)."""


class HoiOptions(LoaderOptions):
    image_root: Path | None = None
    """Where `im_path`s are relative to; default `<dataset>/hake/images` if present, else the dataset."""
    annotations: Path | None = None
    """The folder of the split files; default `<dataset>/bongard_hoi_release` if present, else the dataset."""
    files: str = f"{FILE_PREFIX}test_*.json"
    """Glob of the split files read (default: the four test sets)."""
    crop: bool = True
    """Crop each image to its `crop_bbox`, as upstream does; false keeps whole images."""
    cache_dir: Path | None = None
    """Where crops are written; default `crops/` in the workspace ($BONGARD_HOME, else ~/.bongard)."""
    openimages_scale: float = Field(default=OPENIMAGES_SCALE, gt=0)
    """Factor for boxes of images under `openimages/` (upstream's fix of their annotations)."""


class HoiImage(BaseModel):
    """One image of a record; the other published fields are kept as they are."""

    model_config = ConfigDict(extra="allow")

    im_path: str = Field(min_length=1)
    crop_bbox: tuple[int, int, int, int]
    act_class: str | None = None
    obj_class: str | None = None

    @field_validator("crop_bbox")
    @classmethod
    def _box_is_a_region(cls, box: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        x1, y1, x2, y2 = box
        if min(box) < 0:
            raise ValueError(f"crop box {list(box)} has a negative coordinate")
        if x2 <= x1 or y2 <= y1:
            raise ValueError(f"crop box {list(box)} is empty (needs x1 < x2 and y1 < y2)")
        return box


class HoiRecord(BaseModel):
    positives: list[HoiImage] = Field(min_length=IMAGES_PER_SIDE, max_length=IMAGES_PER_SIDE)
    negatives: list[HoiImage] = Field(min_length=IMAGES_PER_SIDE, max_length=IMAGES_PER_SIDE)
    task: str

    @field_validator("task")
    @classmethod
    def _task_names_action_and_object(cls, task: str) -> str:
        action, separator, thing = task.partition(TASK_SEPARATOR)
        if not (separator and action.strip() and thing.strip()):
            raise ValueError(f"expected '<action>{TASK_SEPARATOR}<object>', got {task!r}")
        return task

    @property
    def action(self) -> str:
        return self.task.partition(TASK_SEPARATOR)[0].strip()

    @property
    def object(self) -> str:
        return self.task.partition(TASK_SEPARATOR)[2].strip()


def concept_text(action: str, thing: str) -> str:
    """A readable concept from a task's action and object: `sit_on`, `chair` -> "sit on chair"."""
    action_words = " ".join(action.replace("_", " ").split())
    thing_words = " ".join(thing.replace("_", " ").split())
    if action_words == "no interaction":
        return f"no interaction with {thing_words}"
    return f"{action_words} {thing_words}"


class HoiLoader(DatasetLoader):
    options_model = HoiOptions
    options: HoiOptions

    @classmethod
    def detect(cls, root: Path) -> bool:
        pattern = f"{FILE_PREFIX}*.json"
        return root.is_dir() and any(
            any(folder.glob(pattern)) for folder in (root, root / RELEASE_FOLDER) if folder.is_dir()
        )

    @property
    def concept_source(self) -> str:
        return f"record task names <action>{TASK_SEPARATOR}<object> (left side only)"

    @property
    def annotation_folder(self) -> Path:
        if self.options.annotations is not None:
            return self.options.annotations.expanduser()
        release = self.root / RELEASE_FOLDER
        return release if release.is_dir() else self.root

    @property
    def image_root(self) -> Path:
        if self.options.image_root is not None:
            return self.options.image_root.expanduser().resolve()
        nested = self.root / NESTED_IMAGE_ROOT
        return (nested if nested.is_dir() else self.root).resolve()

    @cached_property
    def cache_dir(self) -> Path:
        if self.options.cache_dir is not None:
            return self.options.cache_dir.expanduser()
        return workspace_home() / "crops"

    @cached_property
    def _records(self) -> dict[str, tuple[Path, int, object]]:
        """Raw records by problem id: the split file, the position in it, the record."""
        if not self.root.is_dir():
            raise self.error("dataset folder is missing", path=self.root)
        folder = self.annotation_folder
        files = sorted(folder.glob(self.options.files)) if folder.is_dir() else []
        if not files:
            raise self.error(f"no annotation files matching {self.options.files}", path=folder)
        records: dict[str, tuple[Path, int, object]] = {}
        for file in files:
            data = read_json(file, self.name)
            if not isinstance(data, list):
                raise self.error("expected a JSON list of problem records", path=file)
            split = file.stem.removeprefix(FILE_PREFIX)
            for position, record in enumerate(data):
                records[f"{split}-{position}"] = (file, position, record)
        return records

    def problem_ids(self) -> list[str]:
        return list(self._records)

    def load_problem(self, problem_id: str) -> BongardProblem:
        file, position, raw = self._records[problem_id]
        record = self._parse(raw, problem_id, file)
        panels: dict[Side, list[Panel]] = {"left": [], "right": []}
        described: dict[str, JsonValue] = {}
        sides: tuple[tuple[Side, list[HoiImage]], ...] = (
            ("left", record.positives),
            ("right", record.negatives),
        )
        for side, images in sides:
            for index, image in enumerate(images):
                source = self.manifest_image(image.im_path, problem_id, file, self.image_root)
                scale = self._box_scale(image)
                path = self._cropped(source, image, scale, problem_id, file) if self.options.crop else source
                panel = Panel(
                    path=path, side=side, index=index, role="test" if index == TEST_INDEX else "context"
                )
                panels[side].append(panel)
                crop_box: list[JsonValue] = [*image.crop_bbox]
                described[panel.ref] = {
                    "image": image.im_path,
                    "crop_box": crop_box,
                    "box_scale": scale,
                    "action": image.act_class,
                    "object": image.obj_class,
                }
        return self.build_with_tests(
            problem_id,
            panels,
            TEST_INDEX,
            concept=Concept(left=concept_text(record.action, record.object)),
            metadata={
                "split": file.stem.removeprefix(FILE_PREFIX),
                "record": position,
                "task": record.task,
                "action": record.action,
                "object": record.object,
                "cropped": self.options.crop,
                "panels": described,
            },
        )

    def _parse(self, raw: object, problem_id: str, file: Path) -> HoiRecord:
        if not (isinstance(raw, list) and len(raw) == 3):
            raise self.error(
                f'malformed record: expected [positives, negatives, "<action>{TASK_SEPARATOR}<object>"]',
                problem_id,
                file,
            )
        try:
            return HoiRecord.model_validate({"positives": raw[0], "negatives": raw[1], "task": raw[2]})
        except ValidationError as error:
            raise self.error(
                f"malformed record: {describe_validation_error(error)}", problem_id, file
            ) from None

    def _box_scale(self, image: HoiImage) -> float:
        in_openimages = OPENIMAGES_FOLDER in PurePosixPath(image.im_path).parts
        return self.options.openimages_scale if in_openimages else 1.0

    def _cropped(self, source: Path, image: HoiImage, scale: float, problem_id: str, file: Path) -> Path:
        """The crop of `source` to the record's box, written once to the cache folder."""
        stat = source.stat()
        parts = [source, stat.st_size, stat.st_mtime_ns, list(image.crop_bbox), scale, CROP_READING]
        key = "\0".join(map(str, parts))
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
        target = self.cache_dir / digest[:2] / f"{digest}{CROP_SUFFIX}"
        if target.is_file():
            return target
        with open_image(source, oriented=True) as picture:
            width, height = picture.size
            limits = (width, height, width, height)
            x1, y1, x2, y2 = (
                min(int(v * scale), limit) for v, limit in zip(image.crop_bbox, limits, strict=True)
            )
            if x2 <= x1 or y2 <= y1:
                scaled = f" (scaled by {scale:g})" if scale != 1.0 else ""
                raise self.error(
                    f"crop box {list(image.crop_bbox)}{scaled} lies outside the {width}x{height} image "
                    f"{image.im_path}",
                    problem_id,
                    file,
                )
            cropped = picture.crop((x1, y1, x2, y2))
        partial = target.with_name(f"{target.name}.{os.getpid()}-{threading.get_ident()}.part")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            cropped.save(partial, format="PNG")
            os.replace(partial, target)
        except OSError as error:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
            raise DatasetError(f"cannot write the crop cache: {error}", path=target.parent) from None
        return target
