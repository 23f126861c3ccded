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

Held = tuple[aiohttp.ClientSession, AsyncIterator[None]]
"""A session and the started generator that closes it with its loop (the loop holds its async
generators weakly: this is their strong reference)."""
_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Held]] = weakref.WeakKeyDictionary()


async def endpoint_session(base_url: str) -> aiohttp.ClientSession:
    """The running loop's session for the server at `base_url`, opened on first use."""
    per_loop = _sessions.setdefault(asyncio.get_running_loop(), {})
    held = per_loop.get(base_url)
    if held is None or held[0].closed:
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),  # no cap of its own: the endpoint's gate is the cap
            timeout=aiohttp.ClientTimeout(total=None),  # each request carries its model's timeout
            trust_env=False,  # it reads ~/.netrc and the proxy settings per request: `env_proxy`
        )
        held = per_loop[base_url] = (session, _closed_with_loop(per_loop, base_url, session))
        await anext(held[1])  # started: the loop now knows it and closes it at shutdown
    return held[0]


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
    per_loop: dict[str, Held], base_url: str, session: aiohttp.ClientSession
) -> AsyncIterator[None]:
    """Waits, started, until its loop shuts down, then closes `session` and forgets it."""
    try:
        yield
    finally:
        if (held := per_loop.get(base_url)) is not None and held[0] is session:
            del per_loop[base_url]
        await session.close()
