"""`bongard show` prints what a run answered, how it was scored and every call; `runs delete`
removes a run and all it stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard


@pytest.fixture
def home(shared_data: Path, tmp_path: Path) -> Path:
    """A judged run (classic 1-2) and an unjudged one (classic 3), by the offline agent."""
    pytest.importorskip("sentence_transformers")
    for problems in ("1-2", "3"):
        ran = run_bongard(
            "run",
            "--strategy",
            "direct",
            "--model",
            "perception",
            "--dataset",
            "bongard-classic",
            "--problems",
            problems,
            "--data-dir",
            shared_data,
            "--home",
            tmp_path,
        )
        assert ran.returncode == 0, ran.stderr
        if problems == "1-2":
            assert (
                run_bongard("judge", "latest", "--judges", "embedding:0.01", "--home", tmp_path).returncode
                == 0
            )
    return tmp_path


def runs(home: Path) -> list[str]:
    return ResultsStore(home / STORE_FILE).run_ids()


def test_show_lists_each_item_with_its_outcome(home: Path) -> None:
    judged, unjudged = runs(home)
    listed = run_bongard("show", judged, "--home", home).stdout
    assert "bongard-classic/1" in listed and "bongard-classic/2" in listed and "solved" in listed
    assert "unjudged" in run_bongard("show", unjudged, "--home", home).stdout


def test_show_of_a_problem_gives_answer_concept_judges_and_calls(home: Path) -> None:
    judged, _ = runs(home)
    shown = run_bongard("show", judged, "1", "--calls", "--home", home)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "bongard-classic/1, attempt 0: solved" in text
    assert "true concept: Left: Empty picture / Right: Not empty picture" in text
    assert "judging: accepted" in text and "embedding:0.01: ok" in text
    assert "call 0 reasoner perception" in text and "prompt:" in text and "reply:" in text
    assert "image 1: the sheet of 12 panels (left-0, left-1," in text  # what the call sent
    [judging] = ResultsStore(home / STORE_FILE).judgings(judged)
    by_id = run_bongard("show", judged, "1", "--judging", judging.short_id, "--home", home)
    assert by_id.returncode == 0 and "judging: accepted" in by_id.stdout
    missing = run_bongard("show", judged, "77", "--home", home)
    said = " ".join(missing.stderr.replace("│", " ").split())  # the error box wraps the line
    assert missing.returncode == 2 and "no item for problem bongard-classic/77" in said


def test_runs_delete_removes_the_run_and_all_it_stored(home: Path) -> None:
    judged, unjudged = runs(home)
    store = ResultsStore(home / STORE_FILE)
    store.hold_run(unjudged, planned=1)  # held by this (live) process: running
    refused = run_bongard("runs", "delete", unjudged, "--yes", "--home", home)
    assert refused.returncode == 2 and "is running" in refused.stderr
    store.release_run(unjudged, finished=True)
    deleted = run_bongard("runs", "delete", judged, "--yes", "--home", home)
    assert deleted.returncode == 0 and f"deleted run {judged}" in deleted.stdout
    assert runs(home) == [unjudged]
    with store.reading() as db:
        for table in ("items", "calls", "verdicts", "decisions"):
            assert db.execute(f"SELECT COUNT(*) FROM {table} WHERE run_id = ?", (judged,)).fetchone()[0] == 0


def test_the_answer_column_gives_the_chosen_against_the_true_side_or_label() -> None:
    from datasets_io.records import Answer
    from graphs.cli.show import answer_summary

    sides = Answer(
        strategy="images-to-sides",
        problem="p",
        text='{"first": {"explanation": "long"}}',
        sides={"left-test-5": "left", "right-test-5": "left"},
        expected={"sides": {"left-test-5": "left", "right-test-5": "right"}},
    )
    assert answer_summary(sides) == "left-test-5 left, right-test-5 left (true right)"
    label = Answer(strategy="concept-selection", problem="p", text="...", label=2, expected={"label": 3})
    assert answer_summary(label) == "2 (true 3)"
    free = Answer(strategy="direct", problem="p", text="Left: circles\nRight: squares")
    assert answer_summary(free) == "Left: circles"


def test_a_run_found_in_the_default_data_folder_is_read_back_from_any_folder(
    classic_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`./data` is found from where `run` runs; the run keeps it as an absolute path, so `show` and
    `export` started elsewhere still find its problems (they ended in "data directory data does not
    exist")."""
    monkeypatch.delenv("BONGARD_DATA", raising=False)
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    elsewhere.mkdir()
    ran = run_bongard(
        "run",
        "--strategy",
        "images-to-sides",
        "--model",
        "perception",
        "--dataset",
        "bongard-classic",
        "-O",
        "holdout_test=true",
        "--problems",
        "1",
        "--home",
        home,
        cwd=classic_copy.parent,
    )
    assert ran.returncode == 0, ran.stderr
    [run_id] = ResultsStore(home / STORE_FILE).run_ids()
    assert ResultsStore(home / STORE_FILE).run_config(run_id)["data_dir"] == str(classic_copy.resolve())
    shown = run_bongard("show", run_id, "1", "--home", home, cwd=elsewhere)
    assert shown.returncode == 0 and "true concept: Left:" in shown.stdout


def test_the_item_list_comes_a_page_at_a_time(home: Path) -> None:
    """A table of 5,000 items took Rich 3.8 s to draw (issue 34): `show` lists a page of them."""
    judged, _ = runs(home)
    first = run_bongard("show", judged, "--per-page", "1", "--home", home).stdout
    assert "bongard-classic/1" in first and "bongard-classic/2" not in first
    assert "items 1-1 of 2; --page 2 shows the next; --per-page 0 shows all" in first
    second = run_bongard("show", judged, "--per-page", "1", "--page", "2", "--home", home).stdout
    assert "bongard-classic/2" in second and "items 2-2 of 2; --per-page 0 shows all" in second
    whole = run_bongard("show", judged, "--per-page", "0", "--home", home).stdout
    assert "bongard-classic/1" in whole and "bongard-classic/2" in whole and "items " not in whole
    beyond = run_bongard("show", judged, "--page", "3", "--home", home).stdout
    assert "no items on page 3: the run has 2 (--page 1)" in beyond
