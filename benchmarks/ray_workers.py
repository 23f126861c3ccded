"""Throughput of a run on Ray with 1, 2 and 4 workers, as ratios to the ideal.

Run from the repository root: `python -m benchmarks.ray_workers`. A Ray instance of this
process's own (one node, a CPU per worker asked for) runs `descriptive` over classic problems
against a stand-in OpenAI-protocol server with a fixed latency; each worker may have the same
number of calls in flight, so N workers should make N times the calls per second. The rate is
taken at the server, from its first request to its last (the workers' start-up left out); the
ideal is workers x calls in flight each / latency. Figures depend on the machine's cores.

First, what the run's shared actors add to each call (`graphs.cluster.services`), side by side with
what a local run pays: a slot from the limiter actor against one from this process's gates, and
a cached reply read through the cache actor against one read from the file, one call after
another and, for the limiter, many calls at once.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import ray

from agents.cache import ReplyCache, ResponseCache
from agents.limits import Endpoint, RateLimits, endpoint_slot
from graphs.cluster.executor import ClusterOptions, run_on_ray
from graphs.cluster.services import RayCache, RayLimiter, RemoteKeeper, RemoteLimiter
from graphs.runs.runner import RunConfig, start_run
from results.store import STORE_FILE, ResultsStore
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer


def calls_per_second(
    server: StandInServer, data: Path, workers: int, per_worker: int, problems: int
) -> float:
    """The run's rate at the server, its calls sampled (never cached) in a fresh workspace."""
    spec = f"openai-compatible:bench@{server.url}/v1"
    config = RunConfig(
        strategy="descriptive",
        dataset="bongard-classic",
        data_dir=str(data),
        dataset_options={"holdout_test": "true"},
        agents={"describer": spec, "reasoner": spec},
        agent_params={"temperature": 0.7},
        problems=[str(n) for n in range(1, problems + 1)],
        concurrency=workers * per_worker,
    )
    home = Path(tempfile.mkdtemp(prefix="bongard-ray-bench-"))
    before = len(list(server.model_requests()))
    run_id, runner = start_run(config, ResultsStore(home / STORE_FILE), home)
    run_on_ray(runner, run_id, ClusterOptions(workers=workers))
    times = sorted(request.at for request in list(server.model_requests())[before:])
    return (len(times) - 1) / (times[-1] - times[0])


ENDPOINT, LIMITS = Endpoint("bench", "http://127.0.0.1:1/v1"), RateLimits(concurrency=64)
Slot = Callable[[Endpoint, RateLimits], AbstractAsyncContextManager[None]]


async def per_call(step: Callable[[], Awaitable[None]], calls: int, at_once: int) -> float:
    """Seconds per call of `step`, `at_once` callers each making their share one after another."""

    async def caller() -> None:
        for _ in range(calls // at_once):
            await step()

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(at_once)))
    return (time.perf_counter() - started) / (calls // at_once * at_once)


async def overhead(calls: int) -> None:
    """The limiter and cache actors' cost per call, against the local limiter and cache file."""
    limiter: Any = RemoteLimiter.remote(LIMITS)
    await limiter.join.remote(0, "bench")
    slots: dict[str, Slot] = {
        "local gates": endpoint_slot,
        "limiter actor": RayLimiter({(ENDPOINT, LIMITS): limiter}, 0, "bench").slot,
    }
    path = Path(tempfile.mkdtemp(prefix="bongard-ray-bench-")) / "cache.sqlite"
    file = ResponseCache(path)
    file.put("key", "bench", {"text": "a reply of some length " * 20})
    caches: dict[str, ReplyCache] = {"file": file, "actor": RayCache(RemoteKeeper.remote(str(path)))}
    for at_once in (1, 32):
        figures = {}
        for name, slot in slots.items():

            async def take(slot: Slot = slot) -> None:
                async with slot(ENDPOINT, LIMITS):
                    pass

            figures[name] = await per_call(take, calls, at_once)
        local, actor = figures["local gates"], figures["limiter actor"]
        print(
            f"  a slot, {at_once:2d} at once: local gates {local * 1e6:7.1f} us/call, limiter actor "
            f"{actor * 1e6:7.1f} us/call ({1 / actor:,.0f} calls/s, {actor / local:,.0f}x the local)"
        )
    figures = {}
    for name, cache in caches.items():

        async def read(cache: ReplyCache = cache) -> None:
            assert await cache.aget("key") is not None

        figures[name] = await per_call(read, calls, 1)
    print(
        f"  a cached reply: from the file {figures['file'] * 1e6:7.1f} us/call, "
        f"through the cache actor {figures['actor'] * 1e6:7.1f} us/call"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency-ms", type=float, default=200.0, help="stand-in latency per call")
    parser.add_argument("--per-worker", type=int, default=2, help="calls in flight per worker")
    parser.add_argument("--problems", type=int, default=20, help="classic problems per run")
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"), help="the Bongard data")
    parser.add_argument("--calls", type=int, default=2000, help="calls per figure of the actors' overhead")
    args = parser.parse_args()
    ray.init(address="local", num_cpus=4, logging_level=logging.ERROR, log_to_driver=False)
    print("per call, what the shared actors add (this process as the worker):")
    asyncio.run(overhead(args.calls))
    with StandInServer(OpenAIChat()) as server:
        server.latency_s = args.latency_ms / 1000
        print(
            f"descriptive, {args.problems} classic problems, {args.latency_ms:.0f} ms per call, "
            f"{args.per_worker} calls in flight per worker:"
        )
        base = 0.0
        for workers in (1, 2, 4):
            rate = calls_per_second(server, args.data_dir, workers, args.per_worker, args.problems)
            base = base or rate
            ideal = workers * args.per_worker / server.latency_s
            print(
                f"  {workers} worker{'s' * (workers > 1)}: {rate:6.1f} calls/s, ideal {ideal:6.1f} "
                f"-> achieved/ideal {rate / ideal:.2f}, speed-up over 1 worker {rate / base:.2f}x"
            )
    ray.shutdown()


if __name__ == "__main__":
    main()
