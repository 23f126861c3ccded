"""Refusals are outcomes: an answer the model refused (or a filter blocked) is never sent to a judge
nor paid for, counts in n as unsolved, and shows as the refused share beside accuracy; a judge that
refuses to judge is stored as a refusal with the provider's words and is no vote."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.protocols import REFUSAL_TEXT, OpenAIChat
from tests.standins.server import StandInServer

ANSWER = "Left: the figures are circles\nRight: the figures are not circles"
REFUSED_PROBLEMS = 2
"""The model refuses its first two requests (problems answered one by one, `--concurrency 1`)."""


def judged_ok(body: Any) -> str:
    return "The answer names the concept.\nEVALUATION: OK"


def test_refused_answers_are_never_judged_and_count_unsolved_beside_a_refused_share(
    shared_data: Path, tmp_path: Path
) -> None:
    with (
        StandInServer(OpenAIChat(), responder=lambda body: ANSWER) as model,
        StandInServer(OpenAIChat(), responder=judged_ok) as judge,
    ):
        model.finisher = lambda index: "refusal" if index < REFUSED_PROBLEMS else "stop"
        judge.finisher = lambda index: "refusal" if index == first_request_of(judge, "first") else "stop"
        judges = f"openai-compatible:first@{judge.url}/v1,openai-compatible:second@{judge.url}/v1"
        ran = run_bongard(
            "run", "--strategy", "direct", "--model", f"openai-compatible:m@{model.url}/v1",
            "--dataset", "bongard-classic", "--problems", "1-5", "--concurrency", "1",
            "--data-dir", shared_data, "--home", tmp_path, "--judges", judges, "--policy", "majority",
        )  # fmt: skip
        judged_bodies = [request.body for request in judge.model_requests()]
    assert ran.returncode == 0, ran.stdout + ran.stderr
    printed = " ".join(ran.stdout.split())
    assert "not sent to the judges: 2 answer(s) the model refused or a filter blocked" in printed
    assert len(judged_bodies) == 2 * (5 - REFUSED_PROBLEMS)  # two judges, the three answers only
    assert all(REFUSAL_TEXT not in str(body) for body in judged_bodies)
    assert "1 refused to judge" in printed

    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = store.resolve_run("latest")
    summary = store.summary(run_id)
    assert (summary.scored, summary.solved, summary.stopped) == (5, 3, {"refused": 2})
    assert summary.judge_verdicts == 6
    with store.reading() as db:
        refusals = db.execute("SELECT judge, reason FROM verdicts WHERE label = 'refused'").fetchall()
    assert refusals == [
        (
            f"openai-compatible:first@{judge_url(judges)}",
            f"the judge's reply was refused: refusal: {REFUSAL_TEXT}",
        )
    ]  # the other judge's ok alone decides that answer under majority: a refusal is no vote

    compared = run_bongard("compare", run_id, "--answered", "--out", tmp_path / "report", "--home", tmp_path)
    assert compared.returncode == 0, compared.stderr
    [row] = list(csv.DictReader((tmp_path / "report" / "comparison.csv").open(encoding="utf-8")))
    assert (row["n"], row["solved"], row["accuracy"], row["refused_share"]) == ("5", "3", "0.6", "0.4")
    assert (row["answered"], row["answered_accuracy"]) == ("3", "1.0")
    assert "refused_share" in compared.stdout and "answered_accuracy" in compared.stdout


def first_request_of(server: StandInServer, model: str) -> int | None:
    """The index of the first request naming `model` (the judges are asked concurrently)."""
    return next((i for i, request in enumerate(server.requests) if request.body.get("model") == model), None)


def judge_url(judges: str) -> str:
    """The first judge's URL, as its spec names it."""
    return judges.split(",")[0].split("@", 1)[1]


def judged_wrong(body: Any) -> str:
    return "The answer misses the concept.\nEVALUATION: WRONG"


def test_a_refused_early_call_a_strategy_got_past_leaves_its_answer_judged_and_answered(
    shared_data: Path, tmp_path: Path
) -> None:
    """An item is refused where its last call was (the call its answer came from), in the judging,
    the outcome and the refused share alike: one rule, not one per report."""
    with (
        StandInServer(OpenAIChat(), responder=lambda body: ANSWER) as model,
        StandInServer(OpenAIChat(), responder=judged_wrong) as judge,
    ):
        model.finisher = lambda index: "refusal" if index == 0 else "stop"
        ran = run_bongard(
            "run", "--strategy", "descriptive", "--model", f"openai-compatible:m@{model.url}/v1",
            "--dataset", "bongard-classic", "--problems", "1", "--concurrency", "1",
            "--data-dir", shared_data, "--home", tmp_path, "--judges", f"openai-compatible:j@{judge.url}/v1",
        )  # fmt: skip
        calls = len(list(model.model_requests()))
        judged = len(list(judge.model_requests()))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert calls > 1 and judged == 1  # the describe call was refused; the answer after it was judged
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = store.resolve_run("latest")
    with store.reading() as db:
        stops = [row[0] for row in db.execute("SELECT stop FROM calls ORDER BY seq").fetchall()]
    assert stops[0] == "refused" and stops[-1] != "refused"
    summary = store.summary(run_id)
    assert (summary.scored, summary.solved, summary.stopped) == (1, 0, {})  # wrong, not refused
    compared = run_bongard("compare", run_id, "--out", tmp_path / "report", "--home", tmp_path)
    assert compared.returncode == 0, compared.stderr
    [row] = list(csv.DictReader((tmp_path / "report" / "comparison.csv").open(encoding="utf-8")))
    assert (row["solved"], row["refused_share"]) == ("0", "0.0")
