"""Exit codes a pipeline can trust (issue 47).

`bongard judge` exits 4 when no answer was judged and 3 when some were not (it exited 0 when every
judge call failed); a workspace that cannot be written is refused before the first paid call (judging
paid for its calls, then refused); a workspace that is a file is one line (a 46-line traceback); a
strategy that places held-out test images, on a dataset that holds none, is refused before a run is
stored (it stored a run of failed items and exited 4).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agents.retry import RetryPolicy
from graphs.cli.run import EXIT_NONE_DONE, EXIT_NOT_ALL_DONE
from graphs.runs.runner import RunConfig
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.mounts import made_read_only
from tests.standins.protocols import OpenAIChat
from tests.standins.schema_replies import RUBRIC_OK
from tests.standins.server import Fault, StandInServer
from tests.stored_runs import Stored, run_into_store

CLOSED_PORT = "http://127.0.0.1:9/v1"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Stored:
    """Open-ended answers of the offline perception agent to two classic problems."""
    config = RunConfig(
        strategy="open-ended",
        dataset="bongard-classic",
        data_dir=str(shared_data),
        agents={"reasoner": "perception"},
        problems=["6", "31"],
    )
    return run_into_store(tmp_path_factory.mktemp("judged"), config)


@pytest.fixture
def home(stored: Stored, tmp_path: Path) -> Path:
    """A copy of the stored run's workspace, for a test to judge in."""
    copy = tmp_path / "home"
    shutil.copytree(stored.store.path.parent, copy)
    return copy


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), stderr
    return lines[0]


def test_judging_against_a_closed_port_exits_4(
    stored: Stored, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quick = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02)  # refused connections: retried
    monkeypatch.setattr("agents.registry.RetryPolicy", lambda: quick)
    judged = run_bongard(
        "judge",
        stored.run_id,
        "--judges",
        f"openai-compatible:judge@{CLOSED_PORT}",
        "--home",
        home,
    )
    assert judged.returncode == EXIT_NONE_DONE, judged.stdout + judged.stderr
    assert (
        "0 answers judged" in judged.stdout and "a judge call failed for good: 2 answer(s)" in judged.stdout
    )


def test_judging_with_one_answer_left_undecided_exits_3(stored: Stored, home: Path) -> None:
    with StandInServer(OpenAIChat(), lambda body: RUBRIC_OK) as server:
        server.faults.append(Fault(status=400, body='{"error": {"message": "bad request"}}'))
        judged = run_bongard(
            "judge", stored.run_id, "--judges", f"openai-compatible:judge@{server.url}/v1", "--home", home
        )
    assert judged.returncode == EXIT_NOT_ALL_DONE, judged.stdout + judged.stderr
    assert "1 answers judged" in judged.stdout and "failed for good: 1 answer(s)" in judged.stdout


def test_judging_in_a_read_only_workspace_sends_no_request(
    stored: Stored, home: Path, tmp_path: Path
) -> None:
    with (
        made_read_only(home, tmp_path) as read_only,
        StandInServer(OpenAIChat(), lambda body: "EVALUATION: OK") as server,
    ):
        judged = run_bongard(
            "judge",
            stored.run_id,
            "--judges",
            f"openai-compatible:judge@{server.url}/v1",
            "--home",
            read_only,
        )
        assert judged.returncode == 2
        assert "is read-only: make both writable, or use --home" in one_line(judged.stderr)
        assert server.requests == []


@pytest.mark.parametrize(
    "command",
    [
        ["runs", "list"],
        ["run"],
        ["judge", "latest", "--judges", "embedding"],
        ["cache", "stats"],
        ["compare"],
    ],
    ids=" ".join,
)
def test_a_workspace_that_is_a_file_is_one_line(command: list[str], tmp_path: Path) -> None:
    home = Path("/etc/hostname") if Path("/etc/hostname").is_file() else tmp_path / "hostname"
    home.touch()
    ran = run_bongard(*command, env={"BONGARD_HOME": str(home)}, cwd=tmp_path)
    assert ran.returncode == 2
    assert f"the workspace {home} (BONGARD_HOME) is a file, not a folder" in one_line(ran.stderr)


def test_a_strategy_needing_test_images_is_refused_before_a_run_is_stored(
    shared_data: Path, tmp_path: Path
) -> None:
    """The classic problems hold no test images until panels 5 and 11 are held out."""
    run = ("run", "--strategy", "images-to-sides", "--model", "perception", "--dataset", "bongard-classic")
    args = (*run, "--problems", "1-3", "--data-dir", shared_data, "--home", tmp_path)
    ran = run_bongard(*args)
    assert ran.returncode == 2
    assert "images-to-sides needs test images and bongard-classic/1 has none" in one_line(ran.stderr)
    assert "-O holdout_test=true" in ran.stderr
    assert not (tmp_path / STORE_FILE).exists() or not ResultsStore(tmp_path / STORE_FILE).run_ids()
    held_out = run_bongard(*args, "-O", "holdout_test=true")  # as the refusal says
    assert held_out.returncode == 0, held_out.stderr
