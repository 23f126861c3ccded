"""A run's items solved on a Ray cluster: a pool of actors solves, this process stores.

Each actor (`ItemWorker`) builds the run's agents once, as `Runner` does, and solves the items
sent to it with `Runner.solve_item`, checkpointing in its own folder of the workspace
(`ray/worker-K`). The driver keeps the results store: it takes finished items as they come
(`ray.wait`), stores each once and then has its worker drop the item's thread, so `runs`,
`compare`, `view` and `--resume` see a run like any other.

A killed worker is restarted by Ray in the same folder and the items it had in flight are sent
to it again, continuing from their checkpoints: only the calls in flight are made again. A worker
Ray cannot bring back hands its items to the others. The run's concurrency and each agent's
limits (calls in flight, requests and tokens per minute) are divided among the workers, so the
cluster never has more calls in flight at an endpoint than the limit. Workers on one machine
share the workspace's response cache file.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agents.breaker import DEFAULT_MAX_FAILURES, CircuitBreaker
from agents.prompt_library import PromptLibrary
from datasets_io.errors import BongardError
from datasets_io.problem import BongardProblem
from datasets_io.store import STORE_FILE, ResultsStore
from graphs.checkpoints import item_thread, open_checkpoints
from graphs.kept import KeptResults
from graphs.nodes import SolveRuntime
from graphs.runner import ItemOutcome, RunConfig, Runner, SolvedItem


class ClusterError(BongardError):
    """The cluster cannot run the run: Ray missing, unreachable, too small, or every worker lost."""


try:
    import ray
    from ray.exceptions import RayActorError, RayTaskError
except ModuleNotFoundError:  # the extra is optional: said in one line, as any toolkit error
    raise ClusterError("--executor ray needs Ray: pip install 'bongard-agents[ray]'") from None

NAMESPACE = "bongard"
MAX_RESTARTS = 3
"""Times Ray brings a dead worker back (in its own folder) before its items go to the others."""


@dataclass(frozen=True)
class ClusterOptions:
    address: str | None = None
    """`auto`, `HOST:PORT`, or None: start a Ray instance in this process."""
    workers: int | None = None
    """Actors solving items; None: one per CPU of the cluster, at most the run's concurrency."""


@dataclass(frozen=True)
class WorkerInfo:
    """Where a worker runs and what it may do: its process, node and shares of the run's limits."""

    index: int
    pid: int
    node: str
    items: int
    """Items it solves at once (its share of `--concurrency`)."""
    calls: dict[str, int]
    """Calls it may have in flight per agent spec (its share of the agent's limit)."""


def share(total: int, workers: int, index: int) -> int:
    """Worker `index`'s part of `total` split as evenly as whole numbers allow (the parts add up)."""
    return total // workers + (index < total % workers)


def worker_name(run_id: str, index: int) -> str:
    """The actor's name in the `bongard` namespace (`ray.get_actor(name, namespace=NAMESPACE)`)."""
    return f"{run_id}/worker-{index}"


class ItemWorker:
    """One Ray actor: the run's agents, built once, with its shares of the limits; its checkpoints."""

    def __init__(
        self, config: dict[str, Any], home: str, index: int, workers: int, max_failures: int,
        prompts_dir: str | None,
    ) -> None:  # fmt: skip
        self.index = index
        self.home = Path(home)
        store = ResultsStore(self.home / STORE_FILE)  # read only for the earlier runs a strategy reuses
        self.runner = Runner(RunConfig.model_validate(config), store, self.home)
        self.problems: dict[str, BongardProblem] = {p.key: p for p in self.runner.problems}
        self.items = share(self.runner.config.concurrency, workers, index)
        breaker = CircuitBreaker(max_failures)
        self.calls: dict[str, int] = {}
        for agent in {id(a): a for a in self.runner.agents.values()}.values():
            limits = agent.rate_limits  # the whole run's: divided here, so the workers' parts add up
            per_minute = {
                key: None if value is None else value / workers
                for key, value in (
                    ("requests_per_minute", limits.requests_per_minute),
                    ("tokens_per_minute", limits.tokens_per_minute),
                )
            }
            calls = share(limits.concurrency, workers, index)
            agent.params = agent.params.model_copy(update={"concurrency": calls or 1, **per_minute})
            agent.breaker = breaker
            self.calls[agent.spec] = calls
        self.prompts = PromptLibrary(Path(prompts_dir) if prompts_dir else None)
        self._exits = AsyncExitStack()
        self._opening = asyncio.Lock()
        self._checkpoints: AsyncSqliteSaver | None = None
        self._runtime: SolveRuntime | None = None

    async def about(self) -> WorkerInfo:
        node = ray.get_runtime_context().get_node_id()
        return WorkerInfo(self.index, os.getpid(), node, self.items, self.calls)

    async def _opened(self) -> tuple[SolveRuntime, AsyncSqliteSaver]:
        """The runtime and checkpointer, made in the actor's event loop by its first items' call."""
        async with self._opening:
            if self._runtime is None or self._checkpoints is None:
                folder = self.home / "ray" / f"worker-{self.index}"
                self._checkpoints = await self._exits.enter_async_context(open_checkpoints(folder))
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
) -> None:
    """`Runner.run` on a Ray cluster: every pending item solved by the pool and stored here, once.

    Joins the cluster at `cluster.address` (or starts one here; a process already connected keeps
    its connection) and leaves it as it found it. `EndpointDown` and the like stop the run as they
    do locally; the workers are stopped on the way out."""
    pending = deque(runner.pending(run_id, retry_errors))
    connected = _connect(cluster)
    prompts = PromptLibrary()  # the driver's overrides, read by the workers; the templates they read
    pool: list[Any] = []
    try:
        with runner.held(run_id, prompts):
            if not pending:
                return
            pool, infos = _start(runner, run_id, cluster, max_failures, prompts.user_dir)
            if announce is not None:
                nodes = len({info.node for info in infos})
                announce(f"ray: {len(pool)} workers on {nodes} node{'s' * (nodes > 1)}")
            try:
                _drive(runner, run_id, pool, [info.items for info in infos], pending, on_item)
            finally:
                prompts.used |= _prompts_used(pool)
    finally:
        _stop(pool)
        if connected:
            ray.shutdown()


