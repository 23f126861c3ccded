"""One process runs a run at a time: a second is refused, naming the first; `--resume latest` takes
the latest run no live process holds and says which; the run of a killed process is taken over.

Issue 18, item 3: before the lock, `--resume latest` beside a live run resumed that same run (260
requests for a run needing 130) and the killed run was never resumed.
"""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from graphs.runs.checkpoints import checkpointed_calls
from results.store import STORE_FILE, ResultsStore, StoreError
from tests.cli import run_bongard
from tests.killed_runs import kill, respond, run_args, start, summaries, wait_for
from tests.standins.server import StandIn, StandInServer

CONFIG = {"strategy": "descriptive", "dataset": "bongard-rwr", "agents": {"reasoner": "m"}}


def held_by(run_id: str, pid: int) -> str:
    return rf"run {run_id} is being run by process {pid} on host {re.escape(socket.gethostname())}"


def test_a_run_held_by_a_live_process_is_refused_and_a_killed_holders_run_taken_over(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / STORE_FILE)
    older, newer = store.create_run(CONFIG, "test"), store.create_run(CONFIG, "test")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys\n"
                "from pathlib import Path\n"
                "from results.store import ResultsStore\n"
                f"ResultsStore(Path({str(store.path)!r})).hold_run({newer!r}, planned=2)\n"
                "print('held', flush=True)\n"
                "sys.stdin.read()\n"
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(StoreError, match=held_by(newer, holder.pid)):
        store.hold_run(newer, planned=2)
    with pytest.raises(StoreError, match=held_by(newer, holder.pid)):
        store.resolve_run(newer, resumable=True)
    assert store.resolve_run("latest") == newer  # reading: the newest, running or not
    assert store.resolve_run("latest", resumable=True) == older
    store.delete_run(older)
    with pytest.raises(StoreError, match=held_by(newer, holder.pid) + ".*; every stored run is being run"):
        store.resolve_run("latest", resumable=True)
    holder.kill()
    holder.wait()
    assert store.summary(newer).status == "interrupted"
    store.hold_run(newer, planned=2)  # a killed holder's run is taken over
    assert store.summary(newer).status == "running"
    store.release_run(newer, finished=False)
    assert store.summary(newer).status == "interrupted"


@pytest.fixture
def servers(standin: StandIn) -> tuple[StandInServer, StandInServer]:
    """One stand-in server per run, so each run's requests are counted apart."""
    return standin(responder=respond), standin(responder=respond)


def killed_after_one_item(server: StandInServer, home: Path, data: Path, problems: str) -> tuple[str, int]:
    """A run of descriptive killed once an item is stored: its id and the calls it keeps."""
    known = {summary.id for summary in summaries(home)}
    running = start(*run_args(server, home, data, "descriptive", problems), "--concurrency", "1")
    wait_for(lambda: any(s.id not in known and s.done >= 1 for s in summaries(home)), "an item stored")
    kill(running)
    [summary] = [s for s in summaries(home) if s.id not in known]
    stored = ResultsStore(home / STORE_FILE).finished_items(summary.id)
    return summary.id, summary.calls + asyncio.run(
        checkpointed_calls(home, summary.id, "descriptive", stored)
    )


def test_two_processes_never_run_one_run_and_latest_means_the_latest_run_not_running(
    servers: tuple[StandInServer, StandInServer], tmp_path: Path, shared_data: Path
) -> None:
    """Two runs killed; a process resumes the latest; a second asking for that run is refused, and
    with `--resume latest` completes the other. Each run's server sees exactly the calls its run had
    not kept: none twice."""
    first_server, second_server = servers
    first_server.latency_s, second_server.latency_s = 0.02, 0.1
    first, first_kept = killed_after_one_item(first_server, tmp_path, shared_data, "1-3")
    second, second_kept = killed_after_one_item(second_server, tmp_path, shared_data, "1-8")
    sent = len(list(first_server.model_requests())), len(list(second_server.model_requests()))

    resuming = start("run", "--resume", "latest", "--home", str(tmp_path))
    wait_for(lambda: summaries(tmp_path)[1].status == "running", "the second run held again")
    refused = run_bongard("run", "--resume", second, "--home", tmp_path)
    assert refused.returncode == 2 and re.search(held_by(second, resuming.pid), refused.stderr)
    other = run_bongard("run", "--resume", "latest", "--home", tmp_path)
    assert other.returncode == 0, other.stderr
    assert f"resuming {first}: the latest run no other process is running" in other.stdout
    assert resuming.poll() is None, "the second run should still be running"
    out, err = resuming.communicate(timeout=120)
    assert resuming.returncode == 0, err
    assert f"resuming {second}: the latest run no other process is running" in out

    by_id = {summary.id: summary for summary in summaries(tmp_path)}
    for run_id, server, kept, before in (
        (first, first_server, first_kept, sent[0]),
        (second, second_server, second_kept, sent[1]),
    ):
        summary = by_id[run_id]
        assert (summary.status, summary.items, summary.done) == ("complete", summary.planned, summary.planned)
        assert len(list(server.model_requests())) - before == summary.calls - kept  # nothing sent twice
