"""A real `bongard run` against a model server that misbehaves in each way `tests.standins.faults`
names (429, 500, hang, drop, huge, echo), then resumed once the server is healthy again.

Each run is `descriptive` over classic problems 1-3 at concurrency 1 (13 calls per problem, one at
a time, so the fault lands on a known call: the 6th of problem 2), with a 1 s `timeout_s` and 2
attempts per call. A run that meets a fault must end in bounded time with the exit code that says
how it ended, fail only the item the fault hit and name what happened, keep what was done, and
finish on `--resume --retry-errors` without sending a call that had been answered.
"""

from __future__ import annotations

import base64
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import agents.registry
from agents.cache import ResponseCache
from agents.retry import RetryPolicy
from results.store import ResultsStore
from tests.cli import run_bongard
from tests.planted_secrets import PLANTED, files_containing
from tests.standins.faults import FaultMode, sent_key
from tests.standins.server import STANDIN_THREAD, StandIn, StandInServer

CALLS_PER_ITEM = 13  # descriptive: each of the 12 panels described, then the answer
ANSWERED_FIRST = 5  # calls of problem 2 answered before the fault
ATTEMPTS = 2
MAX_REPLY_CHARS = 20_000
SQLITE_FILES = ("store.sqlite", "cache.sqlite", "checkpoints.sqlite")
EXIT_DONE, EXIT_NOT_ALL_DONE, EXIT_NONE_DONE = 0, 3, 4


@dataclass(frozen=True)
class Case:
    mode: str
    exit_code: int
    error: str | None
    """What the failed item's error says (a regex; `{url}`: the endpoint); None: no item fails."""
    temperature: str = "0.7"
    """Sampled, so the cache answers nothing and every call is a request the server counts."""


CASES = [
    Case("429", EXIT_NOT_ALL_DONE, r"RateLimitError: Error code: 429 - rate limit reached"),
    Case("500", EXIT_NOT_ALL_DONE, r"Error code: 500 - injected fault"),
    Case("hang", EXIT_NOT_ALL_DONE, r"no complete reply from {url} within 1 s \(timeout_s\)"),
    Case(
        "drop",  # the first attempt gets no reply, the second half of one: the last is the item's error
        EXIT_NOT_ALL_DONE,
        r": ReplyCutOff: the connection closed before the reply was complete: Not enough data",
    ),
    Case("huge", EXIT_DONE, None),
    Case("echo", EXIT_DONE, None, temperature="0"),  # cached too: the cache must not keep the key
]


