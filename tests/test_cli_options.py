"""Strategy options and agent parameters are checked before a run exists: one line, exit 2, nothing stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard

RUN = ("run", "--strategy", "concept-selection", "--model", "perception", "--dataset", "bongard-rwr")


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (("-S", "concepts=four"), ["concepts", "2, 4, 8 or 16"]),
        (("-S", "concepts=3"), ["concepts", "2, 4, 8 or 16"]),
        (("-S", "conceps=4"), ["conceps", "did you mean 'concepts'?"]),
        (("-S", "nonsense=1"), ["nonsense", "its options: protocol, concepts, distractors"]),
        (("-M", "temprature=0"), ["temprature", "did you mean 'temperature'?"]),
    ],
)
def test_a_bad_option_is_refused_in_one_line_before_a_run_is_stored(
    extra: tuple[str, str], names: list[str], shared_data: Path, tmp_path: Path
) -> None:
    result = run_bongard(*RUN, "--data-dir", shared_data, "--home", tmp_path, *extra)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error:") and all(name in line for name in names), line
    store = tmp_path / STORE_FILE
    assert not store.exists() or ResultsStore(store).run_ids() == []


def test_strategies_name_shows_each_option_with_its_description_and_default() -> None:
    result = run_bongard("strategies", "concept-selection")
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if "concepts" in line and "│" in line)
    assert "4" in row and "candidates" in row
    assert "exact match" in result.stdout
    assert "judges" in run_bongard("strategies", "direct").stdout
