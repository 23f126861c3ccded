"""What a Ray pool's workers share (a run's or a generation's), held by actors beside the driver:
limits and the response cache.

An `EndpointLimiter` per endpoint (and the limits its agents ask for) holds the run's whole
concurrency and requests / tokens per minute there, so a worker that is idle leaves its calls to
the others and any number of workers keeps the limit. Each call takes a lease from it, tied to the
worker's process: a worker restarted after a kill joins again and the leases of its dead process
come back; one lost for good is let go by the driver. A `CacheKeeper` opens the workspace's
response cache on the driver's machine and reads and writes replies for every worker, so a
deterministic call is answered once across machines without a shared folder. Workers reach both
through `RayLimiter` and `RayCache`, which `ManagedAgent` takes as it takes the local ones.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from agents.cache import ResponseCache
from agents.limits import Endpoint, Gate, RateLimits
from agents.managed import ManagedAgent
from agents.registry import CACHE_FILE

Gates = dict[tuple[Endpoint, RateLimits], Any]
"""Limiter actors by the endpoint and limits an agent's calls draw from (as `endpoint_slot` keys them)."""


class EndpointLimiter:
    """One endpoint's limits for the whole run (an async actor): every worker's calls lease here."""

    def __init__(self, limits: RateLimits) -> None:
        self.gate = Gate(limits)
        self.leases: dict[int, tuple[int, str]] = {}
        """Slots held, by lease: the worker and its process (incarnation) holding each."""
        self.workers: dict[int, str] = {}
        """Each worker's live process; a lease asked for by another is not granted."""
        self.numbers = itertools.count()

    async def join(self, worker: int, incarnation: str) -> None:
        """A worker's process (re)started: the slots its earlier process held come back."""
        self.workers[worker] = incarnation
        self._drop(worker, keep=incarnation)

    async def leave(self, worker: int) -> None:
        """A worker lost for good: its slots come back."""
        self.workers.pop(worker, None)
        self._drop(worker)

    async def acquire(self, worker: int, incarnation: str, estimated_tokens: int) -> int | None:
        """A lease on one slot, once the rate buckets and the slots allow; None for a process that
        is no longer its worker's (killed while it waited)."""
        await self.gate.admit(estimated_tokens)
        await self.gate.semaphore.acquire()
        if self.workers.get(worker) != incarnation:
            self.gate.semaphore.release()
            return None
        lease = next(self.numbers)
        self.leases[lease] = (worker, incarnation)
        return lease

    async def release(self, lease: int | None) -> None:
        if lease is not None and self.leases.pop(lease, None) is not None:
            self.gate.semaphore.release()

    async def holding(self) -> dict[int, int]:
        """Slots held now, by worker."""
        return dict(Counter(worker for worker, _ in self.leases.values()))

    def _drop(self, worker: int, keep: str | None = None) -> None:
        for lease, (holder, incarnation) in list(self.leases.items()):
            if holder == worker and incarnation != keep:
                del self.leases[lease]
                self.gate.semaphore.release()


class CacheKeeper:
    """The workspace's response cache, opened on the driver's machine, read and written for all."""

    def __init__(self, path: str) -> None:
        self.cache = ResponseCache(Path(path))

    def get(self, key: str) -> dict[str, Any] | None:
        return self.cache.get(key)

    def put(self, key: str, agent: str, reply: dict[str, Any]) -> None:
        self.cache.put(key, agent, reply)

    def close(self) -> None:
        self.cache.close()


async def _answer(asked: Any) -> Any:
    """An actor's answer; an error it raised (a full disk) as itself, not wrapped in Ray's."""
    try:
        return await asked
    except RayTaskError as error:
        raise (error.cause if isinstance(error.cause, Exception) else error) from None


