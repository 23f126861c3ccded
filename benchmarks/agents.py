"""Agents layer: overhead per call against the raw SDK, and throughput under concurrency.

Run from the repository root: `python -m benchmarks.agents`. Both measurements
use a stand-in OpenAI-protocol server on 127.0.0.1, so they measure the
toolkit and the client stack, not a model. Figures are printed side by side in
one run; absolute times depend on the machine, ratios much less.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time

from langchain_core.messages import HumanMessage
from openai import AsyncOpenAI

from agents.registry import resolve_agent
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer


async def raw_sdk_calls(url: str, count: int) -> float:
    client = AsyncOpenAI(base_url=f"{url}/v1", api_key="not-needed", max_retries=0)
    started = time.perf_counter()
    for n in range(count):
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"q{n}"}])
    return (time.perf_counter() - started) / count


async def managed_calls(url: str, count: int) -> float:
    agent = resolve_agent(f"openai-compatible:m@{url}/v1", {"cache": False})
    started = time.perf_counter()
    for n in range(count):
        await agent.acall([HumanMessage(content=f"q{n}")])
    return (time.perf_counter() - started) / count


async def raw_throughput(url: str, concurrency: int, calls: int) -> float:
    client = AsyncOpenAI(base_url=f"{url}/v1", api_key="not-needed", max_retries=0)
    slots = asyncio.Semaphore(concurrency)

    async def one(n: int) -> None:
        async with slots:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"q{n}"}])

    started = time.perf_counter()
    await asyncio.gather(*(one(n) for n in range(calls)))
    return calls / (time.perf_counter() - started)


async def throughput(url: str, concurrency: int, calls: int) -> float:
    agent = resolve_agent(f"openai-compatible:m@{url}/v1", {"cache": False, "concurrency": concurrency})
    started = time.perf_counter()
    await asyncio.gather(*(agent.acall([HumanMessage(content=f"q{n}")]) for n in range(calls)))
    return calls / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300, help="sequential calls per overhead side")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="stand-in latency for throughput")
    args = parser.parse_args()
    os.environ.setdefault("BONGARD_HOME", tempfile.mkdtemp(prefix="bongard-bench-"))

    with StandInServer(OpenAIChat()) as server:
        asyncio.run(raw_sdk_calls(server.url, 20))  # warm both paths
        asyncio.run(managed_calls(server.url, 20))
        raw = asyncio.run(raw_sdk_calls(server.url, args.calls))
        managed = asyncio.run(managed_calls(server.url, args.calls))
        print(f"overhead, zero-latency server, {args.calls} sequential calls each:")
        print(f"  raw openai SDK      {raw * 1000:7.2f} ms/call")
        print(f"  managed agent       {managed * 1000:7.2f} ms/call")
        print(f"  ratio managed/raw   {managed / raw:7.2f}   (+{(managed - raw) * 1000:.2f} ms/call)")

        server.latency_s = args.latency_ms / 1000
        print(f"throughput, stand-in latency {args.latency_ms:.0f} ms:")
        for concurrency in (1, 8, 32):
            calls = max(20, 4 * concurrency)
            achieved = asyncio.run(throughput(server.url, concurrency, calls))
            raw_rate = asyncio.run(raw_throughput(server.url, concurrency, calls))
            ideal = concurrency / server.latency_s
            print(
                f"  concurrency {concurrency:3d}: managed {achieved:6.1f} calls/s, raw SDK {raw_rate:6.1f}, "
                f"ideal {ideal:6.1f}  -> achieved/ideal {achieved / ideal:.2f}, "
                f"managed/raw {achieved / raw_rate:.2f}"
            )


if __name__ == "__main__":
    main()
