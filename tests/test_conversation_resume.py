"""A conversation killed part way resumes after its last answered turn: no call that had returned is
made again (issue 18, item 4). Before, a conversation was one graph node, so a kill repaid every
finished turn: 5 of 5 for contrastive-iterative, 10 of 10 for descriptive-iterative.

A real `bongard run` process talks to a stand-in server that answers the first `answered` requests
and holds every later one; once those are answered and the rest hang, the process is SIGKILLed and
the run resumed. Calls in flight at the kill (the held ones) are made again; they are counted apart.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from graphs.runs.checkpoints import checkpointed_calls
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.killed_runs import kill, run_args, start, wait_for
from tests.standins.schema_replies import minimal_reply
from tests.standins.server import Fault, StandIn, StandInServer

HELD = Fault(delay_s=20)
"""A request held past the kill (its late reply goes to a dead process)."""
LONG_SUMMARY = " ".join(["word"] * 25)


def respond(body: Any) -> str:
    """The least valid reply (both test images on one side, so a same-side re-ask follows), with
    a rule summary over 20 words (so a long-summary re-ask follows)."""
    reply = minimal_reply(body)
    if reply.startswith("{") and "summary" in (parsed := json.loads(reply)):
        return json.dumps({**parsed, "summary": LONG_SUMMARY})
    return reply


@pytest.fixture
def server(standin: StandIn) -> StandInServer:
    return standin(responder=respond)


CONVERSATIONS = [
    ("contrastive-iterative", 5, ()),
    ("descriptive-iterative", 10, ()),  # both sides at turn 5
    ("descriptive-iterative", 5, ()),  # one side's turn 3 answered, the other's held
    ("images-to-sides", 1, ("-S", "retry_same_side=true")),
    ("deductive-rule-learning", 1, ("-S", "reask_long_summary=true")),
]


@pytest.mark.parametrize(("strategy", "answered", "options"), CONVERSATIONS)
def test_a_conversation_killed_mid_way_resumes_without_repeating_an_answered_call(
    strategy: str,
    answered: int,
    options: tuple[str, ...],
    server: StandInServer,
    tmp_path: Path,
    shared_data: Path,
) -> None:
    server.latency_s = 0.05
    server.fault_policy = lambda index: HELD if index >= answered else None
    running = start(*run_args(server, tmp_path, shared_data, strategy, "31"), *options)

    def only_held_in_flight() -> bool:
        return len(server.requests) > answered and server.in_flight == len(server.requests) - answered

    wait_for(only_held_in_flight, f"{answered} answered calls and the next held")
    time.sleep(0.5)  # the answered calls' checkpoints are written
    assert only_held_in_flight()
    kill(running)
    sent_before = len(list(server.model_requests()))
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = store.resolve_run("latest")
    kept = asyncio.run(checkpointed_calls(tmp_path, run_id, strategy))

    server.fault_policy = None
    resumed = run_bongard("run", "--resume", run_id, "--home", tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    final = store.summary(run_id)
    sent_after = len(list(server.model_requests())) - sent_before
    repeated = sent_after - (final.calls - answered)  # answered calls sent again
    in_flight = sent_before - answered
    print(f"{strategy} killed after {answered}: {repeated} answered calls repeated, {in_flight} in flight")
    assert (final.done, final.cached_calls) == (1, 0)
    assert kept == answered and repeated == 0
