"""A generation's source problems advanced on a Ray cluster: a pool of actors renders, this process stores.

Each actor (`GenerationWorker`) builds the generation's agents, image generator and embedder once
and keeps them: FLUX's pipeline loads on the GPU Ray gave the actor (one each), a CPU generator's
actor takes a CPU. It advances the sources sent to it as a local generation does, in the
workspace's checkpoint file, so a source's thread is the same whichever process advanced it and
`bongard generate --resume` continues it here or on the cluster. This process reads the
checkpoints first (a source built, or waiting for review decisions, needs no actor) and keeps the
store: the images to review, the status, and the dataset once every source is built.

A killed actor is restarted by Ray and the sources it had in flight are sent to it again,
continuing from their checkpoints: only the steps in flight are made again. An actor Ray cannot
bring back hands its sources to the others. Each endpoint's limits are held whole by its limiter
actor and replies kept by the cache actor, as in a run (`graphs.cluster.services`).
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.image_generators import resolve_generator
from graphs.cluster.connect import (  # first: without Ray, this import is the one-line ClusterError
    MAX_RESTARTS,
    NAMESPACE,
    ClusterError,
    ClusterOptions,
    RayTaskError,
    connect,
    drive,
    ray,
    share,
    started,
    stop,
    worker_name,
)
from graphs.cluster.services import Services, Shared
from graphs.generation.graph import Generation as GenerationGraph
from graphs.generation.graph import GenerationState, generation_graph
from graphs.generation.run import (
    Advanced,
    Generation,
    GenerationConfig,
    GenerationStatus,
    SourceUnit,
    advance_source,
)
from graphs.runs.checkpoints import open_checkpoints
from results.store import STORE_FILE, ResultsStore

__all__ = ["ClusterError", "ClusterOptions", "GenerationWorker", "generate_on_ray"]

GPU_GENERATORS = frozenset({"flux"})
"""Generators that render on this process's GPU: their actor asks Ray for one."""


@dataclass(frozen=True)
class WorkerPlace:
    """Where a worker runs (its process, its node) and the sources it advances at once."""

    index: int
    pid: int
    node: str
    sources: int


def actor_resources(generator: str) -> dict[str, int]:
    """What one actor asks Ray for: a CPU, and a GPU of its own where the generator renders on one."""
    return {"num_cpus": 1, "num_gpus": int(generator.partition(":")[0] in GPU_GENERATORS)}


def pool_size(cluster: ClusterOptions, resources: Mapping[str, float], gpus: int, concurrency: int) -> int:
    """The workers to start: `--workers`, else as many as the cluster's CPUs (GPUs, for a GPU
    generator) and the generation's concurrency allow; a pool that cannot be placed is refused."""
    cpus = int(resources.get("CPU", 0))
    room = int(resources.get("GPU", 0)) if gpus else cpus
    workers = cluster.workers or max(1, min(cpus, room, concurrency))
    if workers > cpus:
        raise ClusterError(f"--workers {workers}: the cluster has {cpus} CPUs, and each worker takes one")
    if workers > room:
        raise ClusterError(
            f"{workers} workers: the image generator renders on a GPU of each worker's own, "
            f"and the cluster has {room} GPUs"
        )
    if workers > concurrency:
        raise ClusterError(
            f"--workers {workers} is more than --concurrency {concurrency}: "
            "each worker advances its share of the sources at once"
        )
    return workers


