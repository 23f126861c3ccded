"""Concurrency and request / token rates per endpoint, shared by everything in the process.

An endpoint is a provider and the server it talks to. Agents at one endpoint with the
same limits draw from one semaphore and one pair of leaky buckets, so two strategies
running side by side cannot together exceed a quota; an agent that sets limits of its own
(`-M concurrency=2`) gets them, and two servers of one provider (two local llama.cpp
servers) never wait on each other. A provider's own default concurrency applies only
outside a run: in a run, `--concurrency N` means N calls in flight unless a limit the user
set says less (`in_flight`).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from aiolimiter import AsyncLimiter

SECONDS_PER_MINUTE = 60.0


@dataclass(frozen=True)
class RateLimits:
    concurrency: int = 8
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None


@dataclass(frozen=True)
class Endpoint:
    """Where requests go: a provider and its server's URL (None: the provider's default server)."""

    provider: str
    url: str | None = None


class Gate:
    """One endpoint's limits in one event loop: a semaphore of calls in flight, leaky buckets of
    requests and tokens per minute. A Ray run's limiter actor holds one for the whole cluster."""

    def __init__(self, limits: RateLimits) -> None:
        self.semaphore = asyncio.Semaphore(limits.concurrency)
        rpm, tpm = limits.requests_per_minute, limits.tokens_per_minute
        self.requests = AsyncLimiter(rpm, SECONDS_PER_MINUTE) if rpm else None
        self.tokens = AsyncLimiter(tpm, SECONDS_PER_MINUTE) if tpm else None

    async def admit(self, estimated_tokens: int = 0) -> None:
        """Wait until the rate buckets allow one more request of about `estimated_tokens`."""
        if self.requests is not None:
            await self.requests.acquire()
        if self.tokens is not None and estimated_tokens:
            await self.tokens.acquire(min(float(estimated_tokens), self.tokens.max_rate))


@runtime_checkable
class Limiter(Protocol):
    """Where an agent's calls wait for their endpoint: `endpoint_slot` in this process, or a slot
    the workers of a Ray run share (`graphs.cluster.services`)."""

    def slot(
        self, endpoint: Endpoint, limits: RateLimits, estimated_tokens: int = 0
    ) -> AbstractAsyncContextManager[None]: ...


_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Endpoint, RateLimits], Gate]] = (
    weakref.WeakKeyDictionary()
)


@asynccontextmanager
async def endpoint_slot(
    endpoint: Endpoint, limits: RateLimits, estimated_tokens: int = 0
) -> AsyncIterator[None]:
    """Hold one of the endpoint's concurrent slots, after its rate buckets allow a request.

    Gates are per event loop (asyncio primitives belong to one loop), keyed by the
    endpoint and the limits asked for.
    """
    gates = _gates.setdefault(asyncio.get_running_loop(), {})
    gate = gates.get((endpoint, limits))
    if gate is None:
        gate = gates[(endpoint, limits)] = Gate(limits)
    await gate.admit(estimated_tokens)
    async with gate.semaphore:
        yield


@dataclass(frozen=True)
class InFlight:
    """How many calls a run can have in flight, and which limit binds."""

    bound: int
    reason: str

    def __str__(self) -> str:
        return f"calls in flight: up to {self.bound} ({self.reason})"


def in_flight(run_concurrency: int, gates: Iterable[tuple[Endpoint, RateLimits]]) -> InFlight:
    """The run's bound on calls in flight: `--concurrency`, unless the gates its agents draw from
    (an endpoint and its limits, as `endpoint_slot` keys them) together allow fewer; only a limit
    the user set can, an unset one follows the run."""
    distinct = list(dict.fromkeys(gates))
    allowed = sum(limits.concurrency for _, limits in distinct)
    if not distinct or allowed >= run_concurrency:
        return InFlight(run_concurrency, "--concurrency")
    named = (f"{endpoint.provider} limit concurrency={limits.concurrency}" for endpoint, limits in distinct)
    return InFlight(allowed, " + ".join(named))
