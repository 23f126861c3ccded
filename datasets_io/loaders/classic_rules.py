"""The classic rules file `bp_solutions.json`: problem number -> [left rule, right rule].

Shared by the classic loader and by Bongard-RWR, whose problems translate the
classic problems of the same number.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

from datasets_io.errors import DatasetError
from datasets_io.label_tables import LabelTable
from datasets_io.loaders.base import read_json
from datasets_io.problem import Concept

RULES_FILE_NAME = "bp_solutions.json"


class ClassicRules:
    """Concepts by problem number, read lazily from one rules file."""

    def __init__(self, path: Path, dataset: str) -> None:
        self.path = path
        self.dataset = dataset

    @cached_property
    def _entries(self) -> dict[str, object]:
        data = read_json(self.path, self.dataset)
        if not isinstance(data, dict):
            raise DatasetError(
                "rules file must map problem numbers to [left rule, right rule]",
                dataset=self.dataset,
                path=self.path,
            )
        return {str(key): value for key, value in data.items()}

    def table(self, problem_ids: Iterable[str]) -> LabelTable:
        """Every rule of the file, by problem number (the row of problem n is the n-th rule, as in the
        authors' `labels.csv`), and the row of each of `problem_ids` that has one."""
        keys = sorted(self._entries, key=lambda key: (not key.isdigit(), int(key) if key.isdigit() else 0))
        rows = {key: n for n, key in enumerate(keys)}
        return LabelTable(
            str(self.path),
            tuple(self.concept(key) for key in keys),
            {problem_id: rows[problem_id] for problem_id in problem_ids if problem_id in rows},
        )

    def concept(self, problem_id: str) -> Concept:
        """The concept of one problem, or an error naming the rules file and the problem."""
        entry = self._entries.get(problem_id)
        if entry is None:
            raise DatasetError(
                "the rules file has no entry for this problem",
                dataset=self.dataset,
                problem_id=problem_id,
                path=self.path,
            )
        if not (
            isinstance(entry, list)
            and len(entry) == 2
            and all(isinstance(rule, str) and rule.strip() for rule in entry)
        ):
            raise DatasetError(
                f"malformed rules entry {entry!r}: expected [left rule, right rule]",
                dataset=self.dataset,
                problem_id=problem_id,
                path=self.path,
            )
        return Concept(left=entry[0], right=entry[1])
