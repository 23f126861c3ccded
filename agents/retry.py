"""Retries for every provider in one place: which failures are worth another try, and when.

Rate limits (429), server errors (5xx), timeouts, dropped connections and
response bodies that are not valid JSON (a proxy's glitch) are retried with
exponential backoff and full jitter, honouring a server's Retry-After up to
a cap (a header that does not parse, such as `soon`, counts as none), bounded
both in attempts and in total time. Everything else (a bad request,
a refused key) fails at once. That is `is_retryable`, every provider's default;
a provider whose server fails in its own ways names its own rule. The
providers' SDKs are built with their own retries switched off so attempts are
not multiplied.
"""

from __future__ import annotations

import email.utils
import json
import math
import random
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_before_delay

T = TypeVar("T")
HTTP_ERROR = 400
RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
TRANSIENT_NAME_PARTS = ("Timeout", "Connection", "Disconnected", "RemoteProtocol", "ReadError")
MAX_RETRY_AFTER_S = 300.0
"""The longest server-asked wait honoured by default: a quota reset minutes away is waited for; an
hour's ask is cut to this, and the total-time bound still applies."""


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 8
    max_total_s: float = 600.0
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    """The longest backoff of our own."""
    max_retry_after_s: float = MAX_RETRY_AFTER_S
    """The longest wait a server's Retry-After is honoured for."""


class AttemptTimeout(TimeoutError):
    """One attempt that got no complete reply in time; unlike a bare `TimeoutError`, it says what
    timed out and after how long."""

    def __init__(self, what: str, after_s: float) -> None:
        super().__init__(f"no complete reply from {what} within {after_s:g} s (timeout_s)")


def error_chain(error: BaseException) -> Iterator[BaseException]:
    """`error` and every error it was raised from or during, each once."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


AIOHTTP_NAMES = {
    "TransportError": ("ClientConnectionError", "ClientPayloadError"),
    "ConnectError": ("ClientConnectorError",),
    "TimeoutException": ("ServerTimeoutError",),
}
"""aiohttp's classes for httpx's: a link that failed or dropped, a refused connection, a timeout."""


def http_errors(name: str) -> tuple[type[BaseException], ...]:
    """httpx's exception class `name`, with its kin in the other HTTP stacks that are loaded: httpx2
    (the openai and anthropic SDKs, `agents.http_pool`) and aiohttp (the toolkit's own OpenAI-protocol
    client, `agents.wire_sessions`). A module that is not loaded raised nothing, so it is not imported
    for the check."""
    found = [getattr(module, name) for module in map(sys.modules.get, ("httpx", "httpx2")) if module]
    if (aiohttp := sys.modules.get("aiohttp")) is not None:
        found += [getattr(aiohttp, kin) for kin in AIOHTTP_NAMES[name]]
    return tuple(found)


def status_code(error: BaseException) -> int | None:
    """The HTTP status of the reply behind an SDK error, whatever the SDK calls it; None where no
    reply came. Below a dropped link or a cut body lies no status a server sent: aiohttp's error for a
    body cut short carries `code=400` for its own parser's sake, and read as a status it made a cut
    reply a bad request, never retried."""
    transport: tuple[type[BaseException], ...] = (ConnectionError, *http_errors("TransportError"))
    for item in error_chain(error):
        if isinstance(item, transport):
            return None
        for attribute in ("status_code", "code", "status"):
            value = getattr(item, attribute, None)
            if isinstance(value, int) and 100 <= value < 600:
                return value
        response = getattr(item, "response", None)
        value = getattr(response, "status_code", None)
        if isinstance(value, int):
            return value
    return None


def is_retryable(error: BaseException) -> bool:
    status = status_code(error)
    if status is not None and status >= HTTP_ERROR:
        return status in RETRYABLE_STATUS
    transport = http_errors("TransportError")
    return any(
        isinstance(item, (TimeoutError, ConnectionError, json.JSONDecodeError, *transport))
        or any(part in type(item).__name__ for part in TRANSIENT_NAME_PARTS)
        for item in error_chain(error)
    )


def is_timeout(error: BaseException) -> bool:
    """Whether the failure is a timeout, ours or an SDK's (which need not subclass `TimeoutError`)."""
    timeouts: tuple[type[BaseException], ...] = (TimeoutError, *http_errors("TimeoutException"))
    return any(isinstance(item, timeouts) or "Timeout" in type(item).__name__ for item in error_chain(error))


def _seconds(value: str) -> float | None:
    """Retry-After as seconds or an HTTP date; None for anything else (`soon`, `inf`, garbage)."""
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, OverflowError):
            return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


def retry_after_s(error: BaseException) -> float | None:
    """Seconds the server asked us to wait, or None when it asked nothing we can read."""
    for item in error_chain(error):
        headers = getattr(getattr(item, "response", None), "headers", None)
        value = headers.get("retry-after") if headers is not None else None
        if value is not None:
            return _seconds(value)
    return None


def retry_delay_s(policy: RetryPolicy, attempt: int, error: BaseException | None) -> float:
    """The wait before the next attempt: the server's Retry-After up to the policy's cap, else our
    own exponential backoff with full jitter."""
    asked = retry_after_s(error) if error is not None else None
    if asked is not None:
        return min(policy.max_retry_after_s, asked)
    return random.uniform(0, min(policy.max_delay_s, policy.base_delay_s * 2 ** (attempt - 1)))


def _wait(policy: RetryPolicy) -> Callable[[RetryCallState], float]:
    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        return retry_delay_s(policy, state.attempt_number, error)

    return wait


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    on_attempt: Callable[[int], None] | None = None,
    retryable: Callable[[BaseException], bool] = is_retryable,
) -> T:
    """Run `attempt` until it succeeds, a failure is not `retryable`, or the policy's bounds are hit."""
    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_attempts) | stop_before_delay(policy.max_total_s),
        wait=_wait(policy),
        retry=retry_if_exception(retryable),
        reraise=True,
    )
    async for state in retrying:
        with state:
            if on_attempt is not None:
                on_attempt(state.retry_state.attempt_number)
            return await attempt()
    raise AssertionError("unreachable: tenacity either returns or re-raises")
