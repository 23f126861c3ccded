"""Runs that survive bad input and a bad endpoint: a panel that does not decode fails its item alone,
a dead server or a wrong key stops the run within seconds, the exit code says how the run ended,
and a key a server echoes is stored nowhere.

Data are real classic problems copied into a temporary folder and damaged there; the model is a
stand-in OpenAI-protocol server on 127.0.0.1.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.cli import run_bongard, run_bongard_process
from tests.planted_secrets import PLANTED, files_containing
from tests.ports import refused_port
from tests.standins.protocols import OpenAIChat
from tests.standins.server import Fault, StandIn, StandInServer

EXIT_NOT_ALL_DONE = 3
EXIT_NONE_DONE = 4
BAD_KEY = Fault(401, body='{"error": {"message": "invalid key"}}')


@pytest.fixture
def server(standin: StandIn) -> StandInServer:
    return standin(responder=lambda body: "Left: one figure\nRight: two figures")


def run_args(server: StandInServer | str, data_dir: Path, home: Path, strategy: str = "direct") -> list[str]:
    url = server if isinstance(server, str) else f"{server.url}/v1"
    return [
        "run", "--strategy", strategy, "--model", f"openai-compatible:m@{url}",
        "--dataset", "bongard-classic", "--data-dir", str(data_dir), "--home", str(home),
    ]  # fmt: skip


def runs_json(home: Path) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = json.loads(run_bongard("runs", "list", "--json", "--home", home).stdout)
    return listed


def empty(path: Path) -> None:
    path.write_bytes(b"")


def not_an_image(path: Path) -> None:
    path.write_text("these are not pixels", encoding="utf-8")


def bomb(path: Path) -> None:
    Image.new("1", (8000, 8000)).save(path)  # 64 Mpx in a few kilobytes


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:200])


@pytest.mark.parametrize(
    ("strategy", "damage", "reason"),
    [
        ("descriptive", empty, "image file is empty"),
        ("contrastive", not_an_image, "not an image file"),
        ("descriptive-iterative", bomb, "over the limit of 40000000"),
        ("contrastive-iterative", truncate, "corrupt or truncated"),
    ],
)
def test_a_panel_that_does_not_decode_fails_its_item_alone(
    strategy: str,
    damage: Callable[[Path], None],
    reason: str,
    server: StandInServer,
    classic_copy: Path,
    tmp_path: Path,
) -> None:
    panel = classic_copy / "bongard-classic" / "002" / "7.png"
    damage(panel)
    named = re.compile(
        f"failed: bongard-classic/2 .*: dataset bongard-classic, problem 2, file {panel}: .*{reason}"
    )
    first = run_bongard(*run_args(server, classic_copy, tmp_path, strategy))
    assert first.returncode == EXIT_NOT_ALL_DONE, first.stderr
    assert named.search(first.stderr) and "partial, 2/3 items done, 1 failed" in first.stdout
    # Every answered request is stored and costed, the failed item's before its bad panel too.
    assert runs_json(tmp_path)[0]["calls"] == len(list(server.model_requests()))
    resumed = run_bongard("run", "--resume", "latest", "--home", tmp_path)
    assert resumed.returncode == EXIT_NOT_ALL_DONE and "failed:" not in resumed.stderr  # skipped
    retried = run_bongard("run", "--resume", "latest", "--retry-errors", "--home", tmp_path)
    assert retried.returncode == EXIT_NOT_ALL_DONE and named.search(retried.stderr)  # tried again, named


def test_exclude_drops_a_problem_from_the_run_for_good(
    server: StandInServer, classic_copy: Path, tmp_path: Path
) -> None:
    not_an_image(classic_copy / "bongard-classic" / "002" / "7.png")
    run_bongard(*run_args(server, classic_copy, tmp_path), "--problems", "1-2")
    [failed] = runs_json(tmp_path)
    assert (failed["status"], failed["planned"], failed["failed"]) == ("partial", 2, 1)
    stray = run_bongard("run", "--resume", "latest", "--exclude", "3", "--home", tmp_path)
    assert stray.returncode == 2 and "--exclude 3: not among the run's problems" in stray.stderr
    sent = len(list(server.model_requests()))
    excluded = run_bongard("run", "--resume", "latest", "--exclude", "2", "--home", tmp_path)
    assert excluded.returncode == 0, excluded.stderr
    assert "excluded from the run: problems 2" in excluded.stdout
    assert "complete, 1/1 items done, 0 failed" in excluded.stdout
    [complete] = runs_json(tmp_path)
    assert (complete["status"], complete["planned"], complete["failed"]) == ("complete", 1, 0)
    assert complete["config"]["excluded"] == ["2"] and complete["calls"] == failed["calls"]
    again = run_bongard("run", "--resume", "latest", "--retry-errors", "--home", tmp_path)
    assert again.returncode == 0 and "complete, 1/1 items done" in again.stdout  # recorded with the run
    assert len(list(server.model_requests())) == sent
    alone = run_bongard(*run_args(server, classic_copy, tmp_path), "--exclude", "2")
    assert alone.returncode == 2 and "give --resume RUN" in alone.stderr


def test_a_run_against_a_dead_server_stops_in_seconds_naming_it(classic_copy: Path, tmp_path: Path) -> None:
    with refused_port() as port:
        url = f"http://127.0.0.1:{port}/v1"
        started = time.monotonic()
        ran = run_bongard_process(*run_args(url, classic_copy, tmp_path, "descriptive"), timeout=60)
        took = time.monotonic() - started
    assert took < 30 and ran.returncode == EXIT_NONE_DONE, (took, ran.stderr)
    assert f"stopped: the first 5 requests to openai-compatible at {url} all failed (connection refused)" in (
        ran.stderr
    )
    assert "is the server running" in ran.stderr
    [run] = runs_json(tmp_path)
    assert (run["status"], run["failed"]) == ("interrupted", 0)  # nothing blamed on the items
    assert f"resume with `bongard run --resume {run['id']} --home {tmp_path}`" in ran.stdout


def test_a_server_failing_every_call_with_500_stops_a_20_item_run_in_seconds(
    server: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    """A broken server or proxy: each call would be retried 8 times (about 38 s an item); the first
    requests all failing with 500 stop the run as a dead server's do, naming its last error."""
    server.fault_policy = lambda index: Fault(500, body='{"error": {"message": "upstream crashed"}}')
    started = time.monotonic()
    ran = run_bongard_process(*run_args(server, shared_data, tmp_path), "--problems", "1-20", timeout=120)
    took = time.monotonic() - started
    assert took < 10 and ran.returncode == EXIT_NONE_DONE, (took, ran.stderr)
    assert "all failed (server errors): does the server (or a proxy before it) work" in ran.stderr
    assert "upstream crashed" in ran.stderr
    assert len(list(server.model_requests())) <= 5 + 4  # the first 5, and those already in flight
    [run] = runs_json(tmp_path)
    assert f"resume with `bongard run --resume {run['id']} --home {tmp_path}`" in ran.stdout


