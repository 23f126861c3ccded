"""Local model servers the toolkit starts and stops itself (llama.cpp, vLLM).

A server binds 127.0.0.1 on a free port, writes its log to a file in the
workspace, is health-checked before use, is reused by every agent of the
process that asks for the same command, and is stopped on exit, on Ctrl-C,
on SIGTERM and, on Linux, when the parent process dies.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

import httpx

from datasets_io.errors import BongardError

LOOPBACK = "127.0.0.1"
PR_SET_PDEATHSIG = 1
STOP_GRACE_S = 10.0
LOG_TAIL_CHARS = 2000


class ServerStartError(BongardError, RuntimeError):
    """A server that exited or never became healthy; the message quotes its log."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    """Runs in the child before exec: ask Linux to SIGTERM it when the parent dies."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class LocalServer:
    """One server process; `argv(port)` gives its command line for a chosen port."""

    def __init__(
        self,
        name: str,
        argv: Callable[[int], Sequence[str]],
        log_path: Path,
        health_path: str = "/health",
        startup_timeout_s: float = 120.0,
    ) -> None:
        self.name = name
        self._argv = argv
        self.log_path = log_path
        self.health_path = health_path
        self.startup_timeout_s = startup_timeout_s
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> LocalServer:
        self.port = free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                list(self._argv(self.port)),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if not self.running():
                raise ServerStartError(
                    f"{self.name} {self._exit_status()} while starting; its log ends:\n{self.log_tail()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + self.health_path, timeout=2.0).status_code == httpx.codes.OK:
                    return
            time.sleep(0.2)
        self.stop()
        raise ServerStartError(
            f"{self.name} was not healthy after {self.startup_timeout_s:.0f} s; "
            f"its log ends:\n{self.log_tail()}"
        )

    def _exit_status(self) -> str:
        """How the process ended, in words: a crash by signal says which (SIGILL: a binary built
        for instructions this CPU does not run)."""
        code = self.process.returncode if self.process else None
        if code is None or code >= 0:
            return f"exited with code {code}"
        name = signal.Signals(-code).name
        hint = " (it was built for CPU instructions this machine lacks)" if name == "SIGILL" else ""
        return f"was killed by {name}{hint}"

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL_CHARS:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


_servers: dict[tuple[str, ...], LocalServer] = {}
_lock = threading.Lock()


def shared_server(key: tuple[str, ...], make: Callable[[], LocalServer]) -> LocalServer:
    """The running server for `key`, started on first use and reused afterwards."""
    with _lock:
        server = _servers.get(key)
        if server is None or not server.running():
            _install_stop_handlers()
            server = _servers[key] = make().start()
        return server


def stop_all() -> None:
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.stop()


_handlers_installed = False


def _install_stop_handlers() -> None:
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(stop_all)
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGTERM)

        def on_sigterm(signum: int, frame: FrameType | None) -> None:
            stop_all()
            if callable(previous):
                previous(signum, frame)
            else:
                raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, on_sigterm)
