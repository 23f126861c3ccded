"""A run says what state it is in: running, interrupted, complete, partial or failed (its word the
one its exit code says: 0 complete, 3 partial, 4 failed), never a partial count read as a whole
one; an interrupted run tells how to resume it."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from datasets_io.records import Answer, CallTrace, Verdict
from results.store import STORE_FILE, ResultsStore, run_status
from tests.cli import run_bongard

BONGARD = Path(sys.executable).parent / "bongard"


@pytest.mark.parametrize(
    ("planned", "stored", "failed", "finished", "held", "status"),
    [
        (10, 4, 0, False, True, "running"),
        (10, 4, 0, False, False, "interrupted"),
        (10, 10, 0, True, False, "complete"),
        (10, 10, 2, True, False, "partial"),  # some done: `bongard run` exits 3
        (10, 10, 10, True, False, "failed"),  # none done: exit 4
        (10, 7, 0, True, False, "interrupted"),  # a pass ended, but items it planned are missing
        (None, 3, 0, False, False, "interrupted"),  # a run stored before plans were kept
        (None, 3, 0, True, False, "complete"),
    ],
)
def test_the_status_rule(
    planned: int | None, stored: int, failed: int, finished: bool, held: bool, status: str
) -> None:
    assert run_status(planned, stored, failed, finished, held) == status


def test_a_run_held_by_a_process_that_is_gone_reads_interrupted(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = store.create_run({"strategy": "direct", "dataset": "d", "agents": {}}, "test")
    store.hold_run(run_id, planned=3)
    assert store.summary(run_id).status == "running"  # this process holds it
    answer = Answer(strategy="direct", problem="d/1", text="x")
    store.save_item(run_id, "d/1", 0, answer, None)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    with store.transaction() as db:  # as a SIGKILL leaves it: the owner set, its process gone
        db.execute(
            "UPDATE runs SET owner = substr(owner, 1, instr(owner, ':')) || ? WHERE id = ?",
            (gone.stdout.strip(), run_id),
        )
    summary = store.summary(run_id)
    assert (summary.status, summary.done, summary.planned) == ("interrupted", 1, 3)


def test_ctrl_c_keeps_what_is_done_and_says_how_to_resume(tmp_path: Path) -> None:
    """The embedded default run (the offline agent on 100 classic problems), interrupted early."""
    home = tmp_path / "home"
    running = subprocess.Popen(
        [str(BONGARD), "run", "--home", str(home)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.5)
        if (home / STORE_FILE).is_file() and ResultsStore(home / STORE_FILE).run_ids():
            store = ResultsStore(home / STORE_FILE)
            if store.summary(store.resolve_run("latest")).done >= 3:
                break
    running.send_signal(signal.SIGINT)
    _, stderr = running.communicate(timeout=60)
    assert running.returncode == 130, stderr
    run_id = ResultsStore(home / STORE_FILE).resolve_run("latest")
    assert f"resume with `bongard run --resume {run_id} --home {home}`" in stderr
    [listed] = json.loads(run_bongard("runs", "list", "--json", "--home", home).stdout)
    assert listed["status"] == "interrupted" and listed["planned"] == 100 and 3 <= listed["done"] < 100
    shown = run_bongard("runs", "show", run_id, "--home", home).stdout
    assert f"{run_id}: interrupted, {listed['done']}/100 items done" in shown
    assert f"resume with `bongard run --resume {run_id} --home {home}`" in shown


def test_an_unjudged_run_reads_unjudged_never_zero_and_every_rate_has_n_and_interval(
    shared_data: Path, tmp_path: Path
) -> None:
    pytest.importorskip("sentence_transformers")
    home = ("--home", tmp_path)
    ran = run_bongard(
        "run",
        "--strategy",
        "direct",
        "--model",
        "perception",
        "--dataset",
        "bongard-classic",
        "--problems",
        "1-4",
        "--data-dir",
        shared_data,
        *home,
    )
    assert ran.returncode == 0, ran.stderr
    table = " ".join(ran.stdout.split())
    assert "│ 4 │ 0 │ unjudged │ 0 │ - │" in table  # 4 problems, none scored or failed: no rate
    assert "4/4 items done, 0 failed, unjudged, 0 format errors" in " ".join(ran.stdout.split())
    assert "│ unjudged │" in run_bongard("runs", "list", *home).stdout

    def compared() -> dict[str, object]:
        out = tmp_path / f"report-{len(list(tmp_path.glob('report-*')))}"
        assert run_bongard("compare", "--out", out, *home).returncode == 0
        [row] = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
        assert (out / "accuracy.png").is_file()
        return dict(row)

    unjudged = compared()
    assert (unjudged["n"], unjudged["solved"], unjudged["accuracy"]) == (0, None, None)
    assert run_bongard("judge", "latest", "--judges", "embedding:0.01", *home).returncode == 0
    judged = compared()
    assert (judged["n"], judged["solved"], judged["accuracy"]) == (4, 4, 1.0)
    shown = " ".join(run_bongard("runs", "show", "latest", *home).stdout.split())
    assert "4 solved, 0 format errors" in shown and "judges: 4 verdicts, cost $0.0000" in shown
    assert (judged["accuracy_low"], judged["accuracy_high"]) == (0.51, 1.0)  # Wilson, 4 of 4


def test_the_version_is_printed() -> None:
    from importlib.metadata import version

    shown = run_bongard("--version")
    assert shown.returncode == 0 and shown.stdout.strip() == f"bongard-agents {version('bongard-agents')}"


def test_cost_counts_failed_items_and_judges_and_a_partly_judged_run_says_so(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = store.create_run({"strategy": "direct", "dataset": "d", "agents": {}}, "test")
    paid = CallTrace(
        role="reasoner",
        agent="a",
        task="answer",
        conversation="c",
        step=0,
        prompt="p",
        reply="r",
        cost_usd=0.25,
    )
    for number in (1, 2):
        answer = Answer(strategy="direct", problem=f"d/{number}", text="x", trace=[paid])
        store.save_item(run_id, f"d/{number}", 0, answer, None)
    store.save_item(run_id, "d/3", 0, None, "provider error", failed_trace=[paid])
    verdict = Verdict(judge="j", label="ok", raw_text="OK", input_tokens=1, output_tokens=1, cost_usd=0.5)
    store.save_judging(run_id, "d/1", 0, "strict|j", "vote:1", True, [verdict])
    summary = store.summary(run_id)
    assert (summary.cost_usd, summary.judge_cost_usd, summary.total_cost_usd) == (0.75, 0.5, 1.25)
    assert summary.solved_text == "1 solved of 1 scored (1 unjudged)"


def test_the_result_table_fits_100_columns_and_says_what_each_rate_divides(
    shared_data: Path, tmp_path: Path
) -> None:
    from rich.console import Console

    from graphs.cli.run import _result_table

    ran = run_bongard("run", "--problems", "1-2", "--data-dir", shared_data, "--home", tmp_path)
    assert ran.returncode == 0, ran.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(_result_table(store, store.resolve_run("latest")))
    text = console.export_text()
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 100
    said = " ".join(text.split())
    assert "images-to-sides · perception · bongard-classic" in said and "accuracy: solved / n" in said
