"""A stand-in of GitHub's raw file host on 127.0.0.1: `GET /OWNER/REPO/COMMIT/FOLDER/PATH` answers a
file of a local folder, as the host answers a repository's file at a commit; 404 for anything else.

A test can cut one file's body short (the connection closes after half of it, as a dropped
download does) or serve it with one byte changed, to see a download fail cleanly."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class RawFiles:
    def __init__(self, prefix: str, root: Path) -> None:
        """Files of `root` at `/<prefix>/<relative path>`."""
        self.prefix = "/" + prefix.strip("/") + "/"
        self.root = root
        self.cut: set[str] = set()
        self.corrupt: set[str] = set()
        self.requests: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> RawFiles:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        files = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                files.requests.append(self.path)
                relative = (
                    self.path.removeprefix(files.prefix) if self.path.startswith(files.prefix) else None
                )
                path = files.root / relative if relative else None
                if path is None or not path.is_file():
                    self.send_response(404)
                    self.send_header("content-length", "9")
                    self.end_headers()
                    self.wfile.write(b"not found")
                    return
                body = path.read_bytes()
                if relative in files.corrupt:
                    body = bytes([body[0] ^ 0xFF]) + body[1:]
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                if relative in files.cut:
                    self.wfile.write(body[: len(body) // 2])
                    self.close_connection = True
                    return
                self.wfile.write(body)

        return Handler
