"""A judged run is read in work linear in its items: each item finds the judging that counts for its
run through an index, never by scanning every decision of the run (which made `bongard show` of a
5,000-item judged run take 19 s). The work is counted in SQLite's virtual-machine steps, which do not
move with the machine's load."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from datasets_io.records import Verdict
from results.report import items_frame
from results.report_rows import ITEMS_SQL
from results.store import STORE_FILE, ResultsStore
from tests.test_scoring_rules import new_run, one_line_answer

STEPS_PER_TICK = 100
SMALL, LARGE = 40, 160


def judged_run(path: Path, shared_data: Path, items: int) -> tuple[ResultsStore, str]:
    """A free-form run judged twice, the second judging (decided later) named as the one that counts:
    the case the run's first decision by time does not find."""
    store = ResultsStore(path)
    run_id = new_run(store, shared_data, "direct")
    for number in range(1, items + 1):
        store.save_item(
            run_id, f"bongard-classic/{number}", 0, one_line_answer(f"bongard-classic/{number}"), None
        )
    for judge, ok in (("lenient", True), ("strict", False)):
        verdict = Verdict(judge=judge, label="ok" if ok else "wrong")
        for number in range(1, items + 1):
            store.save_judging(
                run_id, f"bongard-classic/{number}", 0, f"strict|{judge}", "vote:1", ok, [verdict]
            )
    store.count_judging(run_id, "strict|strict@vote:1", "named")
    return store, run_id


def steps_to_read(path: Path) -> int:
    """SQLite steps (in ticks of `STEPS_PER_TICK`) to read every item's row as the reports do."""
    ticks = 0

    def tick() -> int:
        nonlocal ticks
        ticks += 1
        return 0

    with sqlite3.connect(path) as db:
        db.set_progress_handler(tick, STEPS_PER_TICK)
        db.execute(ITEMS_SQL, {"judging": None}).fetchall()
    return ticks


@pytest.mark.parametrize("counted", ["named", "first"])
def test_reading_a_judged_run_grows_with_its_items_not_their_square(
    tmp_path: Path, shared_data: Path, counted: str
) -> None:
    steps = {}
    for items in (SMALL, LARGE):
        path = tmp_path / str(items) / STORE_FILE
        store, run_id = judged_run(path, shared_data, items)
        if counted == "first":  # no judging chosen: the run's first by time counts
            with sqlite3.connect(path) as db:
                db.execute("DELETE FROM counted_judgings")
        frame = items_frame(store, [run_id])
        assert len(frame) == items
        assert frame["solved"].sum() == (0 if counted == "named" else items)  # the counted judging's say
        steps[items] = steps_to_read(path)
    growth = steps[LARGE] / steps[SMALL]
    assert growth < 2 * LARGE / SMALL, f"{SMALL} -> {LARGE} items: {growth:.1f}x the work ({steps})"


def test_the_items_of_one_run_are_read_without_the_others(tmp_path: Path, shared_data: Path) -> None:
    store, judged = judged_run(tmp_path / STORE_FILE, shared_data, 3)
    other = new_run(store, shared_data, "direct")
    store.save_item(other, "bongard-classic/9", 0, one_line_answer("bongard-classic/9"), None)
    assert list(items_frame(store, [other])["problem"]) == ["bongard-classic/9"]
    assert list(items_frame(store, [judged, other])["run_id"]) == [judged] * 3 + [other]
