"""Bongard-OpenWorld: the released problem records over the user's image folder.

Two releases carry the same records (`uid`, `commonSense`, `concept`, `caption`, 14
`imageFiles`, and in the combined files the images' source `urls`):

- the GitHub one (`assets/data/bongard-ow/`): JSON lists `bongard_ow_train.json`,
  `bongard_ow_val.json`, `bongard_ow_test.json` and `bongard_ow.json`, all 1010 problems;
- the Hugging Face one: one record per line in `train.jsonl`, `val.jsonl`, `test.jsonl`
  and `bongard_ow.jsonl`.

A folder is read in one release (the JSON one where both are present). The split files
are the dataset; the combined file (`bongard_ow.*`) only adds problems that no split
file has, and a combined record that contradicts its split record is refused. Without
split files the combined file alone is read.

`imageFiles`: [0:6] positive context, [6] positive query, [7:13] negative context, [13]
negative query, relative to the image root (`images/<uid>/...`). Positives are the left
side. The caption states the concept in a sentence and is the left rule; negatives only
lack it, so there is no right rule. `commonSense` (0-9) is the concept's category, named
as in Vaishnav & Tammet, Table A.1.

An image path must stay inside the image root as written (no `..`, not absolute). A
folder on the way may be a link to elsewhere (large image folders usually are); an image
file that itself links out of the image root is refused.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from datasets_io.loaders.base import DatasetLoader, LoaderOptions, index_records, read_json
from datasets_io.problem import BongardProblem, Concept, Panel, Side

IMAGES_PER_RECORD = 14
POSITIVE_QUERY = 6
NEGATIVE_QUERY = 13
COMBINED_STEM = "bongard_ow"
RELEASES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("bongard_ow_*.json",), f"{COMBINED_STEM}.json"),
    (("bongard_ow_*.jsonl", "train.jsonl", "val.jsonl", "test.jsonl"), f"{COMBINED_STEM}.jsonl"),
)
"""Per release, in order of preference: the globs of its split files and its combined file."""
RELEASE_FILES = "bongard_ow_*.json, bongard_ow.json, train/val/test.jsonl, bongard_ow.jsonl"
COMPARED_FIELDS = ("commonSense", "concept", "caption", "imageFiles")

COMMON_SENSE_CATEGORIES = {
    "0": "Anything else",
    "1": "Human-Object Interaction (HOI)",
    "2": "Taste / Nutrition / Food",
    "3": "Color / Material / Shape",
    "4": "Functionality / Status / Affordance",
    "5": "And / Or / Not",
    "6": "Factual Knowledge",
    "7": "Meta Class",
    "8": "Relationship",
    "9": "Unusual Observations",
}
"""The `commonSense` ids and the categories they stand for (Vaishnav & Tammet, Table A.1)."""


class OpenWorldOptions(LoaderOptions):
    image_root: Path | None = None
    """Where `imageFiles` are relative to; by default the dataset folder."""
    files: str | None = None
    """Glob of the record files (JSON lists or `.jsonl`) in the dataset folder; by default
    the split files and the combined file of the release found there."""


class OpenWorldRecord(BaseModel):
    model_config = ConfigDict(coerce_numbers_to_str=True)

    uid: str = Field(min_length=1)
    commonSense: str
    concept: str
    caption: str = Field(min_length=1)
    imageFiles: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=IMAGES_PER_RECORD, max_length=IMAGES_PER_RECORD
    )

    @field_validator("commonSense")
    @classmethod
    def _known_category(cls, value: str) -> str:
        value = value.strip()
        if value not in COMMON_SENSE_CATEGORIES:
            raise ValueError(f"unknown category id {value!r} (expected 0-9)")
        return value


@dataclass(frozen=True)
class BadLine:
    """A line of a `.jsonl` file that is no JSON, kept so that it is reported as a record."""

    line: int
    reason: str


@dataclass(frozen=True)
class Entry:
    """One raw record and the file it was read from."""

    file: Path
    record: object


def is_combined(file: Path) -> bool:
    return file.stem == COMBINED_STEM


def split_name(file: Path) -> str:
    """`bongard_ow_test.json` and `test.jsonl` are both the `test` split."""
    return file.stem.rsplit("_", 1)[-1]


def release_files(root: Path) -> list[Path]:
    """The record files of the release in `root`: the JSON one if present, else the JSONL one."""
    for splits, combined in RELEASES:
        files = {path for pattern in splits for path in root.glob(pattern) if path.is_file()}
        if (root / combined).is_file():
            files.add(root / combined)
        if files:
            return sorted(files)
    return []


def looks_like_record_file(path: Path) -> bool:
    """Whether a `.jsonl` file's first record is an OpenWorld record (`train.jsonl` is a common name)."""
    if path.suffix != ".jsonl":
        return True
    try:
        with path.open(encoding="utf-8") as handle:
            first = next((line for line in handle if line.strip()), "")
        record = json.loads(first)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(record, dict) and {"uid", "imageFiles"} <= record.keys()


