"""The toolkit's error base, and errors about input data that name the dataset, problem and file."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError


class BongardError(Exception):
    """Every error the toolkit raises for the user to fix: the CLI prints its message in one line."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `choices`, or nothing when none is close."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class DatasetError(BongardError):
    """A dataset, one of its problems or one of its files cannot be used.

    Carries where the fault is so that a user can find it without a traceback:
    the dataset name, the problem id (None when the whole dataset is unusable)
    and the file (None when no single file is to blame).
    """

    def __init__(
        self,
        reason: str,
        *,
        dataset: str | None = None,
        problem_id: str | None = None,
        path: Path | str | None = None,
    ) -> None:
        self.reason = reason
        self.dataset = dataset
        self.problem_id = problem_id
        self.path = Path(path) if path is not None else None
        super().__init__(str(self))

    def located(self, *, dataset: str | None = None, problem_id: str | None = None) -> DatasetError:
        """The same error with missing location parts filled in."""
        return DatasetError(
            self.reason,
            dataset=self.dataset or dataset,
            problem_id=self.problem_id or problem_id,
            path=self.path,
        )

    def __str__(self) -> str:
        where = []
        if self.dataset:
            where.append(f"dataset {self.dataset}")
        if self.problem_id is not None:
            where.append(f"problem {self.problem_id}")
        if self.path is not None:
            where.append(f"file {self.path}")
        return f"{', '.join(where)}: {self.reason}" if where else self.reason


def describe_validation_error(error: ValidationError) -> str:
    """`field: message; ...` for a pydantic error, `record` standing for the whole value."""
    return "; ".join(
        f"{'.'.join(map(str, item['loc'])) or 'record'}: {item['msg'].removeprefix('Value error, ')}"
        for item in error.errors()
    )