def test_a_busy_server_is_not_stopped_by_the_breaker() -> None:
    """503, 529 and 429 ask the client to wait: retried, never counted as a broken server."""
    from agents.breaker import endpoint_fault
    from agents.retry import RETRYABLE_STATUS

    class Refused(Exception):
        def __init__(self, status: int) -> None:
            self.status_code = status

    assert {status for status in RETRYABLE_STATUS if endpoint_fault(Refused(status))} == {500, 502, 504}


@pytest.mark.parametrize(("max_failures", "requests"), [(None, 5), ("2", 2), ("0", 6)])
def test_a_refused_key_stops_the_run_after_the_first_failures(
    max_failures: str | None, requests: int, server: StandInServer, classic_copy: Path, tmp_path: Path
) -> None:
    """6 items (3 problems x 2 attempts) of one call each, one at a time."""
    server.fault_policy = lambda index: BAD_KEY
    args = run_args(server, classic_copy, tmp_path)
    extra = ["--max-failures", max_failures] if max_failures else []
    ran = run_bongard(*args, "--concurrency", "1", "--attempts", "2", *extra)
    assert ran.returncode == EXIT_NONE_DONE
    assert len(list(server.model_requests())) == requests
    stopped = "all failed (401 Unauthorized): is the key right?"
    assert (stopped in ran.stderr) == (max_failures != "0")  # 0: never stopped, every item tried
    run_id = runs_json(tmp_path)[0]["id"]
    assert f"`bongard run --resume {run_id} --home {tmp_path} --retry-errors`" in ran.stdout


