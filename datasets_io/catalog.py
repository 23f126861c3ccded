"""Finding datasets by name or `FORMAT:PATH`, and reading their problems safely.

A data directory (`--data-dir`, else `$BONGARD_DATA`, else the first of
`./data` and `../shared/data` that exists) holds one folder per dataset. A
folder named like a format (`bongard-classic`) is read in that format; any
other folder in the first format whose layout it matches.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from datasets_io.errors import DatasetError, describe_validation_error
from datasets_io.images import DEFAULT_MAX_PIXELS, open_image
from datasets_io.label_tables import LabelTable
from datasets_io.loaders import DatasetLoader, loader_class, loader_formats
from datasets_io.problem import BongardProblem, ProblemSummary
from datasets_io.workspace import workspace_home

DATA_DIR_ENV = "BONGARD_DATA"


FALLBACK_DATA_DIRS = (Path("data"), Path("../shared/data"))
"""Searched in order when nothing names a data directory; the second is where a
checkout of this project sits beside its team's shared data."""


def workspace_data_dir() -> Path:
    """Where `bongard datasets download` puts datasets by default: the workspace's `data/`."""
    return workspace_home() / "data"


def default_data_dir() -> Path:
    """`$BONGARD_DATA` if set, else the first fallback folder that exists, then the workspace's
    `data/` (where downloads go); else `./data`."""
    if configured := os.environ.get(DATA_DIR_ENV):
        return Path(configured)
    candidates = [*FALLBACK_DATA_DIRS, workspace_data_dir()]
    return next((path for path in candidates if path.is_dir()), FALLBACK_DATA_DIRS[0])


T = TypeVar("T", BongardProblem, ProblemSummary)


@dataclass
class ScanResult(Generic[T]):
    """The usable problems of a dataset (or what is kept of each) and an error for each unusable one."""

    problems: list[T] = field(default_factory=list)
    errors: list[DatasetError] = field(default_factory=list)


class Dataset:
    """A named dataset read through its loader; every error comes back located."""

    def __init__(self, loader: DatasetLoader, format_name: str) -> None:
        self.loader = loader
        self.format_name = format_name

    @property
    def name(self) -> str:
        return self.loader.name

    @property
    def root(self) -> Path:
        return self.loader.root

    def problem_ids(self) -> list[str]:
        try:
            return self.loader.problem_ids()
        except DatasetError as error:
            raise error.located(dataset=self.name) from None

    @cached_property
    def _id_set(self) -> frozenset[str]:
        """The ids as a set: resolving each of 5,000 ids against the list took time quadratic in it."""
        return frozenset(self.problem_ids())

    def resolve_id(self, problem_id: str) -> str:
        """The dataset's own id for `problem_id`; a number matches any zero padding of it
        (`008` finds `8`, and `8` finds Bongard-OpenWorld's `0008`)."""
        if problem_id in self._id_set:
            return problem_id
        ids = self.problem_ids()
        if problem_id.isascii() and problem_id.isdigit():
            same = [i for i in ids if i.isascii() and i.isdigit() and int(i) == int(problem_id)]
            if len(same) == 1:
                return same[0]
        sample = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
        raise DatasetError(f"no problem {problem_id!r} (ids: {sample})", dataset=self.name)

    def label_table(self) -> LabelTable | None:
        """The authors' concept table where the layout has one; a `DatasetError` if it is unreadable."""
        try:
            return self.loader.label_table()
        except DatasetError as error:
            raise error.located(dataset=self.name) from None

    def problem(self, problem_id: str) -> BongardProblem:
        """One problem; a `DatasetError` naming the dataset, problem and file if unusable."""
        return self.load(self.resolve_id(problem_id))

    def load(self, problem_id: str) -> BongardProblem:
        """The problem of an id the dataset gave (`problem_ids`, a scan): not resolved again."""
        try:
            return self.loader.load_problem(problem_id)
        except DatasetError as error:
            raise error.located(dataset=self.name, problem_id=problem_id) from None

    def iter_problems(
        self, problem_ids: Iterable[str] | None = None, *, open_images: bool = False
    ) -> Iterator[BongardProblem | DatasetError]:
        """Each problem, or the error that makes it unusable, one at a time.

        With `open_images`, every image is decoded too (what `validate` does),
        so corrupt, truncated and over-large files are caught before a run.
        """
        ids: Iterable[str] = self.problem_ids() if problem_ids is None else problem_ids
        read = self.load if problem_ids is None else self.problem  # its own ids need no resolving
        for problem_id in ids:
            try:
                problem = read(problem_id)
                if open_images:
                    check_images(problem)
            except DatasetError as error:
                yield error
            else:
                yield problem

    def scan(
        self, problem_ids: Iterable[str] | None = None, *, open_images: bool = False
    ) -> ScanResult[BongardProblem]:
        result: ScanResult[BongardProblem] = ScanResult()
        for item in self.iter_problems(problem_ids, open_images=open_images):
            if isinstance(item, DatasetError):
                result.errors.append(item)
            else:
                result.problems.append(item)
        return result

    def survey(self) -> ScanResult[ProblemSummary]:
        """Every problem read once, one at a time, and only its summary kept (what a run holds)."""
        result: ScanResult[ProblemSummary] = ScanResult()
        for problem_id in self.problem_ids():
            try:
                result.problems.append(self.loader.summary(problem_id))
            except DatasetError as error:
                result.errors.append(error.located(dataset=self.name, problem_id=problem_id))
        return result


