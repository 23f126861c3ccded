"""One scoring rule per strategy kind, the same in every view of a run (constructed stores).

Free-form answers are unjudged until a judging decides them, whatever their format; an exactly
scored reply that did not parse is wrong, counted as a format error; a failed item is outside n,
counted apart as failed, in `runs show`, `runs list`, `compare`, `show`, the viewer and the export.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from datasets_io.records import Answer, CallTrace, Verdict
from graphs.view.data import item_rows, run_results
from results.store import MIGRATIONS, STORE_FILE, ResultsStore
from tests.cli import run_bongard

PROBLEMS = ("bongard-classic/1", "bongard-classic/2", "bongard-classic/3")
ONE_LINE = "Left: one figure. Right: two figures."  # no `Left:`/`Right:` lines of their own


def call(reply: str) -> CallTrace:
    return CallTrace(
        role="reasoner",
        agent="scripted:model",
        task="answer",
        conversation="c",
        step=0,
        prompt="Rule?",
        reply=reply,
        input_tokens=10,
        output_tokens=5,
        cost_usd=0.001,
    )


def one_line_answer(problem: str) -> Answer:
    return Answer(
        strategy="direct",
        problem=problem,
        text=ONE_LINE,
        parse_status="failed",
        parse_error="no 'Left: ...' and 'Right: ...' lines in the answer",
        trace=[call(ONE_LINE)],
    )


def new_run(store: ResultsStore, shared_data: Path, strategy: str) -> str:
    config = {
        "strategy": strategy,
        "dataset": "bongard-classic",
        "data_dir": str(shared_data),
        "agents": {"reasoner": "scripted:model"},
        "attempts": 1,
    }
    run_id = store.create_run(config, "test")
    store.hold_run(run_id, planned=len(PROBLEMS))
    return run_id


def compared(home: Path, run_id: str) -> dict[str, Any]:
    out = home / f"report-{run_id}"
    ran = run_bongard("compare", run_id, "--out", out, "--home", home, "--include-incomplete")
    assert ran.returncode == 0, ran.stderr
    [row] = json.loads((out / "comparison.json").read_text())
    return dict(row)


def listed(home: Path, run_id: str) -> dict[str, Any]:
    runs = json.loads(run_bongard("runs", "list", "--json", "--home", home).stdout)
    return dict(next(r for r in runs if r["id"] == run_id))


def exported(home: Path, run_id: str) -> Any:
    inspect_log = pytest.importorskip("inspect_ai.log")
    ran = run_bongard("export", run_id, "--out", home / "logs", "--home", home)
    assert ran.returncode == 0, ran.stderr
    return inspect_log.read_eval_log(str(home / "logs" / f"{run_id}.eval"))


def test_a_one_line_free_form_answer_is_unjudged_before_judging_and_solved_after(
    tmp_path: Path, shared_data: Path
) -> None:
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = new_run(store, shared_data, "direct")
    for problem in PROBLEMS:
        store.save_item(run_id, problem, 0, one_line_answer(problem), None)
    store.release_run(run_id, finished=True)

    summary = store.summary(run_id)
    assert (summary.solved_text, summary.format_errors) == ("unjudged", 0)
    row = compared(tmp_path, run_id)
    assert (row["n"], row["solved"], row["accuracy"], row["format_errors"]) == (0, None, None, 0)
    assert listed(tmp_path, run_id)["scored"] == 0
    [viewed] = run_results(store, [run_id])[0].values()
    assert viewed.solved_text == "unjudged"
    items = item_rows(store, run_id)
    assert {(i.verdict, i.note) for i in items} == {("unjudged", "no Left:/Right: lines")}
    shown = run_bongard("show", run_id, "--home", tmp_path)
    assert shown.stdout.count("unjudged (no Left:/Right: lines)") == 3 and "format error" not in shown.stdout
    log = exported(tmp_path, run_id)
    assert log.results.scores[0].unscored_samples == 3

    for problem in PROBLEMS:
        accepted = Verdict(judge="scripted:judge", label="ok", raw_text="EVALUATION: OK")
        store.save_judging(run_id, problem, 0, "strict|scripted:judge", "vote:1", True, [accepted])
    summary = store.summary(run_id)
    assert (summary.solved_text, summary.format_errors) == ("3 solved", 0)
    row = compared(tmp_path, run_id)
    assert (row["n"], row["solved"], row["accuracy"], row["format_errors"]) == (3, 3, 1.0, 0)
    items = item_rows(store, run_id)
    assert {(i.verdict, i.note) for i in items} == {("solved", "no Left:/Right: lines")}
    log = exported(tmp_path, run_id)
    assert log.results.scores[0].scored_samples == 3
    assert all(s.scores["solved"].value == "C" for s in log.samples)


def test_an_all_failed_run_has_n_0_and_3_failed_everywhere(tmp_path: Path, shared_data: Path) -> None:
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = new_run(store, shared_data, "images-to-sides")
    for problem in PROBLEMS:
        store.save_item(run_id, problem, 0, None, "provider error: 503", [call("")])
    store.release_run(run_id, finished=True)

    summary = store.summary(run_id)
    assert (summary.failed, summary.scored, summary.retryable) == (3, 0, 3)
    row = compared(tmp_path, run_id)
    assert (row["n"], row["failed"], row["solved"], row["accuracy"]) == (0, 3, None, None)
    assert row["cost_usd"] == pytest.approx(0.003)  # the calls they paid for still count
    assert (listed(tmp_path, run_id)["failed"], listed(tmp_path, run_id)["scored"]) == (3, 0)
    [viewed] = run_results(store, [run_id])[0].values()
    assert (viewed.n, viewed.solved_text) == (0, "-")  # nothing to judge: every problem failed
    assert {i.verdict for i in item_rows(store, run_id)} == {"failed"}
    shown = run_bongard("runs", "show", run_id, "--home", tmp_path)
    assert "3 failed" in shown.stdout and "retries the 3 failed items a retry can help" in shown.stdout
    log = exported(tmp_path, run_id)
    assert log.results.scores[0].scored_samples == 0
    assert all(s.error is not None and not s.scores for s in log.samples)


def test_an_exactly_scored_reply_that_did_not_parse_is_a_format_error_and_wrong(
    tmp_path: Path, shared_data: Path
) -> None:
    from agents.call import AgentReply
    from graphs.nodes import label_answer

    unparsed = AgentReply(
        agent="scripted:model",
        text="I think it is the second one",
        parse_status="failed",
        parse_error="no JSON",
    )
    parts = label_answer(unparsed, "concept", 2)
    assert (parts.correct, parts.parse_status) == (False, "failed")
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = new_run(store, shared_data, "concept-selection")
    answer = Answer(
        strategy="concept-selection", problem=PROBLEMS[0], trace=[call(unparsed.text)], **dict(parts)
    )
    store.save_item(run_id, PROBLEMS[0], 0, answer, None)
    summary = store.summary(run_id)
    assert (summary.scored, summary.solved, summary.format_errors) == (1, 0, 1)
    assert [(i.verdict, i.note) for i in item_rows(store, run_id)] == [("wrong", "format error")]


def test_an_older_store_scores_its_unparsed_exact_answers_wrong_and_leaves_free_form_unjudged(
    tmp_path: Path, shared_data: Path
) -> None:
    """Stores written before the rule kept an unparsed exact answer's `correct` empty."""
    path = tmp_path / STORE_FILE
    store = ResultsStore(path)
    exact = new_run(store, shared_data, "concept-selection")
    selection = Answer(
        strategy="concept-selection",
        problem=PROBLEMS[0],
        text="?",
        expected={"label": 2},
        parse_status="failed",
    )
    store.save_item(exact, PROBLEMS[0], 0, selection, None)
    free = new_run(store, shared_data, "direct")
    store.save_item(free, PROBLEMS[0], 0, one_line_answer(PROBLEMS[0]), None)
    with sqlite3.connect(path) as db:  # as the older toolkit stored them
        db.execute("UPDATE items SET correct = NULL")
        db.execute("ALTER TABLE items DROP COLUMN retryable")  # migration 11
        db.execute("ALTER TABLE verdicts DROP COLUMN prompt")  # migration 12
        db.execute("DROP TABLE experiment_cells")  # migration 13
        db.execute("DROP TABLE experiments")
        db.execute("ALTER TABLE verdicts DROP COLUMN reason")  # migration 14
        db.execute("DROP TABLE counted_judgings")  # migration 15
        db.execute("DROP INDEX decisions_by_judging")  # migration 16
        db.execute("DROP INDEX decisions_by_time")
        db.execute("DROP TABLE studies")  # migration 17
        db.execute("DROP TABLE study_participants")  # migration 18
        db.execute("DROP TABLE study_answers")
        db.execute("DROP TABLE study_labels")  # migration 19
        db.execute("ALTER TABLE calls DROP COLUMN cache_read_tokens")  # migration 20
        db.execute("ALTER TABLE calls DROP COLUMN cache_write_tokens")
        db.execute("PRAGMA user_version = 9")  # before migration 10 scored unparsed exact answers wrong
    assert len(MIGRATIONS) == 20
    store = ResultsStore(path)
    assert (store.summary(exact).scored, store.summary(exact).format_errors) == (1, 1)
    [(_, _, migrated)] = store.answer_records(exact)
    assert migrated.correct is False
    assert (store.summary(free).scored, store.summary(free).solved_text) == (0, "unjudged")
