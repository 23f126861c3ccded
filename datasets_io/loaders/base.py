"""The contract every dataset loader fulfils, and helpers loaders share."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from datasets_io.errors import DatasetError, describe_validation_error
from datasets_io.label_tables import LabelTable
from datasets_io.problem import BongardProblem, Panel, ProblemSummary, Side

RecordT = TypeVar("RecordT", bound=BaseModel)


class LoaderOptions(BaseModel):
    """Options a loader accepts (`--option key=value` on the command line)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetLoader(ABC):
    """Reads one upstream dataset layout into `BongardProblem`s, one problem at a time.

    Listing ids is cheap; a problem is built only when asked for, so one bad
    problem never hides the others and large datasets stream. A loader is known by the
    format name it is registered under (see `datasets_io.loaders.registry`), not by a
    name of its own.
    """

    generic_layout: ClassVar[bool] = False
    """A layout loose enough to match others' folders; detected only after the specific ones."""
    options_model: ClassVar[type[LoaderOptions]] = LoaderOptions

    def __init__(self, name: str, root: Path, options: LoaderOptions | None = None) -> None:
        self.name = name
        self.root = root
        self.options = options if options is not None else self.options_model()

    @classmethod
    @abstractmethod
    def detect(cls, root: Path) -> bool:
        """Whether `root` looks like this layout (used when a folder's name is no format)."""

    @property
    @abstractmethod
    def concept_source(self) -> str:
        """Where the concepts come from, for `bongard datasets list`."""

    @abstractmethod
    def problem_ids(self) -> list[str]:
        """Every problem id in dataset order; raises `DatasetError` if the layout is unreadable."""

    @abstractmethod
    def load_problem(self, problem_id: str) -> BongardProblem:
        """Build one problem; raises `DatasetError` naming the problem and file at fault."""

    def summary(self, problem_id: str) -> ProblemSummary:
        """What a survey keeps of one problem (`Dataset.survey`); raises what `load_problem` would.
        By default the problem built and summarized; a loader that can tell it, and every reason
        the problem is unusable, without making its panels may say so faster."""
        return ProblemSummary.of(self.load_problem(problem_id))

    def label_table(self) -> LabelTable | None:
        """The concept table the dataset's authors keep, if the layout has one (None: it has not)."""
        return None

    def survey_inputs(self) -> list[Path] | None:
        """Every file outside its root a survey of this dataset reads, so the survey can be kept
        between runs while none of them and nothing under the root changes
        (`datasets_io.survey_cache`); None (the default): not known, surveyed afresh each run."""
        return None

    def error(self, reason: str, problem_id: str | None = None, path: Path | None = None) -> DatasetError:
        return DatasetError(reason, dataset=self.name, problem_id=problem_id, path=path)

    def build(self, problem_id: str, *, listed: bool = False, **fields: Any) -> BongardProblem:
        """Validate a problem, turning validation errors into a located `DatasetError`. `listed`: its
        images were found by listing their folders, so they exist, and are not looked up again (a
        stat per image: 0.4 s of a 5,000-problem survey)."""
        try:
            return BongardProblem.model_validate(
                {"dataset": self.name, "id": problem_id, **fields}, context={"check_paths": not listed}
            )
        except ValidationError as error:
            reasons = "; ".join(item["msg"].removeprefix("Value error, ") for item in error.errors())
            raise self.error(reasons, problem_id) from None

    def build_with_tests(
        self, problem_id: str, panels: Mapping[Side, list[Panel]], first_test: int, **fields: Any
    ) -> BongardProblem:
        """A problem whose sides list context panels first and their test panels from `first_test` on."""
        return self.build(
            problem_id,
            left=panels["left"][:first_test],
            right=panels["right"][:first_test],
            test_left=panels["left"][first_test:],
            test_right=panels["right"][first_test:],
            **fields,
        )

    def numbered_folders(self, layout: str) -> dict[str, Path]:
        """The dataset's numbered problem folders; none at all is a dataset-level error."""
        if not self.root.is_dir():
            raise self.error("dataset folder is missing", path=self.root)
        folders = numeric_folders(self.root)
        if not folders:
            raise self.error(f"no problem folders ({layout}) found", path=self.root)
        return folders

    def parse_record(
        self, model: type[RecordT], entries: list[object], problem_id: str, manifest: Path
    ) -> RecordT:
        """Validate a manifest record; a duplicated id or a malformed record is located."""
        if len(entries) > 1:
            raise self.error(f"the id appears in {len(entries)} records", problem_id, manifest)
        try:
            return model.model_validate(entries[0])
        except ValidationError as error:
            raise self.error(
                f"malformed record: {describe_validation_error(error)}", problem_id, manifest
            ) from None

    def manifest_image(
        self, relative: str, problem_id: str, manifest: Path, root: Path | None = None
    ) -> Path:
        """An image path from a manifest, under `root` (default: the dataset folder).

        A path escaping the root is refused, and a missing file is named here,
        where the manifest that lists it is known.
        """
        root = (root or self.root).resolve()
        candidate = (root / relative).resolve()
        if not candidate.is_relative_to(root):
            raise self.error(f"path {relative!r} escapes the dataset root {root}", problem_id, manifest)
        if not candidate.is_file():
            raise self.error(f"image listed in {manifest.name} is missing", problem_id, candidate)
        return candidate


def read_json(path: Path, dataset: str) -> Any:
    """Parse a JSON file; a missing or malformed file is a `DatasetError` naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError("file is missing", dataset=dataset, path=path) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise DatasetError(f"malformed JSON: {error}", dataset=dataset, path=path) from None


def numeric_folders(root: Path) -> dict[str, Path]:
    """Sub-folders named by a number, keyed by the number without padding, in numeric order.

    The classic and RWR problem folders; `008` and `8` in one folder would be
    the same problem, so that is refused.
    """
    if not root.is_dir():
        return {}
    with os.scandir(root) as entries:  # a listing's file types, without a stat per folder
        names = [entry.name for entry in entries if entry.name.isdigit() and entry.is_dir()]
    folders: dict[str, Path] = {}
    for name in sorted(names, key=lambda name: (len(name.lstrip("0")), name)):
        problem_id = str(int(name))
        if problem_id in folders:
            raise DatasetError(
                f"folders {folders[problem_id].name} and {name} are both {problem_id}", path=root
            )
        folders[problem_id] = root / name
    return folders


def has_side_folders(root: Path) -> bool:
    """Whether a numbered problem folder under `root` has a `left` and a `right` folder: the first
    one found answers (the RWR layouts), not a look at all 5,000."""
    return any(
        (folder / "left").is_dir() and (folder / "right").is_dir()
        for folder in numeric_folders(root).values()
    )


def index_records(records: list[Any], id_field: str, label: str) -> dict[str, list[object]]:
    """Group manifest records by id, keeping duplicates for `parse_record` to refuse.

    A record without an id is kept under `label[position]` so that it is
    reported as a problem of its own instead of vanishing.
    """
    indexed: dict[str, list[object]] = {}
    for position, record in enumerate(records):
        raw_id = record.get(id_field) if isinstance(record, dict) else None
        key = str(raw_id) if raw_id not in (None, "") else f"{label}[{position}]"
        indexed.setdefault(key, []).append(record)
    return indexed