class GenerationWorker:
    """One Ray actor: the generation's agents, generator and embedder, built once and kept."""

    def __init__(
        self,
        generation_id: str,
        config: dict[str, Any],
        home: str,
        index: int,
        workers: int,
        services: Shared,
    ) -> None:
        folder = Path(home)
        store = ResultsStore(folder / STORE_FILE)  # never written here: the driver keeps the records
        self.job = Generation(generation_id, GenerationConfig.model_validate(config), store, folder)
        self.index = index
        self.sources = share(self.job.config.concurrency, workers, index)
        # Its share of the calls in flight too; replies kept by the cache actor, each endpoint's
        # limits held whole by its limiter actor (an engine of the worker's own keeps its own).
        self.runtime = self.job.runtime(calls=self.sources, cache=services.replies())
        limiter = services.joined(index)
        for agent in self.runtime.solve.agents.values():
            if agent.provider.gpu_engine is None:
                agent.limiter = limiter
        self._exits = AsyncExitStack()
        self._opening = asyncio.Lock()
        self._graph: GenerationGraph | None = None

    async def about(self) -> WorkerPlace:
        node = ray.get_runtime_context().get_node_id()
        return WorkerPlace(self.index, os.getpid(), node, self.sources)

    async def _opened(self) -> GenerationGraph:
        """The graph with the workspace's checkpoints, opened in the actor's event loop."""
        async with self._opening:
            if self._graph is None:
                checkpoints = await self._exits.enter_async_context(open_checkpoints(self.job.home))
                self._graph = generation_graph().copy(update={"checkpointer": checkpoints})
            return self._graph

    async def advance(self, unit: SourceUnit) -> Advanced:
        graph = await self._opened()
        item, thread = self.job.item(unit.source, self.runtime), self.job.thread(unit.source)
        return await advance_source(graph, item, thread, unit.decided)

    async def close(self) -> None:
        await self._exits.aclose()


RemoteWorker = ray.remote(GenerationWorker)


def generate_on_ray(
    job: Generation, cluster: ClusterOptions, announce: Callable[[str], None] | None = None
) -> GenerationStatus:
    """`Generation.run` on a Ray cluster: every source with work left advanced by the pool, every
    result recorded here as it comes. Joins the cluster at `cluster.address` (or starts one here; a
    process already connected keeps its connection) only when some source has work left."""
    status, results = GenerationStatus(job.id, job.folder), dict[str, GenerationState]()
    units = deque(asyncio.run(_unsettled(job, status, results)))
    if units:
        resolve_generator(job.config.generator, job.config.generator_params)  # its package and key
        connected = connect(cluster)
        pool: list[Any] = []
        services: Services | None = None
        try:
            agents = job.agents().values()
            services = Services(agents, job.config.concurrency, job.home, job.id, NAMESPACE)
            pool, places = _start(job, cluster, services.shared)
            if announce is not None:
                nodes = len({place.node for place in places})
                announce(f"ray: {len(pool)} workers on {nodes} node{'s' * (nodes > 1)}")
                announce(str(job.in_flight(agents)))

            def take(unit: SourceUnit, _: int, advanced: Advanced) -> None:
                job.record(status, results, unit.source, advanced)

            def fail(unit: SourceUnit, error: RayTaskError) -> None:  # as a local source fails
                job.fail(status, unit.source, error.cause if isinstance(error.cause, Exception) else error)

            def send(worker: Any, unit: SourceUnit) -> Any:
                return worker.advance.remote(unit)

            drive(pool, [p.sources for p in places], units, send, take, fail, services.lost)
        finally:
            stop(pool)
            if services is not None:
                services.stop()
            if connected:
                ray.shutdown()
    return job.finish(status, results)


async def _unsettled(
    job: Generation, status: GenerationStatus, results: dict[str, GenerationState]
) -> list[SourceUnit]:
    async with open_checkpoints(job.home) as checkpoints:
        graph = generation_graph().copy(update={"checkpointer": checkpoints})
        return await job.unsettled(graph, status, results)


def _start(job: Generation, cluster: ClusterOptions, services: Shared) -> tuple[list[Any], list[WorkerPlace]]:
    """The pool, each worker started (agents built) and placed on the nodes as evenly as it goes."""
    resources = actor_resources(job.config.generator)
    available: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    workers = pool_size(cluster, available, resources["num_gpus"], job.config.concurrency)
    pool: list[Any] = [
        RemoteWorker.options(
            name=worker_name(job.id, index),
            namespace=NAMESPACE,
            max_restarts=MAX_RESTARTS,
            max_task_retries=-1,  # a restarted worker takes its sources again, from their checkpoints
            scheduling_strategy="SPREAD",
            **resources,
        ).remote(job.id, job.config.model_dump(mode="json"), str(job.home), index, workers, services)
        for index in range(workers)
    ]
    places: list[WorkerPlace] = started(pool)
    return pool, places
