"""What the toolkit's local web pages share (the viewer, a study's participant pages): a listening
socket with a clear error for a taken port, a quiet uvicorn server, and headers that allow no script,
no frame and no referrer."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from datasets_io.errors import BongardError

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

LOOPBACK = "127.0.0.1"
"""Where pages are served unless a command is told otherwise."""
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; img-src 'self'; style-src 'self'; form-action 'self'; base-uri 'none'; "
        "frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


class ServeError(BongardError):
    """Pages cannot be served (their port is taken); the message says what to do."""


class SecurityHeaders:
    """Adds `SECURITY_HEADERS` to every response: no script, no frame, no referrer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, sending)


def bind(port: int, host: str = LOOPBACK) -> socket.socket:
    """A listening socket on `host` (port 0: any free one); a taken port is a clear error."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as error:
        sock.close()
        raise ServeError(
            f"cannot listen on {host}:{port}: {error.strerror or error}; "
            "choose another port with --port (0: any free one)"
        ) from None
    return sock


def server(app: Starlette, sock: socket.socket) -> uvicorn.Server:
    """A quiet uvicorn server of `app` on the bound socket (`server.run(sockets=[sock])`)."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    return uvicorn.Server(config)