def test_an_endpoint_that_has_answered_is_not_stopped(
    server: StandInServer, classic_copy: Path, tmp_path: Path
) -> None:
    server.fault_policy = lambda index: None if index == 0 else BAD_KEY
    ran = run_bongard(*run_args(server, classic_copy, tmp_path), "--concurrency", "1", "--max-failures", "1")
    assert ran.returncode == EXIT_NOT_ALL_DONE and "stopped" not in ran.stderr
    assert "partial, 1/3 items done, 2 failed" in ran.stdout


def test_a_run_where_every_call_fails_exits_non_zero(
    server: StandInServer, classic_copy: Path, tmp_path: Path
) -> None:
    """A 429 storm: every call retried, then failed; the run says how to retry."""
    server.fault_policy = lambda index: Fault(429, {"retry-after": "0"}, '{"error": {"message": "slow"}}')
    ran = run_bongard(*run_args(server, classic_copy, tmp_path), "--problems", "1")
    assert ran.returncode == EXIT_NONE_DONE and "failed, 0/1 items done, 1 failed" in ran.stdout
    assert "retries the 1 failed item a retry can help" in ran.stdout
    table = " ".join(ran.stdout.split())
    assert "│ 1 │ 0 │ - │ 1 │ - │" in table  # problems 1, n 0, solved -, failed 1 (outside n), no accuracy


def test_a_request_the_service_refuses_is_not_offered_to_retry_errors(
    server: StandInServer, classic_copy: Path, tmp_path: Path
) -> None:
    """A 400 naming a parameter fails the same way however often it is sent: the summary says so
    and offers no `--retry-errors`, which would pay for the same refusals again."""
    refusal = '{"error": {"message": "Unsupported parameter: \'top_p\'", "code": "unsupported_parameter"}}'
    server.fault_policy = lambda index: Fault(400, body=refusal)
    ran = run_bongard(*run_args(server, classic_copy, tmp_path), "--problems", "1-2")
    assert ran.returncode == EXIT_NONE_DONE
    assert "2 failed item(s) would fail the same way again" in ran.stdout
    assert "the service refused the request itself" in ran.stdout and "--retry-errors" not in ran.stdout
    assert [run["retryable"] for run in runs_json(tmp_path)] == [0]


def test_a_run_with_nothing_to_do_says_why_and_stores_nothing(classic_copy: Path, tmp_path: Path) -> None:
    backwards = run_bongard(*run_args("http://127.0.0.1:9/v1", classic_copy, tmp_path), "--problems", "5-1")
    assert backwards.returncode == 2 and "5-1 is an empty range" in backwards.stderr
    rules = classic_copy / "bongard-classic" / "bp_solutions.json"
    rules.write_text('{"1": ["a", "b"],', encoding="utf-8")
    for selection in ([], ["--problems", "1-2"]):
        ran = run_bongard(*run_args("http://127.0.0.1:9/v1", classic_copy, tmp_path), *selection)
        assert ran.returncode == 2 and "see the warnings above" not in ran.stderr
        assert f"file {rules}: malformed JSON" in ran.stderr and "problems 1, 2" in ran.stderr
    assert not (tmp_path / "store.sqlite").exists() or runs_json(tmp_path) == []


