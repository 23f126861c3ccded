"""Every command the CLI prints as advice runs as printed: each is taken from the output, run, and
must be accepted and do what it said (the workspace named where it is not the default)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.protocols import OpenAIChat
from tests.standins.server import Fault, StandInServer

SLOW_DOWN = Fault(429, {"retry-after": "0"}, '{"error": {"message": "slow down"}}')


def advised(printed: str) -> list[list[str]]:
    """The `bongard ...` commands in backticks in `printed`, each as its arguments after `bongard`."""
    return [shlex.split(command)[1:] for command in re.findall(r"`(bongard [^`]+)`", printed)]


def test_the_retry_and_finish_hints_of_a_run_that_failed_run_as_printed(
    shared_data: Path, tmp_path: Path
) -> None:
    with StandInServer(OpenAIChat(), responder=lambda body: "Left: circles\nRight: no circles") as server:
        server.fault_policy = lambda index: SLOW_DOWN  # every call of the first pass: a retry can help
        ran = run_bongard(
            "run", "--strategy", "direct", "--model", f"openai-compatible:m@{server.url}/v1",
            "--dataset", "bongard-classic", "--problems", "1-2", "--concurrency", "1",
            "--data-dir", shared_data, "--home", tmp_path,
        )  # fmt: skip
        assert ran.returncode == 4, ran.stdout + ran.stderr
        [retry] = advised(ran.stdout)
        assert retry[:2] == ["run", "--resume"] and retry[-3:] == ["--home", str(tmp_path), "--retry-errors"]
        compared = run_bongard("compare", "--out", tmp_path / "report", "--home", tmp_path)
        [finish] = advised(compared.stderr)  # `left out: RUN (failed ...; finish it with `...`)`
        assert finish == retry
        server.fault_policy = lambda index: None
        again = run_bongard(*finish)
    assert again.returncode == 0, again.stdout + again.stderr
    run_id = retry[2]
    assert ResultsStore(tmp_path / STORE_FILE).summary(run_id).status == "complete"


def test_the_judgings_hint_of_an_unknown_judging_runs_as_printed(shared_data: Path, tmp_path: Path) -> None:
    ran = run_bongard(
        "run", "--strategy", "direct", "--model", "perception", "--dataset", "bongard-classic",
        "--problems", "1", "--data-dir", shared_data, "--home", tmp_path, "--judges", "embedding",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    unknown = run_bongard("compare", "--judging", "j-000000", "--out", tmp_path / "r", "--home", tmp_path)
    assert unknown.returncode == 2
    [shown] = advised(" ".join(unknown.stderr.split()))
    listed = run_bongard(*shown)
    assert listed.returncode == 0 and "(counts: the first complete judging)" in listed.stdout


def test_a_failure_that_would_repeat_offers_no_retry(shared_data: Path, tmp_path: Path) -> None:
    """The offline agent refuses a task it has no way to do (writing a concept probe): the same call
    fails the same way, so the run offers no `--retry-errors` that would only fail again."""
    ran = run_bongard(
        "run", "--strategy", "concept-probe", "--model", "perception", "--author", "perception",
        "--dataset", "bongard-classic", "--problems", "1", "--data-dir", shared_data, "--home", tmp_path,
    )  # fmt: skip
    assert "PerceptionError" in ran.stdout + ran.stderr
    assert "--retry-errors" not in ran.stdout and "would fail the same way again" in ran.stdout
