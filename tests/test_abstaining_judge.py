"""A judging cannot zero a run: an answer on which every judge abstained is unjudged, never wrong,
a judge that gives no verdict on most answers is flagged where its judging is shown, and the
judging that counts is named wherever counts are read."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import httpx

from results.store import STORE_FILE, ResultsStore
from tests.browser import viewer_of
from tests.cli import run_bongard
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer


def echoes_its_instructions(body: Any) -> str:
    """What a tiny instruct model said as a judge: its system prompt again, no verdict line."""
    return "You check answers to Bongard problems. Be strict."


def perception_run(shared_data: Path, home: Path, *judging: str) -> str:
    """Five classic problems answered by the offline agent; the new run's id."""
    ran = run_bongard(
        "run", "--strategy", "direct", "--model", "perception", "--dataset", "bongard-classic",
        "--problems", "1-5", "--data-dir", shared_data, "--home", home, *judging,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return ResultsStore(home / STORE_FILE).resolve_run("latest")


def compared(run_id: str, home: Path) -> dict[str, str]:
    out = home / f"report-{run_id}-{len(list(home.iterdir()))}"
    result = run_bongard("compare", run_id, "--out", out, "--home", home)
    assert result.returncode == 0, result.stderr
    [row] = list(csv.DictReader((out / "comparison.csv").open(encoding="utf-8")))
    return row


def test_a_judge_that_abstains_on_everything_leaves_the_counted_judging_alone(
    shared_data: Path, tmp_path: Path
) -> None:
    run_id = perception_run(shared_data, tmp_path, "--judges", "embedding:0.3")
    store = ResultsStore(tmp_path / STORE_FILE)
    before = store.summary(run_id)
    assert before.scored == 5

    with StandInServer(OpenAIChat(), responder=echoes_its_instructions) as judge:
        judged = run_bongard(
            "judge", run_id, "--judges", f"openai-compatible:smol@{judge.url}/v1", "--home", tmp_path
        )
        asked = len(list(judge.model_requests()))
    printed = " ".join(judged.stdout.split())
    assert asked == 5 * 2  # each answer asked, and re-asked once for its verdict line
    assert judged.returncode == 4 and "0 answers judged" in printed  # none judged, as when every call fails
    assert "unjudged: 5 answer(s) on which every judge abstained or refused" in printed
    assert "[gave no verdict on 5 of 5: check this judge]" in printed
    assert "the run's counts use j-" in printed and "(the first complete judging)" in printed
    after = ResultsStore(tmp_path / STORE_FILE).summary(run_id)
    assert (after.scored, after.solved) == (before.scored, before.solved)  # not zeroed
    assert compared(run_id, tmp_path)["n"] == "5"
    shown = " ".join(run_bongard("runs", "show", run_id, "--home", tmp_path).stdout.split())
    assert (
        "judging strict|embedding:0.3@vote:1: " in shown and "(counts: the first complete judging)" in shown
    )


def test_answers_no_judge_voted_on_stay_unjudged_and_the_silent_judge_is_flagged_on_the_page(
    shared_data: Path, tmp_path: Path
) -> None:
    run_id = perception_run(shared_data, tmp_path)
    with StandInServer(OpenAIChat(), responder=echoes_its_instructions) as judge:
        smol = f"openai-compatible:smol@{judge.url}/v1"
        alone = run_bongard("judge", run_id, "--judges", smol, "--home", tmp_path)
        assert alone.returncode == 4, alone.stdout + alone.stderr
        summary = ResultsStore(tmp_path / STORE_FILE).summary(run_id)
        assert (summary.scored, summary.solved_text) == (0, "unjudged")  # unjudged, not 0 of 5
        row = compared(run_id, tmp_path)
        assert (row["n"], row["solved"]) == ("0", "")

        beside = run_bongard("judge", run_id, "--judges", f"embedding:0.3,{smol}", "--home", tmp_path)
    printed = " ".join(beside.stdout.split())
    assert beside.returncode == 0, printed
    assert "5 answers judged" in printed and "(the first complete judging)" in printed
    assert f"{smol}: 0 ok, 0 wrong, 5 abstain [gave no verdict on 5 of 5: check this judge]" in printed
    assert compared(run_id, tmp_path)["n"] == "5"  # the embedding judge's votes decide each answer
    with viewer_of(tmp_path / STORE_FILE) as base:
        page = httpx.get(f"{base}/runs/{run_id}/judgings", timeout=120).text
    assert "counts: the first complete judging" in page
    [flagged] = [line for line in page.splitlines() if "check this judge" in line]
    assert "smol" in flagged and "no verdict on 5 of 5" in flagged and "embedding" not in flagged
