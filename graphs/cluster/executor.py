"""A run's items solved on a Ray cluster: a pool of actors solves, this process stores.

Each actor (`ItemWorker`) builds the run's agents once, as `Runner` does, and solves the items
sent to it with `Runner.solve_item`, checkpointing in the workspace's checkpoint file as a local
run does. The driver keeps the results store: it takes finished items as they come (`ray.wait`),
stores each once and then has its worker drop the item's thread, so `runs`, `compare`, `view` and
`--resume` (on Ray or not) see a run like any other.

A killed worker is restarted by Ray and the items it had in flight are sent to it again,
continuing from their checkpoints: only the calls in flight are made again. A worker Ray cannot
bring back hands its items to the others, which continue them the same way. The run's
concurrency is divided among the workers; each endpoint's limits (calls in flight, requests and
tokens per minute) are held whole by a limiter actor beside the driver that every worker's calls
lease from, and the workspace's response cache by a cache actor there (`graphs.cluster.services`).
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.breaker import DEFAULT_MAX_FAILURES, CircuitBreaker
from agents.prompt_library import PromptLibrary
from datasets_io.problem import ProblemSummary
from graphs.cluster.connect import (  # first: without Ray, this import is the one-line ClusterError
    MAX_RESTARTS,
    ClusterError,
    RayActorError,
    RayTaskError,
    drive,
    ray,
    share,
    started,
)
from graphs.cluster.connect import NAMESPACE as NAMESPACE  # also this module's, as before the move
from graphs.cluster.connect import ClusterOptions as ClusterOptions
from graphs.cluster.connect import connect as _connect
from graphs.cluster.connect import stop as _stop
from graphs.cluster.connect import worker_name as worker_name
from graphs.cluster.services import Services, Shared
from graphs.kept import KeptResults
from graphs.nodes import SolveRuntime
from graphs.runs.checkpoints import Checkpoints, item_thread, open_checkpoints
from graphs.runs.runner import ItemOutcome, RunConfig, Runner, SolvedItem
from results.store import STORE_FILE, ResultsStore


@dataclass(frozen=True)
class WorkerInfo:
    """Where a worker runs and what it may do: its process, node, items at once and calls in flight."""

    index: int
    pid: int
    node: str
    items: int
    """Items it solves at once (its share of `--concurrency`)."""
    calls: dict[str, int]
    """Calls it may have in flight per agent spec: at most the endpoint's limit, which the workers
    share through its limiter (an engine of its own: the engine's)."""


class ItemWorker:
    """One Ray actor: the run's agents, built once, with its shares of the limits; its checkpoints."""

    def __init__(
        self,
        config: dict[str, Any],
        home: str,
        index: int,
        workers: int,
        max_failures: int,
        prompts_dir: str | None,
        services: Shared,
    ) -> None:
        self.index = index
        self.home = Path(home)
        store = ResultsStore(self.home / STORE_FILE)  # read only for the earlier runs a strategy reuses
        self.runner = Runner(RunConfig.model_validate(config), store, self.home, services.replies())
        limiter = services.joined(index)
        self.problems: dict[str, ProblemSummary] = {p.key: p for p in self.runner.problems}
        self.items = share(self.runner.config.concurrency, workers, index)
        breaker = CircuitBreaker(max_failures)
        self.calls: dict[str, int] = {}
        for agent in {id(a): a for a in self.runner.agents.values()}.values():
            agent.breaker = breaker
            limits = agent.rate_limits
            if agent.provider.gpu_engine is not None:  # an engine of this worker's own, loaded now
                agent.provider.gpu_engine.load(agent.inner)  # and kept: its limits are its own
                self.calls[agent.spec] = limits.concurrency
                continue
            agent.limiter = limiter  # an endpoint's limits are the whole run's, held by its limiter
            self.calls[agent.spec] = limits.concurrency
        self.prompts = PromptLibrary(Path(prompts_dir) if prompts_dir else None)
        self._exits = AsyncExitStack()
        self._opening = asyncio.Lock()
        self._checkpoints: Checkpoints | None = None
        self._runtime: SolveRuntime | None = None

    async def about(self) -> WorkerInfo:
        node = ray.get_runtime_context().get_node_id()
        return WorkerInfo(self.index, os.getpid(), node, self.items, self.calls)

    async def _opened(self) -> tuple[SolveRuntime, Checkpoints]:
        """The runtime and checkpointer, made in the actor's event loop by its first items' call."""
        async with self._opening:
            if self._runtime is None or self._checkpoints is None:
                # The workspace's checkpoints, as a local run's: whichever worker (or a local
                # `--resume`) takes an item next continues it after its last finished call.
                self._checkpoints = await self._exits.enter_async_context(open_checkpoints(self.home))
                self._runtime = SolveRuntime(
                    agents=self.runner.agents,
                    render_dir=self.home / "renders",
                    prompts=self.prompts,
                    variant=self.runner.config.variant,
                    call_slots=asyncio.Semaphore(self.items),
                    kept=KeptResults(self.home / "kept"),
                )
            return self._runtime, self._checkpoints

    async def solve(self, run_id: str, problem: str, attempt: int) -> SolvedItem:
        runtime, checkpoints = await self._opened()
        return await self.runner.solve_item(run_id, runtime, checkpoints, self.problems[problem], attempt)

    async def forget(self, run_id: str, problem: str, attempt: int) -> None:
        """Drop a stored item's thread: the driver has its result."""
        _, checkpoints = await self._opened()
        await checkpoints.adelete_thread(item_thread(run_id, problem, attempt))

    async def prompts_used(self) -> dict[str, dict[str, str]]:
        return self.prompts.used

    async def close(self) -> None:
        await self._exits.aclose()


RemoteWorker = ray.remote(ItemWorker)


def run_on_ray(
    runner: Runner,
    run_id: str,
    cluster: ClusterOptions,
    *,
    retry_errors: bool = False,
    on_item: Callable[[ItemOutcome], None] | None = None,
    max_failures: int = DEFAULT_MAX_FAILURES,
    announce: Callable[[str], None] | None = None,
    items: Sequence[tuple[ProblemSummary, int]] | None = None,
) -> None:
    """`Runner.run` on a Ray cluster: every pending item solved by the pool and stored here, once.

    Joins the cluster at `cluster.address` (or starts one here; a process already connected keeps
    its connection) and leaves it as it found it. `EndpointDown` and the like stop the run as they
    do locally; the workers are stopped on the way out."""
    pending = deque(runner.pending(run_id, retry_errors) if items is None else items)
    connected = _connect(cluster)
    prompts = PromptLibrary()  # the driver's overrides, read by the workers; the templates they read
    pool: list[Any] = []
    services: Services | None = None
    try:
        with runner.held(run_id, prompts):
            if not pending:
                return
            agents, home = runner.agents.values(), runner.home
            services = Services(agents, runner.config.concurrency, home, run_id, NAMESPACE)
            pool, infos = _start(runner, run_id, cluster, max_failures, prompts.user_dir, services.shared)
            if announce is not None:
                nodes = len({info.node for info in infos})
                announce(f"ray: {len(pool)} workers on {nodes} node{'s' * (nodes > 1)}")
            try:
                _drive(runner, run_id, pool, [info.items for info in infos], pending, on_item, services.lost)
            finally:
                prompts.used |= _prompts_used(pool)
    finally:
        _stop(pool)
        if services is not None:
            services.stop()
        if connected:
            ray.shutdown()


def _start(
    runner: Runner,
    run_id: str,
    cluster: ClusterOptions,
    max_failures: int,
    prompts_dir: Path | None,
    services: Shared,
) -> tuple[list[Any], list[WorkerInfo]]:
    """The pool, each worker started (agents built) and placed on the nodes as evenly as it goes."""
    resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    cpus = int(resources.get("CPU", 0))
    # An agent with an engine in the worker's process: each worker asks for its GPUs (the most any
    # such agent takes: engines of one worker share its GPUs) and there are as many as fit.
    gpus, engine = max(
        ((a.provider.engine_gpus(a.params), a.spec) for a in runner.agents.values()), default=(0, "")
    )
    room, nodes = _gpu_room(gpus) if gpus else (cpus, "")
    workers = cluster.workers or max(1, min(room, cpus, runner.config.concurrency))
    if workers > cpus:
        raise ClusterError(f"--workers {workers}: the cluster has {cpus} CPUs, and each worker takes one")
    if workers > room:
        raise ClusterError(
            f"{engine} takes {gpus} GPUs of one node for each worker's engine: the cluster's {nodes} "
            f"hold {room} such workers, not {workers}"
        )
    if workers > runner.config.concurrency:
        raise ClusterError(
            f"--workers {workers} is more than --concurrency {runner.config.concurrency}: "
            "each worker solves its share of the run's items at once"
        )
    pool: list[Any] = [
        RemoteWorker.options(
            name=worker_name(run_id, index),
            namespace=NAMESPACE,
            num_cpus=1,
            num_gpus=gpus,  # Ray sets the worker's CUDA_VISIBLE_DEVICES to them
            max_restarts=MAX_RESTARTS,
            max_task_retries=-1,  # a restarted worker takes its items again, from their checkpoints
            scheduling_strategy="SPREAD",
        ).remote(
            runner.config.model_dump(mode="json"),
            str(runner.home),
            index,
            workers,
            max_failures,
            str(prompts_dir) if prompts_dir else None,
            services,
        )
        for index in range(workers)
    ]
    infos: list[WorkerInfo] = started(pool)
    return pool, infos


def _gpu_room(gpus: int) -> tuple[int, str]:
    """How many workers of `gpus` GPUs the live nodes hold (an engine's GPUs are on one node, and a
    worker takes a CPU too), and the nodes' GPUs as a message names them."""
    nodes = [node["Resources"] for node in ray.nodes() if node["Alive"]]  # type: ignore[no-untyped-call]
    room = sum(min(int(node.get("GPU", 0)) // gpus, int(node.get("CPU", 0))) for node in nodes)
    counts = sorted((int(node.get("GPU", 0)) for node in nodes), reverse=True)
    return room, f"{sum(counts)} GPUs ({' + '.join(map(str, counts))} on its {len(counts)} nodes)"


def _drive(
    runner: Runner,
    run_id: str,
    pool: list[Any],
    slots: list[int],
    pending: deque[tuple[ProblemSummary, int]],
    on_item: Callable[[ItemOutcome], None] | None,
    lost: Callable[[int], None],
) -> None:
    """Keep each worker's slots full, store each finished item once, as it comes; `lost(index)`
    when a worker is gone for good."""

    def send(worker: Any, item: tuple[ProblemSummary, int]) -> Any:
        return worker.solve.remote(run_id, item[0].key, item[1])

    def take(item: tuple[ProblemSummary, int], index: int, solved: SolvedItem) -> None:
        outcome = runner.save_solved(run_id, solved)
        if solved.answer is not None:
            pool[index].forget.remote(run_id, solved.problem, solved.attempt)
        if on_item is not None:
            on_item(outcome)

    def fail(item: tuple[ProblemSummary, int], error: RayTaskError) -> None:
        # a dead endpoint, a full disk: the run stops as it does locally
        raise (error.cause if isinstance(error.cause, Exception) else error) from None

    drive(pool, slots, pending, send, take, fail, lost)


def _prompts_used(pool: list[Any]) -> dict[str, dict[str, str]]:
    """The templates the workers read, for the run's provenance (a lost worker's are lost)."""
    used: dict[str, dict[str, str]] = {}
    for worker in pool:
        try:
            used |= ray.get(worker.prompts_used.remote(), timeout=30)
        except (RayActorError, ray.exceptions.GetTimeoutError):
            continue
    return used
