"""What the toolkit's Ray pools share (`bongard run` and `bongard generate` with `--executor ray`):
joining and leaving the cluster, splitting a limit among actors, keeping their slots full and
stopping them. Importing it without Ray installed is a one-line `ClusterError`.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from datasets_io.errors import BongardError


class ClusterError(BongardError):
    """The cluster cannot run the run: Ray missing, unreachable, too small, or every worker lost."""


try:
    import ray
    from ray.exceptions import RayActorError, RayTaskError
except ModuleNotFoundError:  # the extra is optional: said in one line, as any toolkit error
    raise ClusterError("--executor ray needs Ray: pip install 'bongard-agents[ray]'") from None

__all__ = [
    "MAX_RESTARTS", "NAMESPACE", "ClusterError", "ClusterOptions", "RayActorError", "RayTaskError",
    "connect", "drive", "ray", "share", "started", "stop", "worker_name",
]  # fmt: skip

NAMESPACE = "bongard"
MAX_RESTARTS = 3
"""Times Ray brings a dead worker back before its items go to the others."""

Task = TypeVar("Task")


@dataclass(frozen=True)
class ClusterOptions:
    address: str | None = None
    """`auto`, `HOST:PORT`, or None: start a Ray instance in this process."""
    workers: int | None = None
    """Actors solving items; None: one per CPU of the cluster (with a GPU model, as many as its
    engines the nodes hold), at most the run's concurrency."""


def share(total: int, workers: int, index: int) -> int:
    """Worker `index`'s part of `total` split as evenly as whole numbers allow (the parts add up)."""
    return total // workers + (index < total % workers)


def worker_name(run_id: str, index: int) -> str:
    """The actor's name in the `bongard` namespace (`ray.get_actor(name, namespace=NAMESPACE)`)."""
    return f"{run_id}/worker-{index}"


def connect(cluster: ClusterOptions) -> bool:
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


def drive(
    pool: list[Any],
    slots: list[int],
    pending: deque[Task],
    send: Callable[[Any, Task], Any],
    take: Callable[[Task, int, Any], None],
    fail: Callable[[Task, RayTaskError], None],
    lost: Callable[[int], None] | None = None,
) -> None:
    """Keep each actor's `slots` full of tasks (`send(actor, task)` gives the task's object ref),
    handing each result to `take(task, actor's index, result)` as it comes and each task that raised
    to `fail`. An actor lost past its restarts hands its tasks to the others (`lost(index)` is told
    once, so what it held can be freed)."""
    outstanding: dict[Any, tuple[Task, int]] = {}
    load = [0] * len(pool)
    alive = [True] * len(pool)
    while pending or outstanding:
        for index, actor in enumerate(pool):
            while alive[index] and load[index] < slots[index] and pending:
                task = pending.popleft()
                outstanding[send(actor, task)] = (task, index)
                load[index] += 1
        if not outstanding:
            raise ClusterError(f"every Ray worker is lost ({MAX_RESTARTS} restarts each); resume the run")
        [ready], _ = ray.wait(list(outstanding), num_returns=1)
        task, index = outstanding.pop(ready)
        load[index] -= 1
        try:
            result = ray.get(ready)
        except RayActorError:  # gone for good, past its restarts: its tasks go to the others
            if alive[index] and lost is not None:
                lost(index)
            alive[index] = False
            pending.appendleft(task)
            continue
        except RayTaskError as error:
            fail(task, error)
            continue
        take(task, index, result)


def started(pool: list[Any]) -> list[Any]:
    """Each actor's `about()`, once every one has started (its agents built, its model loaded); a
    pool one of whose actors could not start is stopped and refused in one line."""
    try:
        return list(ray.get([actor.about.remote() for actor in pool]))
    except RayActorError as error:
        stop(pool)
        raise ClusterError(f"a Ray worker could not start: {str(error).strip().splitlines()[-1]}") from None


def stop(pool: list[Any]) -> None:
    """Close each worker's checkpoints and end it."""
    closing = [worker.close.remote() for worker in pool]
    if closing:
        ray.wait(closing, num_returns=len(closing), timeout=30)
    for worker in pool:
        ray.kill(worker, no_restart=True)