def check_images(problem: BongardProblem, max_pixels: int = DEFAULT_MAX_PIXELS) -> None:
    """Decode every image of a problem; the first failure raises a located error."""
    for panel in problem.all_panels:
        try:
            open_image(panel.path, max_pixels=max_pixels).close()
        except DatasetError as error:
            raise error.located(dataset=problem.dataset, problem_id=problem.id) from None


def open_dataset(
    spec: str, data_dir: Path | None = None, options: Mapping[str, str] | None = None
) -> Dataset:
    """A dataset from a name in the data directory or from `FORMAT:PATH`."""
    format_name, separator, path = spec.partition(":")
    if separator and format_name in loader_formats():
        root = Path(path).expanduser()
        name = root.name or spec
    else:
        data_dir = data_dir if data_dir is not None else default_data_dir()
        root = data_dir / spec
        name = spec
        if not root.is_dir():
            known = ", ".join(d.name for d in find_datasets(data_dir)) or "none"
            raise DatasetError(
                f"no dataset {spec!r} in {data_dir} (datasets there: {known}; "
                f"or give FORMAT:PATH with a format of {', '.join(loader_formats())})"
            )
        format_name = spec if spec in loader_formats() else detect_format(root)
    loader_type = loader_class(format_name)
    try:
        loader_options = loader_type.options_model.model_validate(dict(options or {}))
    except ValidationError as error:
        raise DatasetError(
            f"bad option for format {format_name}: {describe_validation_error(error)}", dataset=name
        ) from None
    return Dataset(loader_type(name, root, loader_options), format_name)


def open_run_dataset(config: Mapping[str, Any]) -> Dataset:
    """The dataset a stored run was made on (its config's `dataset`, `data_dir` and
    `dataset_options`), opened with the run's own settings."""
    data_dir = config.get("data_dir")
    return open_dataset(
        str(config["dataset"]), Path(data_dir) if data_dir else None, config.get("dataset_options") or {}
    )


def detect_format(root: Path) -> str:
    """The first format, by name, whose layout `root` matches; generic layouts come last."""
    for format_name in sorted(loader_formats(), key=lambda f: loader_class(f).generic_layout):
        if loader_class(format_name).detect(root):
            return format_name
    raise DatasetError(
        f"cannot tell the format of {root}; name the folder after a format or give FORMAT:PATH "
        f"({', '.join(loader_formats())})"
    )


def find_datasets(data_dir: Path) -> list[Path]:
    """Dataset folders in a data directory: named after a format or in a known layout; a data
    directory that is not there is said to be missing, not taken for an empty one."""
    if not data_dir.is_dir():
        what = "is not a folder" if data_dir.exists() else "does not exist"
        raise DatasetError(
            f"data directory {data_dir} {what} (give --data-dir DIR or set ${DATA_DIR_ENV}; "
            "`bongard datasets download bongard-classic` fetches the classic problems)"
        )
    formats = loader_formats()
    return [
        folder
        for folder in sorted(data_dir.iterdir())
        if folder.is_dir()
        and (folder.name in formats or any(loader_class(f).detect(folder) for f in formats))
    ]
