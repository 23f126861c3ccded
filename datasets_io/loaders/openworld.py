"""Bongard-OpenWorld: the official JSON records over the user's image root.

Each record has `uid`, `commonSense`, `concept`, `caption` and 14 `imageFiles`:
[0:6] positive context, [6] positive query, [7:13] negative context, [13]
negative query. Positives are the left side. The caption states the concept
in a sentence and is the left rule; negatives only lack it, so no right rule.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from datasets_io.loaders.base import DatasetLoader, LoaderOptions, index_records, read_json
from datasets_io.problem import BongardProblem, Concept, Panel, Side

IMAGES_PER_RECORD = 14
POSITIVE_QUERY = 6
NEGATIVE_QUERY = 13


class OpenWorldOptions(LoaderOptions):
    image_root: Path | None = None
    """Where `imageFiles` are relative to; by default the dataset folder."""
    files: str = "bongard_ow*.json"
    """Glob of the record files inside the dataset folder."""


class OpenWorldRecord(BaseModel):
    model_config = ConfigDict(coerce_numbers_to_str=True)

    uid: str = Field(min_length=1)
    commonSense: str
    concept: str
    caption: str = Field(min_length=1)
    imageFiles: list[str] = Field(min_length=IMAGES_PER_RECORD, max_length=IMAGES_PER_RECORD)


class OpenWorldLoader(DatasetLoader):
    options_model = OpenWorldOptions
    options: OpenWorldOptions

    @classmethod
    def detect(cls, root: Path) -> bool:
        return root.is_dir() and any(root.glob(OpenWorldOptions().files))

    @property
    def concept_source(self) -> str:
        return "record captions (left side only)"

    def __init__(self, name: str, root: Path, options: LoaderOptions | None = None) -> None:
        super().__init__(name, root, options)
        self._files: dict[str, Path] = {}
        """The record file each id was first seen in."""

    @cached_property
    def _records(self) -> dict[str, list[object]]:
        """Raw records by id across all record files; an id seen twice keeps both."""
        if not self.root.is_dir():
            raise self.error("dataset folder is missing", path=self.root)
        files = sorted(self.root.glob(self.options.files))
        if not files:
            raise self.error(f"no record files matching {self.options.files}", path=self.root)
        records: dict[str, list[object]] = {}
        for file in files:
            data = read_json(file, self.name)
            if not isinstance(data, list):
                raise self.error("expected a JSON list of problem records", path=file)
            for problem_id, entries in index_records(data, "uid", file.stem).items():
                records.setdefault(problem_id, []).extend(entries)
                self._files.setdefault(problem_id, file)
        return records

    def problem_ids(self) -> list[str]:
        return list(self._records)

    def load_problem(self, problem_id: str) -> BongardProblem:
        entries = self._records[problem_id]
        file = self._files[problem_id]
        record = self.parse_record(OpenWorldRecord, entries, problem_id, file)
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
            concept_group=record.commonSense,
            metadata={"concept_keywords": record.concept, "split": file.stem.rsplit("_", 1)[-1]},
        )
