"""Per-provider concurrency and request / token rates, shared by everything in the process.

Every agent of one provider draws from the same semaphore and leaky buckets,
so two strategies running side by side cannot together exceed a quota.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from aiolimiter import AsyncLimiter

SECONDS_PER_MINUTE = 60.0


@dataclass(frozen=True)
class RateLimits:
    concurrency: int = 8
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None


class _ProviderGate:
    def __init__(self, limits: RateLimits) -> None:
        self.limits = limits
        self.semaphore = asyncio.Semaphore(limits.concurrency)
        rpm, tpm = limits.requests_per_minute, limits.tokens_per_minute
        self.requests = AsyncLimiter(rpm, SECONDS_PER_MINUTE) if rpm else None
        self.tokens = AsyncLimiter(tpm, SECONDS_PER_MINUTE) if tpm else None


_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _ProviderGate]] = (
    weakref.WeakKeyDictionary()
)


@asynccontextmanager
async def provider_slot(provider: str, limits: RateLimits, estimated_tokens: int = 0) -> AsyncIterator[None]:
    """Hold one of the provider's concurrent slots, after its rate buckets allow a request.

    Gates are per event loop (asyncio primitives belong to one loop); the first
    agent to use a provider in a loop sets its limits.
    """
    gates = _gates.setdefault(asyncio.get_running_loop(), {})
    gate = gates.get(provider)
    if gate is None:
        gate = gates[provider] = _ProviderGate(limits)
    if gate.requests is not None:
        await gate.requests.acquire()
    if gate.tokens is not None and estimated_tokens:
        await gate.tokens.acquire(min(float(estimated_tokens), gate.tokens.max_rate))
    async with gate.semaphore:
        yield
