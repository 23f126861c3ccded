"""The survey kept between runs: used while nothing it read has changed, made afresh when a problem
folder is added or the concept table beside the dataset changes, never kept for a loader that cannot
name what it reads outside its folder, nor where what it read changed after it began.

The state a kept survey is checked by is taken after the survey (a run's first call does not wait
for it), so a survey is kept only where everything it read is older than its start by a little:
the files these tests write are dated a second back (`aged`), as files written before a run are."""

from __future__ import annotations

from pathlib import Path

import pytest

from datasets_io.catalog import open_dataset
from datasets_io.loaders.rwr_plus import RwrPlusLoader
from datasets_io.problem import Concept, ProblemSummary
from datasets_io.survey_cache import cached_survey
from tests.builders import aged
from tests.rwr_plus_releases import LABELS, counted_loads, upstream_folders, write_labels


def test_a_kept_survey_is_used_until_a_problem_or_the_table_beside_the_dataset_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data" / "bongard-rwr-plus"
    upstream_folders(root, [1, 2])
    labels = write_labels(
        tmp_path / "data" / "labels.csv", LABELS
    )  # beside the dataset, as upstream keeps it
    loads = counted_loads(monkeypatch)

    def survey() -> list[tuple[str, Concept | None]]:
        aged(tmp_path / "data")
        dataset = open_dataset("bongard-rwr-plus", tmp_path / "data")
        return [(p.id, p.concept) for p in cached_survey(dataset, tmp_path / "surveys").problems]

    first = survey()
    assert first == [
        ("1", Concept(left="Circles", right="Squares")),
        ("2", Concept(left="Open figures", right="Closed figures")),
    ]
    assert loads == ["1", "2"] and len(list((tmp_path / "surveys").glob("*.json"))) == 1
    assert survey() == first and loads == ["1", "2"]  # kept: no problem read again
    (root / "1" / "left" / "0.jpg").write_bytes(b"another image")  # an image's contents: not surveyed
    assert survey() == first and loads == ["1", "2"]
    upstream_folders(root, [3])  # a problem added
    assert [problem_id for problem_id, _ in survey()] == ["1", "2", "3"] and loads[2:] == ["1", "2", "3"]
    write_labels(labels, [["1", "Dots", "Lines"], *LABELS[1:]])  # the table outside the folder
    assert survey()[0] == ("1", Concept(left="Dots", right="Lines"))
    read = len(loads)
    notes = root / "2" / "left" / "notes.txt"
    notes.write_text("drawn by hand")  # a file beside the images: its folder's mtime moves
    survey()
    assert len(loads) == read + 3
    survey()
    assert len(loads) == read + 3  # kept again, checked by a stat of each folder and file
    notes.write_text("drawn by hand, twice")  # edited in place: its folder's mtime stays, its own moves
    survey()
    assert len(loads) == read + 6


def test_a_loader_that_cannot_name_its_inputs_is_surveyed_afresh_and_nothing_is_kept(
    shared_data: Path, tmp_path: Path
) -> None:
    dataset = open_dataset("bongard-classic", shared_data)
    assert dataset.loader.survey_inputs() is None  # it reads rules from folders beside its own
    assert len(cached_survey(dataset, tmp_path / "surveys").problems) == 100
    assert not (tmp_path / "surveys").exists()


def test_a_survey_is_not_kept_where_what_it_read_changed_after_it_began(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A problem folder that gains a file while the survey runs (after the survey began, before the
    state it is kept with is taken) leaves the survey unkept: the next survey reads every problem."""
    root = tmp_path / "data" / "bongard-rwr-plus"
    upstream_folders(root, [1, 2])
    write_labels(tmp_path / "data" / "labels.csv", LABELS)
    aged(tmp_path / "data")
    summary = RwrPlusLoader.summary

    def changing(self: RwrPlusLoader, problem_id: str) -> ProblemSummary:
        if problem_id == "2":
            (root / "1" / "left" / "notes.txt").write_text("added while the survey runs")
        return summary(self, problem_id)

    monkeypatch.setattr(RwrPlusLoader, "summary", changing)
    cached_survey(open_dataset("bongard-rwr-plus", tmp_path / "data"), tmp_path / "surveys")
    assert list((tmp_path / "surveys").glob("*.json")) == []
    monkeypatch.setattr(RwrPlusLoader, "summary", summary)
    aged(tmp_path / "data")
    cached_survey(open_dataset("bongard-rwr-plus", tmp_path / "data"), tmp_path / "surveys")
    assert len(list((tmp_path / "surveys").glob("*.json"))) == 1  # unchanged since: kept
