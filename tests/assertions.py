"""Assertions shared by the loader tests."""

from __future__ import annotations

from pathlib import Path

from datasets_io.errors import DatasetError


def assert_located(
    error: DatasetError,
    *,
    dataset: str,
    problem_id: str | None,
    path: Path | None,
    reason: str,
) -> None:
    """The error names the dataset, problem and file, in its fields and in its message."""
    assert error.dataset == dataset
    assert error.problem_id == problem_id
    assert error.path == path
    assert reason in error.reason
    message = str(error)
    assert f"dataset {dataset}" in message
    if problem_id is not None:
        assert f"problem {problem_id}" in message
    if path is not None:
        assert str(path) in message
