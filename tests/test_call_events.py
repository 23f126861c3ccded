"""A run says how many requests it sent again and how many of those ran out of time, with what to
do about a slow server, instead of a progress line that sits still while every call is retried."""

from __future__ import annotations

from pathlib import Path

from agents.call_events import CallEvents
from tests.cli import run_bongard
from tests.standins.protocols import OpenAIChat
from tests.standins.server import Fault, StandInServer

SLOW_DOWN = Fault(429, {"retry-after": "0"}, '{"error": {"message": "slow down"}}')
HANG = Fault(hang_s=5.0)


def run_against(server: StandInServer, shared_data: Path, home: Path, *more: str) -> str:
    ran = run_bongard(
        "run", "--strategy", "direct", "--model", f"openai-compatible:m@{server.url}/v1", *more,
        "--dataset", "bongard-classic", "--problems", "1-2", "--concurrency", "1",
        "--data-dir", shared_data, "--home", home,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return " ".join(ran.stderr.split())


def test_requests_sent_again_are_counted_and_said(shared_data: Path, tmp_path: Path) -> None:
    with StandInServer(OpenAIChat(), responder=lambda body: "Left: a\nRight: b") as server:
        server.fault_policy = lambda index: SLOW_DOWN if index < 2 else None
        said = run_against(server, shared_data, tmp_path)
    assert "retried: 2 request attempt(s) sent again" in said and "ran out of time" not in said


def test_a_request_that_ran_out_of_time_is_said_with_the_fix(shared_data: Path, tmp_path: Path) -> None:
    with StandInServer(OpenAIChat(), responder=lambda body: "Left: a\nRight: b") as server:
        server.fault_policy = lambda index: HANG if index == 0 else None
        said = run_against(server, shared_data, tmp_path, "-M", "timeout_s=1")
    assert "retried: 1 request attempt(s) sent again; 1 ran out of time" in said  # counted afresh per run
    assert "a slow server wants -M timeout_s=N" in said


def test_the_progress_words_stay_empty_until_a_request_is_sent_again() -> None:
    events = CallEvents()
    assert events.words() == "" and events.line() == ""
    events.retries, events.timeouts = 3, 2
    assert events.words() == "3 retried (2 timed out)"
