"""A judging cannot zero a run: an answer on which every judge abstained is unjudged, never wrong,
and a judge that gives no verdict on most answers is flagged where its judging is shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer


def echoes_its_instructions(body: Any) -> str:
    """What a tiny instruct model said as a judge: its system prompt again, no verdict line."""
    return "You check answers to Bongard problems. Be strict."


def test_a_judge_that_abstains_on_everything_leaves_the_counted_judging_alone(
    shared_data: Path, tmp_path: Path
) -> None:
    ran = run_bongard(
        "run", "--strategy", "direct", "--model", "perception", "--dataset", "bongard-classic",
        "--problems", "1-5", "--data-dir", shared_data, "--home", tmp_path, "--judges", "embedding:0.3",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = store.resolve_run("latest")
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
    after = ResultsStore(tmp_path / STORE_FILE).summary(run_id)
    assert (after.scored, after.solved) == (before.scored, before.solved)  # not zeroed
