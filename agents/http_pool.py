"""One kept-alive HTTP connection pool per endpoint, shared by every agent that talks to it.

For the SDKs built on `httpx2` (openai, anthropic). A plain `httpx2.AsyncClient` keeps 20
connections alive: with 32 calls in flight, each reply beyond the 20th closed its connection and
a later call opened a new one (93 connections for 104 calls), and httpcore scans its whole pool,
quadratically, on every request (one measurement here: 9.5 ms of CPU per raw SDK call, against
4.0 ms on httpx2's pool). This pool keeps every connection it opened alive; the endpoint's gate
(`agents.limits`) bounds the calls in flight, and so the connections, to the run's concurrency or
the limit the user set.

Connections belong to the event loop that opened them, so the client holds one pool per loop:
one client serves a run's loop and any later one (judges run in a loop of their own).
"""

from __future__ import annotations

import asyncio
import functools
import weakref

import httpx2

from agents.batching import BatchingTransport, BatchProtocol, BatchSettings
from agents.provider import AgentParams

KEEP_EVERY_CONNECTION = httpx2.Limits(max_connections=None, max_keepalive_connections=None)


class PoolPerLoop(httpx2.AsyncBaseTransport):
    """An httpx transport with a connection pool of its own in each event loop that uses it."""

    def __init__(self, limits: httpx2.Limits = KEEP_EVERY_CONNECTION) -> None:
        self.limits = limits
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx2.AsyncHTTPTransport] = (
            weakref.WeakKeyDictionary()
        )

    def _pool(self) -> httpx2.AsyncHTTPTransport:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            pool = self._pools[loop] = httpx2.AsyncHTTPTransport(limits=self.limits)
        return pool

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._pool().handle_async_request(request)

    async def aclose(self) -> None:
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.aclose()


@functools.cache
def endpoint_pools(base_url: str | None) -> PoolPerLoop:
    """The process's connection pools for a server (None: a provider's default server; a pool keeps
    its connections by origin, so servers that share one never share a connection)."""
    return PoolPerLoop()


@functools.cache
def endpoint_client(base_url: str | None, timeout_s: float) -> httpx2.AsyncClient:
    """An async HTTP client on the server's shared pools, following redirects as the SDKs' own do
    (`base_url` only picks the pools: the SDK using the client sends full URLs)."""
    return httpx2.AsyncClient(transport=endpoint_pools(base_url), timeout=timeout_s, follow_redirects=True)


def batching_transport(
    base_url: str | None, protocol: BatchProtocol, params: AgentParams
) -> BatchingTransport:
    """A transport whose calls to the model go through the provider's batch API (`agents.batching`),
    its other requests on the server's shared pools; one per server and batch settings."""
    settings = BatchSettings(params.batch_requests, params.batch_wait_s, params.batch_poll_s)
    return _batching_transport(base_url, protocol, settings)


def batching_client(base_url: str | None, protocol: BatchProtocol, params: AgentParams) -> httpx2.AsyncClient:
    """An async client on `batching_transport`, for the SDKs that take a client."""
    return _batching_client(batching_transport(base_url, protocol, params))


@functools.cache
def _batching_transport(
    base_url: str | None, protocol: BatchProtocol, settings: BatchSettings
) -> BatchingTransport:
    return BatchingTransport(endpoint_pools(base_url), protocol, settings)


@functools.cache
def _batching_client(transport: BatchingTransport) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=transport, timeout=None, follow_redirects=True)
