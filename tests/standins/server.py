"""A recording, fault-injecting HTTP server on 127.0.0.1 for one provider wire protocol.

It is a stand-in, not a model: each protocol module turns a request into that
provider's response shape around a text the test chooses (`responder`).
Every request is recorded (headers, JSON body, time), faults are injected in
order from a queue or by a policy (`tests.standins.faults` names the usual
ones), and a fixed latency can be added.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Protocol


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float
    status: int = 0
    """The status answered (0: none yet, or the connection dropped or hung before one)."""


@dataclass
class Fault:
    """What to do instead of a normal reply: an error reply (status, headers, body) by default;
    with `hang_s`, no reply until the client gives up (closes the connection) or `hang_s` passes;
    with `drop`, the connection closed before any reply or halfway through the normal one; with
    `rewrite`, the normal reply around a text rewritten from the request and the responder's text."""

    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: str = '{"error": {"message": "injected fault", "type": "server_error"}}'
    delay_s: float = 0.0
    hang_s: float = 0.0
    drop: Literal["before-reply", "mid-reply"] | None = None
    rewrite: Callable[[Recorded, str], str] | None = None

    @property
    def replaces_reply(self) -> bool:
        """Whether no normal reply is built (an error reply, a hang, a drop before replying)."""
        return self.drop != "mid-reply" and self.rewrite is None


@dataclass
class Reply:
    """What a protocol sends back: status, headers and body chunks (several for streaming)."""

    chunks: list[bytes]
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    sized: bool = True
    """False: sent with no Content-Length, its end told only by the connection closing (HTTP/1.1
    allows it), so a cut body ends as a whole one does."""


class WireProtocol(Protocol):
    def handles(self, method: str, path: str) -> bool: ...

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply: ...


Responder = Callable[[Any], str]
STANDIN_THREAD = "stand-in server"
"""The name of every thread a stand-in runs, so a test can tell the client's threads from them."""
FaultPolicy = Callable[[int], Fault | None]


def _multipart(kind: str, raw: bytes) -> dict[str, dict[str, bytes]]:
    """A multipart form (a file upload) as `{"multipart": {field: bytes}}`."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(f"content-type: {kind}\r\n\r\n".encode() + raw)
    parts = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            parts[name] = payload
    return {"multipart": parts}


def _decoded(raw: bytes) -> Any:
    """A request body as JSON; bytes that are not one JSON value (an uploaded file) as `{"raw": ...}`."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return {"raw": raw}


class _Listener(ThreadingHTTPServer):
    request_queue_size = 256  # the default 5 drops connections under a concurrent burst
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (killed, timed out) is expected here, not an error to print."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class StandInServer:
    def __init__(self, protocol: WireProtocol, responder: Responder | None = None) -> None:
        self.protocol = protocol
        self.responder: Responder = responder or (lambda body: "stand-in reply")
        self.finish_reason = "stop"
        """How replies end (a protocol's finish form: `stop`, `length`, its `STOPS`)."""
        self.finisher: Callable[[int], str] | None = None
        """Set: the finish form of the reply to the Nth request, in place of `finish_reason`."""
        self.latency_s = 0.0
        self.faults: deque[Fault] = deque()
        self.fault_policy: FaultPolicy | None = None
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.connections = 0
        """TCP connections accepted: a client that keeps its connections alive opens few."""
        self.api_key: str | None = None
        """Set: requests not bearing it are refused with 401, as `vllm serve --api-key` refuses them."""
        self._lock = threading.Lock()
        self._server = _Listener(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, name=STANDIN_THREAD, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> StandInServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next_fault(self, index: int) -> Fault | None:
        if self.faults:
            return self.faults.popleft()
        return self.fault_policy(index) if self.fault_policy else None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real model servers do
            disable_nagle_algorithm = True  # as real servers do: else a reply's body waits ~40 ms on
            # the client's delayed ACK of its head, sent apart

            def setup(self) -> None:
                threading.current_thread().name = STANDIN_THREAD
                with server._lock:
                    server.connections += 1
                super().setup()

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                self._respond(None)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if len(raw) < length:  # the client went away mid-request (killed): no one to answer
                    self.close_connection = True
                    return
                kind = self.headers.get("content-type") or ""
                self._respond(_multipart(kind, raw) if kind.startswith("multipart/") else _decoded(raw))

            def _respond(self, body: Any) -> None:
                recorded = Recorded(self.command, self.path, dict(self.headers), body, time.time())
                with server._lock:
                    index = len(server.requests)
                    server.requests.append(recorded)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    fault = server._next_fault(index)
                try:
                    if (
                        server.api_key is not None
                        and self.headers.get("authorization") != f"Bearer {server.api_key}"
                    ):
                        self._send(401, {}, [b'{"error": "Unauthorized"}'], "application/json")
                        return
                    if fault is not None:
                        time.sleep(fault.delay_s)
                        if fault.replaces_reply:
                            self._misbehave(fault)
                            return
                    time.sleep(server.latency_s)
                    if not server.protocol.handles(self.command, self.path):
                        self._send(404, {}, [b'{"error": {"message": "no such route"}}'], "application/json")
                        return
                    text = server.responder(body)
                    if fault is not None and fault.rewrite is not None:
                        text = fault.rewrite(recorded, text)
                    finish = server.finisher(index) if server.finisher else server.finish_reason
                    reply = server.protocol.reply(self.path, body, text, finish)
                    cut = fault is not None and fault.drop == "mid-reply"
                    recorded.status = reply.status
                    self._send(
                        reply.status,
                        reply.headers,
                        reply.chunks,
                        reply.content_type,
                        cut=cut,
                        sized=reply.sized,
                    )
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _misbehave(self, fault: Fault) -> None:
                if fault.hang_s > 0:
                    self._hold(fault.hang_s)
                if fault.hang_s > 0 or fault.drop == "before-reply":
                    self.close_connection = True  # closed with no reply at all
                    return
                self._send(fault.status, fault.headers, [fault.body.encode()], "application/json")

            def _hold(self, limit_s: float) -> None:
                """Wait, sending nothing, until the client closes the connection or `limit_s` passes."""
                deadline = time.monotonic() + limit_s
                while time.monotonic() < deadline:
                    readable, _, _ = select.select([self.connection], [], [], 0.05)
                    with contextlib.suppress(OSError):
                        if readable and not self.connection.recv(1, socket.MSG_PEEK):
                            return  # the client gave up
                    if readable:
                        return  # reset, or bytes the client should not have sent: stop holding

            def _send(
                self,
                status: int,
                headers: dict[str, str],
                chunks: list[bytes],
                kind: str,
                cut: bool = False,
                sized: bool = True,
            ) -> None:
                """The reply; `cut`: its head and half its body, then the connection closed; not
                `sized`: no Content-Length, the connection closed after the body."""
                payload = b"".join(chunks)
                self.send_response(status)
                self.send_header("content-type", kind)
                if sized:
                    self.send_header("content-length", str(len(payload)))
                else:
                    self.send_header("connection", "close")
                    self.close_connection = True
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(
                        payload[: len(payload) // 2] if cut else payload
                    )  # the client may be gone
                self.close_connection = self.close_connection or cut

        return Handler

    def model_requests(self) -> Iterator[Recorded]:
        """Recorded requests that reached a model route (health checks left out)."""
        return (r for r in self.requests if r.method == "POST")


StandIn = Callable[..., StandInServer]
"""The `standin` fixture: `standin(protocol=OpenAIChat(), responder=...)` -> a running server."""
