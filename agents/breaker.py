"""Stopping a run early when its endpoint cannot answer at all: a server that is down, a wrong key, a
wrong URL.

Such a fault is no item's own: every item would fail the same way, each after minutes of retries
when the server is down. So a run watches the first requests to each endpoint; when the first
`limit` of them all fail with a refused connection, 401, 403, 404, or a server error that is no
request to wait (500, 501, 502, 504, 505: a broken server or proxy, not a busy one, which says 503,
529 or 429), every call to that endpoint stops with `EndpointDown`, which names it, its last error,
and asks what to check. One reply from an endpoint disarms its breaker for good: a later failure
is an item's, handled by retries as usual.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from datasets_io.errors import BongardError

if TYPE_CHECKING:  # `bongard --help` reads DEFAULT_MAX_FAILURES: no HTTP stack for it
    from agents.limits import Endpoint

DEFAULT_MAX_FAILURES = 5
CONNECTION = "connection refused"
ENDPOINT_STATUS = {401: "401 Unauthorized", 403: "403 Forbidden", 404: "404 Not Found"}
BROKEN_SERVER = "server errors"
BROKEN_STATUS = frozenset({500, 501, 502, 504, 505})
"""Server errors that ask for no wait: a server failing every request this way is broken, not busy."""
QUESTIONS = {
    CONNECTION: "is the server running, at that address?",
    ENDPOINT_STATUS[401]: "is the key right?",
    ENDPOINT_STATUS[403]: "is the key right, and allowed this model?",
    ENDPOINT_STATUS[404]: "are the URL and the model name right?",
    BROKEN_SERVER: "does the server (or a proxy before it) work, and what does its log say?",
}
KEY_FAULTS = {ENDPOINT_STATUS[401], ENDPOINT_STATUS[403]}


class EndpointDown(BongardError, RuntimeError):
    """The first requests to an endpoint all failed in a way no retry mends; the run stops."""


def endpoint_fault(error: BaseException) -> str | None:
    """What makes `error` the endpoint's fault rather than one request's, or None."""
    from agents.retry import error_chain, http_errors, status_code

    status = status_code(error)
    if status is not None:
        return BROKEN_SERVER if status in BROKEN_STATUS else ENDPOINT_STATUS.get(status)
    connect_errors: tuple[type[BaseException], ...] = (
        ConnectionRefusedError,
        socket.gaierror,
        *http_errors("ConnectError"),
    )
    return CONNECTION if any(isinstance(item, connect_errors) for item in error_chain(error)) else None


class CircuitBreaker:
    """The run's watch over the first requests to each endpoint (`limit` 0: never stops).

    Per endpoint: the endpoint faults seen before its first reply, whether it has replied, and why
    it was stopped. Other failures (429, 503, 529, timeouts) are left to the retries, counted by none.
    """

    def __init__(self, limit: int = DEFAULT_MAX_FAILURES) -> None:
        self.limit = limit
        self._faults: dict[Endpoint, list[str]] = {}
        self._answered: set[Endpoint] = set()
        self._stopped: dict[Endpoint, str] = {}
        self._last: dict[Endpoint, str] = {}

    def check(self, endpoint: Endpoint) -> None:
        """Before a request: refuse it once the endpoint's breaker has tripped."""
        if endpoint in self._stopped:
            raise EndpointDown(self._stopped[endpoint])

    def answered(self, endpoint: Endpoint) -> None:
        self._answered.add(endpoint)

    def failed(self, endpoint: Endpoint, error: BaseException, key_env: tuple[str, ...] = ()) -> None:
        """After a failed request: trip (raise `EndpointDown`) when the endpoint has not replied yet
        and this is its `limit`-th endpoint fault."""
        fault = endpoint_fault(error)
        if not self.limit or fault is None or endpoint in self._answered:
            return
        faults = self._faults.setdefault(endpoint, [])
        faults.append(fault)
        self._last[endpoint] = str(error)
        if len(faults) >= self.limit and endpoint not in self._stopped:
            self._stopped[endpoint] = _explain(endpoint, faults, key_env, self._last[endpoint])
        self.check(endpoint)


def _explain(endpoint: Endpoint, faults: list[str], key_env: tuple[str, ...], last: str) -> str:
    where = f"{endpoint.provider} at {endpoint.url}" if endpoint.url else f"{endpoint.provider}'s API"
    seen = list(dict.fromkeys(faults))
    questions = [QUESTIONS[fault] for fault in seen]
    if key_env and KEY_FAULTS & set(seen):
        questions.append(f"(the key is read from {' or '.join(key_env)})")
    failed = f"the first {len(faults)} requests to {where} all failed ({', '.join(seen)})"
    said = f" (the last: {_shortened(last)})" if BROKEN_SERVER in seen else ""
    return f"{failed}: {' '.join(questions)}{said}"


def _shortened(error: str, limit: int = 200) -> str:
    """An error's first line, cut to `limit` characters: a server's 500 page can be long HTML."""
    line = error.strip().splitlines()[0] if error.strip() else "no message"
    return line if len(line) <= limit else line[: limit - 1] + "…"