def test_a_missing_data_directory_is_named_as_missing(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    listed = run_bongard("datasets", "list", "--data-dir", missing)
    ran = run_bongard(*run_args("http://127.0.0.1:9/v1", missing, tmp_path))
    for result in (listed, ran):
        assert result.returncode == 2 and f"data directory {missing} does not exist" in result.stderr


def test_a_key_echoed_in_a_reply_plain_or_base64_is_stored_nowhere(
    classic_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", PLANTED)
    encoded = base64.b64encode(f"Bearer {PLANTED}".encode()).decode()
    reply = f"Left: the key {PLANTED}\nRight: the header, encoded: {encoded}"
    with StandInServer(OpenAIChat(), responder=lambda body: reply) as server:
        ran = run_bongard(*run_args(server, classic_copy, tmp_path), "-M", "temperature=0")
    assert ran.returncode == 0, ran.stderr
    assert files_containing(tmp_path, PLANTED) == []
    assert files_containing(tmp_path, encoded[12:-4]) == []  # the part that encodes the key alone
    shown = run_bongard("show", "latest", "1", "--calls", "--home", tmp_path).stdout
    assert "the key [redacted]" in shown and "encoded: QmVhcmVyIH[redacted]" in shown


def test_a_redacted_key_in_a_failure_shows_as_redacted(
    server: StandInServer, classic_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", PLANTED)
    server.fault_policy = lambda index: Fault(400, body=f'{{"error": {{"message": "bad key {PLANTED}"}}}}')
    ran = run_bongard(*run_args(server, classic_copy, tmp_path), "--problems", "1")
    assert "Error code: 400 - bad key [redacted]" in ran.stderr and PLANTED not in ran.stderr


@pytest.mark.parametrize("module", ["httpx", "httpx2"])
def test_transport_errors_of_either_http_stack_are_classified(module: str) -> None:
    """The openai and anthropic SDKs send through httpx2, the others through httpx: a refused
    connection, a timeout and a dropped reply are the same fault whichever stack raised it."""
    from agents.breaker import CONNECTION, endpoint_fault
    from agents.retry import is_retryable, is_timeout

    http = pytest.importorskip(module)
    refused, timed_out = http.ConnectError("refused"), http.ReadTimeout("slow")
    dropped = http.RemoteProtocolError("peer closed connection")
    wrapped = RuntimeError("Connection error.")  # as an SDK wraps it
    wrapped.__cause__ = refused
    assert endpoint_fault(refused) == endpoint_fault(wrapped) == CONNECTION
    assert is_timeout(timed_out) and not is_timeout(refused)
    assert all(is_retryable(error) for error in (refused, timed_out, dropped))
    assert endpoint_fault(timed_out) is None


def test_transport_errors_of_the_lean_client_are_classified() -> None:
    """The toolkit's own OpenAI-protocol client sends through aiohttp (`agents.wire_sessions`)."""
    import aiohttp
    from aiohttp.client_reqrep import ConnectionKey

    from agents.breaker import CONNECTION, endpoint_fault
    from agents.providers.openai_wire import ReplyCutOff
    from agents.retry import is_retryable, is_timeout

    key = ConnectionKey("127.0.0.1", 9, False, True, None, None, None)
    refused = aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "refused"))
    timed_out, dropped = aiohttp.ServerTimeoutError("slow"), aiohttp.ServerDisconnectedError()
    cut = ReplyCutOff("the connection closed before the reply was complete")
    assert endpoint_fault(refused) == CONNECTION
    assert is_timeout(timed_out) and not is_timeout(refused)
    assert all(is_retryable(error) for error in (refused, timed_out, dropped, cut))
    assert endpoint_fault(timed_out) is endpoint_fault(dropped) is endpoint_fault(cut) is None
