"""Crash safety of the cache, secrecy of keys, and servers that fail to start."""

from __future__ import annotations

import asyncio
import base64
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from agents.cache import ResponseCache
from agents.managed import AgentCallError
from agents.registry import resolve_agent
from agents.secrets import REDACTED, redact
from agents.servers import LocalServer, ServerStartError
from tests.agent_calls import FAST_RETRIES
from tests.cli import run_bongard
from tests.planted_secrets import PLANTED, files_containing
from tests.standins.protocols import OpenAIChat
from tests.standins.server import Fault, StandInServer

WRITER = """
import sys, itertools
from pathlib import Path
from agents.cache import ResponseCache
cache = ResponseCache(Path(sys.argv[1]))
print("ready", flush=True)
for n in itertools.count():
    cache.put(f"key-{n}", "agent:x", {"text": "x" * 20000, "n": n})
"""


def test_a_cache_killed_mid_write_stays_readable(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    cache = ResponseCache(path)
    stats = cache.stats()
    assert stats.entries > 10
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    for n in range(stats.entries):
        entry = cache.get(f"key-{n}")
        assert entry is not None and entry["n"] == n
    cache.put("after", "agent:x", {"text": "still writable"})
    assert cache.get("after") == {"text": "still writable"}


@pytest.fixture
def planted_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", PLANTED)
    monkeypatch.setenv("BONGARD_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def test_a_planted_key_is_sent_but_written_nowhere(planted_home: Path) -> None:
    with StandInServer(OpenAIChat()) as server:
        agent = resolve_agent(
            f"openai-compatible:m@{server.url}/v1", {"temperature": 0}, retry_policy=FAST_RETRIES
        )
        asyncio.run(agent.acall([HumanMessage(content="hello")]))
        asyncio.run(agent.acall([HumanMessage(content="hello")]))  # a cache hit
        server.faults.append(Fault(401, body=f'{{"error": {{"message": "bad key {PLANTED}"}}}}'))
        with pytest.raises(AgentCallError) as refused:
            asyncio.run(agent.acall([HumanMessage(content="refused")]))
        cli = run_bongard("ask", f"openai-compatible:m@{server.url}/v1", "hi", "-M", "temperature=0")
        server.faults.append(Fault(401, body=f'{{"error": {{"message": "bad key {PLANTED}"}}}}'))
        failed = run_bongard("ask", f"openai-compatible:m@{server.url}/v1", "other")
    assert {k.lower(): v for k, v in server.requests[0].headers.items()}[
        "authorization"
    ] == f"Bearer {PLANTED}"
    assert PLANTED not in str(refused.value) and REDACTED in str(refused.value)
    assert cli.returncode == 0 and PLANTED not in cli.stdout + cli.stderr
    assert failed.returncode == 2 and "error:" in failed.stderr
    assert PLANTED not in failed.stdout + failed.stderr
    assert (planted_home / "home" / "cache.sqlite").is_file()
    assert files_containing(planted_home, PLANTED) == []


def test_redact_replaces_every_secret_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", "abcdef123456")
    monkeypatch.setenv("HF_TOKEN", "hf_zzzzzzzz")
    monkeypatch.setenv("PLAIN_SETTING", "abcdef123456-not-secret-name")
    text = redact("key abcdef123456 and hf_zzzzzzzz")
    assert text == f"key {REDACTED} and {REDACTED}"


def test_a_parsed_reply_is_redacted_reading_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each read of the secrets walks the whole environment: a reply's strings share one."""
    from agents import secrets

    monkeypatch.setenv("SOME_PROVIDER_API_KEY", "abcdef123456")
    reads = 0
    read = secrets.secret_values

    def counted() -> list[str]:
        nonlocal reads
        reads += 1
        return read()

    monkeypatch.setattr(secrets, "secret_values", counted)
    parsed = {"concept": "abcdef123456", "sides": ["left abcdef123456", "right"], "n": 3}
    assert secrets.redact_value(parsed) == {
        "concept": REDACTED, "sides": [f"left {REDACTED}", "right"], "n": 3,
    }  # fmt: skip
    assert reads == 1


@pytest.mark.parametrize("before", ["", "u", "us", "user:", "Bearer "])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_redact_finds_a_key_base64_encoded_at_any_offset(
    before: str, encode: Callable[[bytes], bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", PLANTED)
    encoded = encode(f"{before}{PLANTED}?x".encode()).decode()
    text = redact(f"header {encoded} end")
    assert REDACTED in text and encoded[4:-8] not in text
    assert len(text) < len(encoded)  # at most a character of its neighbours on each side is left


def test_a_server_that_exits_is_reported_with_its_log(tmp_path: Path) -> None:
    script = "print('model file is broken'); raise SystemExit(3)"
    server = LocalServer("test server", lambda port: [sys.executable, "-c", script], tmp_path / "s.log")
    with pytest.raises(
        ServerStartError, match=r"test server exited with code 3 while starting(.|\n)*model file is broken"
    ):
        server.start()


def test_a_server_that_crashes_on_an_illegal_instruction_says_so(tmp_path: Path) -> None:
    script = "import os, signal; print('threadpool init', flush=True); os.kill(os.getpid(), signal.SIGILL)"
    server = LocalServer("test server", lambda port: [sys.executable, "-c", script], tmp_path / "s.log")
    with pytest.raises(
        ServerStartError, match=r"killed by SIGILL \(it was built for CPU instructions(.|\n)*threadpool init"
    ):
        server.start()


def test_a_server_that_never_gets_healthy_is_stopped(tmp_path: Path) -> None:
    script = "import time; print('loading', flush=True); time.sleep(60)"
    server = LocalServer(
        "slow server", lambda port: [sys.executable, "-c", script], tmp_path / "s.log", startup_timeout_s=1.0
    )
    with pytest.raises(ServerStartError, match=r"not healthy after 1 s(.|\n)*loading"):
        server.start()
    assert not server.running()
