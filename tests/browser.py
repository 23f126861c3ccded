"""A real browser for the tests of the toolkit's pages: Debian's Chromium driven by Playwright, and
the viewer or a study's pages served in a thread of the test's process."""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from results.store import ResultsStore

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@contextmanager
def viewer_of(store_path: Path) -> Iterator[str]:
    """The viewer of a store, served by uvicorn on 127.0.0.1 in a thread: its base URL."""
    from graphs.view.app import create_app

    with served(create_app(store_path)) as base:
        yield base


@contextmanager
def study_pages_of(store: ResultsStore, study: str) -> Iterator[str]:
    """A study's participant pages, served by uvicorn on 127.0.0.1 in a thread: their base URL."""
    from graphs.studies.pages import create_app

    with served(create_app(store, study)) as base:
        yield base


@contextmanager
def served(app: Starlette) -> Iterator[str]:
    from graphs.web import bind, server

    sock = bind(0)
    serving = server(app, sock)
    thread = threading.Thread(target=serving.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not serving.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert serving.started
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        serving.should_exit = True
        thread.join(timeout=30)


def listening_addresses(port: int) -> list[str]:
    """The local addresses of the sockets listening on `port` (Linux's /proc/net/tcp and tcp6)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:
                packed = bytes.fromhex(address)
                family = socket.AF_INET if len(packed) == 4 else socket.AF_INET6
                if family == socket.AF_INET:
                    packed = packed[::-1]  # little-endian words
                found.append(socket.inet_ntop(family, packed))
    return found


def chromium() -> str | None:
    return next((path for path in CHROMIUM if os.access(path, os.X_OK)), shutil.which("chromium"))


def chromium_or_skip() -> str:
    """Chromium's path; the test is skipped where none is installed."""
    import pytest

    executable = chromium()
    if executable is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium; scripts/check installs it)")
    return executable


@contextmanager
def first_line_of(command: list[str], timeout_s: float = 60) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A long-running command (a server) started, with the first line it prints; stopped with
    Ctrl-C (SIGINT) at the end, and checked to have stopped cleanly."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as waiting:
            waiting.register(process.stdout, selectors.EVENT_READ)
            assert waiting.select(timeout=timeout_s), f"{command[1:3]} printed nothing"
        yield process, process.stdout.readline()
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0 and "Traceback" not in stderr, stderr


def screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("BONGARD_VIEW_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
