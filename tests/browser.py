"""A real browser for the viewer's tests: Debian's Chromium driven by Playwright, and the viewer
served in a thread of the test's process."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@contextmanager
def viewer_of(store_path: Path) -> Iterator[str]:
    """The viewer of a store, served by uvicorn on 127.0.0.1 in a thread: its base URL."""
    from graphs.view.app import bind, create_app, server

    sock = bind(0)
    serving = server(create_app(store_path), sock)
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


def chromium() -> str | None:
    return next((path for path in CHROMIUM if os.access(path, os.X_OK)), shutil.which("chromium"))


def screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("BONGARD_VIEW_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
