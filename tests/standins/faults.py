"""Named fault modes for the stand-in server, each bounded in requests and in time.

A `FaultMode` is a `StandInServer.fault_policy`: it lets the first `after` requests through,
faults at most `requests` of the ones after, none once `within_s` seconds have passed since the
first it faulted, and no single fault holds a request longer than `hang_s`. So a test that forgets
to clear a mode still ends, and a server that is healthy again is a matter of counting requests.

The modes are what a model server does wrong in practice:

- `429`: too many requests, with a Retry-After of `retry_after_s` seconds;
- `500`: a server error;
- `hang`: no reply at all until the client gives up and closes the connection (or `hang_s`);
- `drop`: the connection closed with no reply, then (alternately) halfway through a normal reply;
- `huge`: a normal reply padded to `huge_chars` characters (several MiB);
- `echo`: a normal reply that quotes the request's API key, as it came and base64-encoded.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, field

from tests.standins.server import Fault, Recorded

MODES = ("429", "500", "hang", "drop", "huge", "echo")
MIB = 2**20


def sent_key(request: Recorded) -> str:
    """The API key the request carried (its bearer token), or an empty string."""
    authorization = next((v for k, v in request.headers.items() if k.lower() == "authorization"), "")
    return authorization.removeprefix("Bearer ").strip()


def echo_key(request: Recorded, text: str) -> str:
    key = sent_key(request)
    encoded = base64.b64encode(f"Bearer {key}".encode()).decode()
    return f"{text}\nYour key is {key}; the header, base64-encoded: {encoded}"


@dataclass
class FaultMode:
    """One named fault, for `server.fault_policy`; `faulted` lists the requests it faulted."""

    name: str
    after: int = 0
    requests: int = 1
    within_s: float = 30.0
    retry_after_s: int = 1
    hang_s: float = 10.0
    huge_chars: int = 4 * MIB
    faulted: list[int] = field(default_factory=list)
    _first_at: float | None = None

    def __post_init__(self) -> None:
        if self.name not in MODES:
            raise ValueError(f"unknown fault mode {self.name!r}; one of {', '.join(MODES)}")

    def __call__(self, index: int) -> Fault | None:
        """The fault for request `index` (the server calls this under its lock), or None to answer."""
        now = time.monotonic()
        expired = self._first_at is not None and now - self._first_at > self.within_s
        if index < self.after or len(self.faulted) >= self.requests or expired:
            return None
        self._first_at = self._first_at or now
        self.faulted.append(index)
        return self._fault()

    def _fault(self) -> Fault:
        if self.name == "429":
            body = '{"error": {"message": "rate limit reached", "type": "rate_limit_error"}}'
            return Fault(429, {"retry-after": str(self.retry_after_s)}, body)
        if self.name == "500":
            return Fault(500)
        if self.name == "hang":
            return Fault(hang_s=self.hang_s)
        if self.name == "drop":
            return Fault(drop="before-reply" if len(self.faulted) % 2 else "mid-reply")
        if self.name == "huge":
            return Fault(rewrite=lambda _, text: (text + "\n" + "x" * self.huge_chars)[: self.huge_chars])
        return Fault(rewrite=echo_key)
