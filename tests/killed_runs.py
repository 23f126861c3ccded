"""Real `bongard run` processes against a stand-in OpenAI server, to be raced, killed and resumed.

Calls are sampled (temperature 0.7), so the response cache never answers one: every call a run
makes is a request the server records.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from results.store import STORE_FILE, ResultsStore, RunSummary
from tests.cli import BONGARD
from tests.standins.server import StandInServer


def respond(body: dict[str, object]) -> str:
    """A plausible reply for every case-study prompt: a rule pair where an answer is asked for."""
    return "Left: one line\nRight: two lines"


def run_args(server: StandInServer, home: Path, data: Path, strategy: str, problems: str) -> list[str]:
    return [
        "run", "--strategy", strategy, "--model", f"openai-compatible:solver@{server.url}/v1",
        "--dataset", "bongard-rwr", "--data-dir", str(data), "--home", str(home),
        "--problems", problems, "-M", "temperature=0.7",
    ]  # fmt: skip


def start(*args: str) -> subprocess.Popen[str]:
    """`bongard ARGS` as its own process, as a shell starts it."""
    return subprocess.Popen([str(BONGARD), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def summaries(home: Path) -> list[RunSummary]:
    """Every stored run's summary, oldest first (none before the store exists)."""
    if not (home / STORE_FILE).is_file():
        return []
    store = ResultsStore(home / STORE_FILE)
    try:
        return [store.summary(run_id) for run_id in store.run_ids()]
    finally:
        store.close()


def kill(process: subprocess.Popen[str]) -> None:
    """SIGKILL: no handler runs, the run stays held by a process that is gone."""
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(0.2)  # what was in flight reaches the server