class OpenWorldLoader(DatasetLoader):
    options_model = OpenWorldOptions
    options: OpenWorldOptions

    @classmethod
    def detect(cls, root: Path) -> bool:
        return root.is_dir() and any(looks_like_record_file(path) for path in release_files(root))

    @property
    def concept_source(self) -> str:
        return "record captions (left side only)"

    @cached_property
    def _files(self) -> list[Path]:
        if not self.root.is_dir():
            raise self.error("dataset folder is missing", path=self.root)
        if self.options.files is not None:
            files = sorted(path for path in self.root.glob(self.options.files) if path.is_file())
            if not files:
                raise self.error(f"no record files matching {self.options.files}", path=self.root)
            return files
        files = release_files(self.root)
        if not files:
            raise self.error(f"no record files ({RELEASE_FILES})", path=self.root)
        return files

    @cached_property
    def _entries(self) -> tuple[dict[str, list[Entry]], dict[str, list[Entry]]]:
        """Raw records by id: those of the split files, and those of the combined file.

        An id seen twice in the split files keeps both records, for `parse_record` to refuse.
        """
        splits: dict[str, list[Entry]] = {}
        combined: dict[str, list[Entry]] = {}
        for file in self._files:
            target = combined if is_combined(file) else splits
            for problem_id, records in index_records(self._read(file), "uid", file.stem).items():
                target.setdefault(problem_id, []).extend(Entry(file, record) for record in records)
        return splits, combined

    def _read(self, file: Path) -> list[object]:
        """The records of one file: a JSON list, or one JSON value per non-blank line."""
        if file.suffix != ".jsonl":
            data = read_json(file, self.name)
            if not isinstance(data, list):
                raise self.error("expected a JSON list of problem records", path=file)
            return data
        try:
            lines = file.read_text(encoding="utf-8").split(
                "\n"
            )  # not splitlines: JSON strings may hold U+2028
        except UnicodeDecodeError as error:
            raise self.error(f"not UTF-8 text: {error}", path=file) from None
        records: list[object] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                records.append(BadLine(number, error.msg))
        return records

    def problem_ids(self) -> list[str]:
        splits, combined = self._entries
        return [*splits, *(problem_id for problem_id in combined if problem_id not in splits)]

    def load_problem(self, problem_id: str) -> BongardProblem:
        splits, combined = self._entries
        entries = splits.get(problem_id) or combined[problem_id]
        record = self._parse(problem_id, entries)
        file = entries[0].file
        if problem_id in splits and problem_id in combined:
            self._check_agreement(problem_id, record, file, combined[problem_id])
        image_root = (self.options.image_root or self.root).resolve()
        paths = [self.manifest_image(name, problem_id, file, image_root) for name in record.imageFiles]

        def panels(side: Side, start: int) -> list[Panel]:
            return [Panel(path=paths[start + i], side=side, index=i) for i in range(6)]

        def query(side: Side, position: int) -> list[Panel]:
            return [Panel(path=paths[position], side=side, index=6, role="test")]

        return self.build(
            problem_id,
            left=panels("left", 0),
            right=panels("right", POSITIVE_QUERY + 1),
            test_left=query("left", POSITIVE_QUERY),
            test_right=query("right", NEGATIVE_QUERY),
            concept=Concept(left=record.caption),
            concept_group=COMMON_SENSE_CATEGORIES[record.commonSense],
            metadata={
                "concept_keywords": record.concept,
                "common_sense": record.commonSense,
                "split": None if is_combined(file) else split_name(file),
            },
        )

    def _parse(self, problem_id: str, entries: list[Entry]) -> OpenWorldRecord:
        file = entries[0].file
        first = entries[0].record
        if len(entries) == 1 and isinstance(first, BadLine):
            raise self.error(f"malformed JSON on line {first.line}: {first.reason}", problem_id, file)
        return self.parse_record(OpenWorldRecord, [entry.record for entry in entries], problem_id, file)

    def _check_agreement(
        self, problem_id: str, record: OpenWorldRecord, split_file: Path, combined: list[Entry]
    ) -> None:
        """The combined file may repeat a split record, but only as it is in the split file."""
        other = self._parse(problem_id, combined)
        differing = [name for name in COMPARED_FIELDS if getattr(other, name) != getattr(record, name)]
        if differing:
            raise self.error(
                f"the record differs from the one in {split_file.name} in {', '.join(differing)}",
                problem_id,
                combined[0].file,
            )

    def manifest_image(
        self, relative: str, problem_id: str, manifest: Path, root: Path | None = None
    ) -> Path:
        """An image under the image root; linked folders on the way are followed, not refused.

        The path as written must stay inside the root. Once resolved it must lie inside
        the root or inside a folder that a linked folder on its way points to, so an image
        file linking out of the tree is still refused.
        """
        root = (root or self.root).resolve()
        written = Path(relative)
        normal = Path(os.path.normpath(written))
        if written.is_absolute() or written.drive or normal.parts[:1] == ("..",):
            raise self.error(f"path {relative!r} escapes the image root {root}", problem_id, manifest)
        allowed = [root]
        folder = root
        for part in normal.parts[:-1]:
            folder = folder / part
            if folder.is_symlink() and folder.is_dir():
                allowed.append(folder.resolve())
        try:
            candidate = (root / normal).resolve()
        except (OSError, RuntimeError) as error:
            raise self.error(f"cannot resolve {relative!r}: {error}", problem_id, manifest) from None
        if not any(candidate.is_relative_to(base) for base in allowed):
            raise self.error(
                f"path {relative!r} escapes the image root {root} (it links to {candidate})",
                problem_id,
                manifest,
            )
        if not candidate.is_file():
            raise self.error(f"image listed in {manifest.name} is missing", problem_id, candidate)
        return candidate
