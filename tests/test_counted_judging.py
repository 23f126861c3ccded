"""Which judging counts is chosen once and kept: stores judged before keep the one that counted
then, and a judging of the same judges under another policy (which replaces their decisions) counts
in the place of the one it replaced."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from datasets_io.records import Verdict
from results.store import PROVISIONAL, REPLACED, STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.test_scoring_rules import PROBLEMS, new_run, one_line_answer


def judged_twice(store: ResultsStore, shared_data: Path) -> str:
    """A free-form run of three answers: judged by a lenient judge, then by a strict one."""
    run_id = new_run(store, shared_data, "direct")
    for problem in PROBLEMS:
        store.save_item(run_id, problem, 0, one_line_answer(problem), None)
    for judge, ok in (("lenient", True), ("strict", False)):
        verdict = Verdict(judge=judge, label="ok" if ok else "wrong")
        for problem in PROBLEMS:
            store.save_judging(run_id, problem, 0, f"strict|{judge}", "vote:1", ok, [verdict])
    return run_id


def test_a_store_judged_before_judgings_were_chosen_keeps_the_one_that_counted_then(
    tmp_path: Path, shared_data: Path
) -> None:
    path = tmp_path / STORE_FILE
    store = ResultsStore(path)
    run_id = judged_twice(store, shared_data)
    counted = store.counted_judging(run_id)
    assert counted is not None and (counted.judging.name, counted.how) == (
        "strict|lenient@vote:1",
        PROVISIONAL,
    )
    assert store.summary(run_id).solved == 3  # none chosen, none complete by a judging run: the first
    with sqlite3.connect(path) as db:  # as the toolkit before migration 15 left it
        db.execute("DROP TABLE counted_judgings")
        db.execute("ALTER TABLE calls DROP COLUMN cache_read_tokens")  # migration 20
        db.execute("ALTER TABLE calls DROP COLUMN cache_write_tokens")
        db.execute("PRAGMA user_version = 14")
    store = ResultsStore(path)
    counted = store.counted_judging(run_id)
    assert counted is not None and counted.judging.name == "strict|strict@vote:1"  # the latest, as before
    assert store.summary(run_id).solved == 0


def test_the_same_judges_under_another_policy_count_in_the_place_of_the_judging_they_replace(
    shared_data: Path, tmp_path: Path
) -> None:
    ran = run_bongard(
        "run", "--strategy", "direct", "--model", "perception", "--dataset", "bongard-classic",
        "--problems", "1-3", "--data-dir", shared_data, "--home", tmp_path,
        "--judges", "embedding:0.3,embedding:0.99", "--policy", "any",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = store.resolve_run("latest")
    again = run_bongard(
        "judge", run_id, "--judges", "embedding:0.3,embedding:0.99", "--policy", "all", "--home", tmp_path
    )
    assert again.returncode == 0, again.stdout + again.stderr
    counted = store.counted_judging(run_id)
    assert counted is not None and counted.judging.name.endswith("@all")
    assert counted.how == f"{REPLACED} any"
    assert f"the one the run's counts use ({REPLACED} any)" in " ".join(again.stdout.split())
    assert [j.name.rpartition("@")[2] for j in store.judgings(run_id)] == ["all"]  # one decision per judges


def test_counting_a_run_never_judged_is_refused_in_one_line(shared_data: Path, tmp_path: Path) -> None:
    ran = run_bongard(
        "run", "--strategy", "direct", "--model", "perception", "--dataset", "bongard-classic",
        "--problems", "1", "--data-dir", shared_data, "--home", tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    refused = run_bongard("runs", "count", "latest", "j-000000", "--home", tmp_path)
    assert (
        refused.returncode == 2 and "has no judging yet: judge it with `bongard judge run-" in refused.stderr
    )