@pytest.fixture(autouse=True)
def few_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two quick attempts per call instead of the default eight with backoff up to a minute."""
    fast = RetryPolicy(max_attempts=ATTEMPTS, max_total_s=20, base_delay_s=0.01, max_delay_s=0.05)
    monkeypatch.setattr(agents.registry, "RetryPolicy", lambda: fast)
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", PLANTED)


@pytest.fixture
def server(standin: StandIn) -> StandInServer:
    return standin(responder=lambda body: "Left: one figure\nRight: two figures")


def run_args(url: str, classic_copy: Path, home: Path, strategy: str = "descriptive") -> list[str | Path]:
    return [
        "run", "--strategy", strategy, "--model", f"openai-compatible:m@{url}", "--dataset",
        "bongard-classic", "--data-dir", classic_copy, "--home", home, "-M", "timeout_s=1",
    ]  # fmt: skip


def client_threads() -> int:
    return sum(thread.name != STANDIN_THREAD for thread in threading.enumerate())


def idle_cpu_s(seconds: float = 0.5) -> float:
    """CPU time this process spends while the test sleeps: a spinning thread shows here."""
    before = time.process_time()
    time.sleep(seconds)
    return time.process_time() - before


@pytest.mark.parametrize("case", CASES, ids=[case.mode for case in CASES])
def test_a_run_survives_a_misbehaving_server(
    case: Case, server: StandInServer, classic_copy: Path, tmp_path: Path
) -> None:
    home, url = tmp_path / "home", f"{server.url}/v1"
    mode = FaultMode(case.mode, after=CALLS_PER_ITEM + ANSWERED_FIRST, requests=ATTEMPTS)
    server.fault_policy = mode
    threads = client_threads()
    started = time.monotonic()
    ran = run_bongard(
        *run_args(url, classic_copy, home),
        "--concurrency",
        "1",
        "-M",
        f"temperature={case.temperature}",
        "-M",
        f"max_reply_chars={MAX_REPLY_CHARS}",
    )
    took = time.monotonic() - started
    assert took < 30 and ran.returncode == case.exit_code, (took, ran.stderr)
    assert len(mode.faulted) == ATTEMPTS and sent_key(server.requests[0]) == PLANTED
    if case.mode == "429":
        first, second = (server.requests[index].at for index in mode.faulted)
        assert second - first >= mode.retry_after_s  # Retry-After honoured
    if case.mode == "hang":
        assert server.in_flight == 0 and took < mode.hang_s  # each hold ended when the client gave up
        settled = (
            time.monotonic() + 2
        )  # a thread of the run's last moments (a closing pool) may still be ending
        while client_threads() != threads and time.monotonic() < settled:
            time.sleep(0.05)
        assert client_threads() == threads and idle_cpu_s() < 0.2  # and nothing of the client spins

    store = ResultsStore(home / "store.sqlite")
    run_id = store.resolve_run("latest")
    errors = store.item_errors(run_id)
    if case.error is None:
        assert errors == {} and len(store.finished_items(run_id)) == 3
    else:
        [(item, error)] = errors.items()
        assert item == ("bongard-classic/2", 0)
        named = case.error.format(url=re.escape(url))
        assert re.search(named, error) and re.search(f"failed: bongard-classic/2 .*{named}", ran.stderr)
        assert store.finished_items(run_id) == {("bongard-classic/1", 0), ("bongard-classic/3", 0)}
        paid = store.item_calls(run_id, "bongard-classic/2", 0)
        # the calls answered before the fault, kept with the failure; a sibling describe branch waiting
        # for the slot may get its call answered while the failure cancels the item: paid, so kept too,
        # but its branch never committed, so the resume below sends it again, as after a kill
        assert ANSWERED_FIRST <= len(paid) <= ANSWERED_FIRST + 1, [call.conversation for call in paid]

    server.fault_policy = None
    sent = len(server.requests)
    resumed = run_bongard("run", "--resume", "latest", "--retry-errors", "--home", home)
    assert resumed.returncode == EXIT_DONE and "complete, 3/3 items done, 0 failed" in resumed.stdout
    for problem in ("bongard-classic/1", "bongard-classic/2", "bongard-classic/3"):
        assert len(store.item_calls(run_id, problem, 0)) == CALLS_PER_ITEM  # nothing done was lost
    again = server.requests[sent:]
    if case.error is None:
        assert again == []
    else:  # the faulted call and the ones after it, no more: no call that had been answered (the
        # sibling call answered while the failure cancelled the item is sent again unless its branch
        # had committed first: one fewer then)
        assert again[0].body == server.requests[mode.faulted[0]].body
        assert CALLS_PER_ITEM - ANSWERED_FIRST - 1 <= len(again) <= CALLS_PER_ITEM - ANSWERED_FIRST

    if case.mode == "huge":
        replies = [
            call.reply for n in (1, 2, 3) for call in store.item_calls(run_id, f"bongard-classic/{n}", 0)
        ]
        cut = [reply for reply in replies if "[reply cut: its first 20000 of 4194304 characters" in reply]
        assert len(cut) == ATTEMPTS and max(map(len, replies)) < MAX_REPLY_CHARS + 100
        assert all((home / name).stat().st_size < 2**20 for name in SQLITE_FILES)  # a reply was 4 MiB
    if case.mode == "echo":
        assert ResponseCache(home / "cache.sqlite").stats().entries > 0
        echoed = [r for r in store.item_calls(run_id, "bongard-classic/2", 0) if "Your key is" in r.reply]
        assert echoed and all("Your key is [redacted]" in call.reply for call in echoed)
        encoded = base64.b64encode(f"Bearer {PLANTED}".encode()).decode()[12:-4]  # the key's part alone
        assert all((home / name).is_file() for name in SQLITE_FILES)
        assert files_containing(home, PLANTED) == [] and files_containing(home, encoded) == []


def test_a_server_that_never_replies_fails_every_item_and_the_run_exits_4(
    server: StandInServer, classic_copy: Path, tmp_path: Path
) -> None:
    """A hung server used to end the run with exit 0; timeouts are no endpoint fault, so the breaker
    leaves them to the retries and every item fails on its own, in bounded time."""
    url = f"{server.url}/v1"
    server.fault_policy = FaultMode("hang", requests=100)
    started = time.monotonic()
    ran = run_bongard(*run_args(url, classic_copy, tmp_path, "direct"))
    assert time.monotonic() - started < 30 and ran.returncode == EXIT_NONE_DONE, ran.stderr
    assert "failed, 0/3 items done, 3 failed" in ran.stdout and "--retry-errors" in ran.stdout
    assert ran.stderr.count(f"no complete reply from {url} within 1 s (timeout_s)") == 3
    assert len(list(server.model_requests())) == 3 * ATTEMPTS
