"""One aiohttp session per server and event loop, for the toolkit's own OpenAI-protocol client.

The client's CPU per call sets the pace against a fast local server. Replaying the same 1,300
recorded requests at 32 in flight (`benchmarks.runs --sections speed`), aiohttp spends about
0.5 ms of CPU per call against 1.9 ms for `httpx2` (httpcore scans every pooled connection's
socket state on each request, through anyio). So `agents.providers.openai_wire` posts through
aiohttp; the SDK providers keep their own stack on `agents.http_pool`.

A session belongs to the loop that opened it and keeps every connection alive (the endpoint's
gate in `agents.limits` bounds the calls in flight, and so the connections). It is closed as
the loop shuts down: `asyncio.run` closes every open async generator of its loop before closing
it, and each session is held open by one (`_closed_with_loop`), so no run leaves an unclosed
session or socket behind.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import AsyncIterator

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, aiohttp.ClientSession]] = (
    weakref.WeakKeyDictionary()
)
_closers: set[object] = set()
"""The generators holding sessions open: the loop's registry of them is weak."""


async def endpoint_session(base_url: str) -> aiohttp.ClientSession:
    """The running loop's session for the server at `base_url`, opened on first use."""
    loop = asyncio.get_running_loop()
    per_loop = _sessions.setdefault(loop, {})
    session = per_loop.get(base_url)
    if session is None or session.closed:
        session = per_loop[base_url] = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),  # no cap of its own: the endpoint's gate is the cap
            timeout=aiohttp.ClientTimeout(total=None),  # the managed agent times each attempt
            trust_env=False,  # it reads ~/.netrc and the proxy settings per request: `env_proxy`
        )
        closer = _closed_with_loop(per_loop, base_url, session)
        _closers.add(closer)
        await anext(closer)  # started: the loop now knows it and closes it at shutdown
    return session


@functools.cache
def env_proxy(base_url: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy (and its credentials) the environment names for a server (`HTTP(S)_PROXY`,
    `NO_PROXY`, `~/.netrc`), found once by aiohttp's own rule. Its `trust_env` looked them up on
    every request, through a worker thread: about a tenth of the client's CPU per call."""
    try:
        return get_env_proxy_for_url(URL(base_url))
    except LookupError:
        return None, None


async def _closed_with_loop(
    per_loop: dict[str, aiohttp.ClientSession], base_url: str, session: aiohttp.ClientSession
) -> AsyncIterator[None]:
    """Waits, started, until its loop shuts down (or it is collected), then closes `session`."""
    try:
        yield
    finally:
        if per_loop.get(base_url) is session:
            del per_loop[base_url]
        await session.close()