class RayLimiter:
    """A worker process's `agents.limits.Limiter`: each call's slot is a lease from its endpoint's
    limiter actor."""

    def __init__(self, limiters: Gates, worker: int, incarnation: str) -> None:
        self.limiters = limiters
        self.worker = worker
        self.incarnation = incarnation

    @asynccontextmanager
    async def slot(
        self, endpoint: Endpoint, limits: RateLimits, estimated_tokens: int = 0
    ) -> AsyncIterator[None]:
        limiter = self.limiters[(endpoint, limits)]
        asked = limiter.acquire.remote(self.worker, self.incarnation, estimated_tokens)
        try:
            lease = await _answer(asked)
        except asyncio.CancelledError:
            limiter.release.remote(asked)  # Ray passes the lease once granted: the slot comes back
            raise
        if lease is None:
            raise RuntimeError(f"Ray worker {self.worker} was restarted: this process holds no slot")
        try:
            yield
        finally:
            limiter.release.remote(lease)


class RayCache:
    """A worker's `agents.cache.ReplyCache`: the run's `CacheKeeper` answers."""

    def __init__(self, keeper: Any) -> None:
        self.keeper = keeper

    async def aget(self, key: str) -> dict[str, Any] | None:
        reply: dict[str, Any] | None = await _answer(self.keeper.get.remote(key))
        return reply

    async def aput(self, key: str, agent: str, reply: dict[str, Any]) -> None:
        await _answer(self.keeper.put.remote(key, agent, reply))


RemoteLimiter = ray.remote(EndpointLimiter)
RemoteKeeper = ray.remote(CacheKeeper)


def limiter_name(run_id: str, index: int) -> str:
    """A limiter actor's name in the run's namespace, in the order of `Services.limiters`."""
    return f"{run_id}/limiter-{index}"


@dataclass(frozen=True)
class Shared:
    """The run's shared actors by name, handed to each worker: plain data, as Ray restarts a killed
    worker reliably only with arguments held inline (ray-project/ray#53727), not actor handles."""

    namespace: str
    cache: str
    """The `CacheKeeper`'s name."""
    limiters: dict[tuple[Endpoint, RateLimits], str]
    """Limiter actors' names by the endpoint and limits an agent's calls draw from."""

    def joined(self, worker: int) -> RayLimiter:
        """This process's limiter as worker `worker`; the slots an earlier process of it held come back."""
        incarnation = uuid.uuid4().hex
        limiters = {gate: self._actor(name) for gate, name in self.limiters.items()}
        ray.get([limiter.join.remote(worker, incarnation) for limiter in limiters.values()])
        return RayLimiter(limiters, worker, incarnation)

    def replies(self) -> RayCache:
        return RayCache(self._actor(self.cache))

    def _actor(self, name: str) -> Any:
        return ray.get_actor(name, namespace=self.namespace)


class Services:
    """The driver's hold on the run's shared actors: a limiter per endpoint and limits the run's
    agents draw from, and the cache keeper, on the driver's node (a worker node lost takes neither
    with it). They live while the driver holds their handles."""

    def __init__(
        self, agents: Iterable[ManagedAgent], concurrency: int, home: Path, run_id: str, namespace: str
    ) -> None:
        """For `agents` (a run's, or a generation's, as their workers build them), of which at most
        `concurrency` calls wait at once, and the response cache of the workspace `home`."""
        beside = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        gates = dict.fromkeys((agent.endpoint, agent.rate_limits) for agent in agents)
        names = {gate: limiter_name(run_id, index) for index, gate in enumerate(gates)}
        self.limiters: list[Any] = [
            RemoteLimiter.options(
                name=name,
                namespace=namespace,
                num_cpus=0,
                max_concurrency=concurrency + 1000,  # a waiting call holds one
                scheduling_strategy=beside,
            ).remote(limits)
            for (_, limits), name in names.items()
        ]
        cache = f"{run_id}/cache"
        self.keeper: Any = RemoteKeeper.options(
            name=cache, namespace=namespace, num_cpus=0, scheduling_strategy=beside
        ).remote(str(home / CACHE_FILE))
        self.shared = Shared(namespace, cache, names)

    def lost(self, worker: int) -> None:
        """Worker `worker` is gone for good: its slots come back."""
        for limiter in self.limiters:
            limiter.leave.remote(worker)

    def stop(self) -> None:
        """Close the cache (the writes sent before are made first) and end the actors."""
        ray.wait([self.keeper.close.remote()], timeout=30)
        for actor in (self.keeper, *self.limiters):
            ray.kill(actor, no_restart=True)