def _connect(cluster: ClusterOptions) -> bool:
    """Connect to the cluster unless this process is connected already; whether it connected now.
    Without an address, a Ray instance of this process's own, even where `ray start` runs one (that
    one is `auto`), with a CPU per worker asked for: workers waiting on an API need no core each."""
    if ray.is_initialized():
        return False
    try:
        ray.init(
            address=cluster.address or "local",
            num_cpus=None if cluster.address else cluster.workers or os.cpu_count(),
            namespace=NAMESPACE,
            logging_level=logging.ERROR,
            log_to_driver=False,  # the progress line is the run's output; a worker's error comes back
            include_dashboard=False,
        )
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise ClusterError(f"cannot join the Ray cluster at {cluster.address}: {error}") from None
    return True


def _start(
    runner: Runner, run_id: str, cluster: ClusterOptions, max_failures: int, prompts_dir: Path | None
) -> tuple[list[Any], list[WorkerInfo]]:
    """The pool, each worker started (agents built) and placed on the nodes as evenly as it goes."""
    resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    cpus = int(resources.get("CPU", 0))
    workers = cluster.workers or max(1, min(cpus, runner.config.concurrency))
    if workers > cpus:
        raise ClusterError(f"--workers {workers}: the cluster has {cpus} CPUs, and each worker takes one")
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
        )
        for index in range(workers)
    ]
    try:
        infos: list[WorkerInfo] = ray.get([worker.about.remote() for worker in pool])
    except RayActorError as error:
        _stop(pool)
        raise ClusterError(f"a Ray worker could not start: {str(error).strip().splitlines()[-1]}") from None
    for info in infos:
        if stopped := [spec for spec, calls in info.calls.items() if calls == 0]:
            _stop(pool)
            raise ClusterError(
                f"--workers {workers}: {', '.join(stopped)} allows fewer calls in flight than there are "
                "workers; give fewer workers or a higher -M concurrency"
            )
    return pool, infos


def _drive(
    runner: Runner,
    run_id: str,
    pool: list[Any],
    slots: list[int],
    pending: deque[tuple[BongardProblem, int]],
    on_item: Callable[[ItemOutcome], None] | None,
) -> None:
    """Keep each worker's slots full, store each finished item once, as it comes."""
    outstanding: dict[Any, tuple[tuple[BongardProblem, int], int]] = {}
    load = [0] * len(pool)
    alive = [True] * len(pool)
    while pending or outstanding:
        for index, worker in enumerate(pool):
            while alive[index] and load[index] < slots[index] and pending:
                item = pending.popleft()
                outstanding[worker.solve.remote(run_id, item[0].key, item[1])] = (item, index)
                load[index] += 1
        if not outstanding:
            raise ClusterError(f"every Ray worker is lost ({MAX_RESTARTS} restarts each); resume the run")
        [ready], _ = ray.wait(list(outstanding), num_returns=1)
        item, index = outstanding.pop(ready)
        load[index] -= 1
        try:
            solved: SolvedItem = ray.get(ready)
        except RayActorError:  # gone for good, past its restarts: its items go to the others
            alive[index] = False
            pending.appendleft(item)
            continue
        except RayTaskError as error:  # a dead endpoint, a full disk: the run stops as it does locally
            raise (error.cause if isinstance(error.cause, Exception) else error) from None
        outcome = runner.save_solved(run_id, solved)
        if solved.answer is not None:
            pool[index].forget.remote(run_id, solved.problem, solved.attempt)
        if on_item is not None:
            on_item(outcome)


def _prompts_used(pool: list[Any]) -> dict[str, dict[str, str]]:
    """The templates the workers read, for the run's provenance (a lost worker's are lost)."""
    used: dict[str, dict[str, str]] = {}
    for worker in pool:
        try:
            used |= ray.get(worker.prompts_used.remote(), timeout=30)
        except (RayActorError, ray.exceptions.GetTimeoutError):
            continue
    return used


def _stop(pool: list[Any]) -> None:
    """Close each worker's checkpoints and end it."""
    closing = [worker.close.remote() for worker in pool]
    if closing:
        ray.wait(closing, num_returns=len(closing), timeout=30)
    for worker in pool:
        ray.kill(worker, no_restart=True)
