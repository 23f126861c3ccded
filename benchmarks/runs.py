"""Runs at scale: scheduling, resume after SIGKILL, the response cache, memory as the dataset grows.

Run from the repository root: `python -m benchmarks.runs`. The model is a
stand-in OpenAI-protocol server with a fixed latency in its own process
(`benchmarks.latency_server`), so the figures measure the runner, the graphs
and the agents layer, not a model. The data are the real classic problems.
Figures are printed side by side in one run; none gates CI.

- scheduling: `descriptive` over N problems (13 calls each) at concurrency C;
  wall / ideal, ideal = calls x latency / C, bounded below by the per-problem
  critical path (2 calls: the descriptions in parallel, then the answer).
  Beside it, the same number of calls made with the raw `openai` SDK at the
  same concurrency: what the client stack alone costs on this machine.
- resume: a `bongard run` process SIGKILLed about half way, then resumed,
  with the response cache off, so only the item checkpoints can spare a
  finished call. The calls kept at the kill are those of the stored items plus
  those in the checkpoints of unfinished ones; after the resume the run needs
  exactly the rest. Prints the calls lost in flight (sent, not yet received:
  at most the concurrency), kept calls made again, and lost items.
- cache: an identical second run; model calls it made and the speed-up.
- memory: peak RSS of a `bongard run` process over 100 and over 1,000 problems
  (the classic problems repeated, cache off so every call is made).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from datasets_io.catalog import default_data_dir
from datasets_io.store import STORE_FILE, ResultsStore
from graphs.checkpoints import checkpointed_calls
from graphs.runner import RunConfig, start_run

BONGARD = Path(sys.executable).with_name("bongard")
CRITICAL_PATH_CALLS = 2
KILL_MARGIN_S = 0.05
"""A call answered this close to the kill may not have reached the killed process."""


class LatencyServer:
    def __init__(self, url: str, log: Path) -> None:
        self.url = url
        self.log = log

    def answered(self) -> list[tuple[str, float]]:
        lines = self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []
        return [(digest, float(at)) for digest, at in (line.split("\t") for line in lines)]


@contextmanager
def latency_server(latency_ms: float, folder: Path) -> Iterator[LatencyServer]:
    log = folder / "answered.tsv"
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.latency_server", "--latency-ms", f"{latency_ms}", "--log", log],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None and process.stdin is not None
    try:
        yield LatencyServer(process.stdout.readline().strip(), log)
    finally:
        process.stdin.close()
        process.wait(timeout=10)


def model_spec(server: LatencyServer) -> str:
    return f"openai-compatible:stand-in@{server.url}/v1"


def config(server: LatencyServer, problems: int, concurrency: int, **params: object) -> RunConfig:
    return RunConfig(
        strategy="descriptive",
        dataset="bongard-classic",
        agents={"describer": model_spec(server), "reasoner": model_spec(server)},
        agent_params={"concurrency": concurrency, **params},
        problems=[str(n) for n in range(1, problems + 1)],
        concurrency=concurrency,
    )


def timed_run(run_config: RunConfig, home: Path) -> tuple[ResultsStore, str, float]:
    """One run in this process; the time of the run itself, without imports and dataset scan."""
    store = ResultsStore(home / STORE_FILE)
    run_id, runner = start_run(run_config, store, home)
    started = time.perf_counter()
    asyncio.run(runner.run(run_id))
    return store, run_id, time.perf_counter() - started


async def raw_sdk_wall(server: LatencyServer, calls: int, concurrency: int) -> float:
    """`calls` requests with one real panel each, straight through the `openai` SDK."""
    from openai import AsyncOpenAI

    image = base64.b64encode((default_data_dir() / "bongard-classic/001/0.png").read_bytes()).decode()
    client = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="not-needed", max_retries=0)
    slots = asyncio.Semaphore(concurrency)

    async def one(number: int) -> None:
        content: Any = [
            {"type": "text", "text": f"describe panel {number}"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image}"}},
        ]
        async with slots:
            await client.chat.completions.create(model="raw", messages=[{"role": "user", "content": content}])

    started = time.perf_counter()
    await asyncio.gather(*(one(number) for number in range(calls)))
    await client.close()
    return time.perf_counter() - started


def scheduling(server: LatencyServer, problems: int, concurrency: int, latency_s: float, home: Path) -> None:
    before = len(server.answered())
    store, run_id, wall = timed_run(config(server, problems, concurrency, cache=False, temperature=0), home)
    calls = len(server.answered()) - before
    ideal = max(calls * latency_s / concurrency, CRITICAL_PATH_CALLS * latency_s)
    raw = asyncio.run(raw_sdk_wall(server, calls, concurrency))
    print(
        f"scheduling: {problems} problems x descriptive, concurrency {concurrency}, {latency_s * 1e3:.0f} ms"
    )
    print(
        f"  {store.summary(run_id).done} items done, {calls} calls in {wall:.2f} s; ideal {ideal:.2f} s "
        f"-> wall/ideal {wall / ideal:.2f} (target <= 1.25)"
    )
    print(f"  the raw openai SDK, same calls and concurrency: {raw:.2f} s -> raw/ideal {raw / ideal:.2f}")


def cli_run_args(server: LatencyServer, home: Path, dataset: str, problems: int, *params: str) -> list[str]:
    return [
        str(BONGARD), "run", "--strategy", "descriptive", "--model", model_spec(server), "--dataset", dataset,
        "--problems", f"1-{problems}", "--concurrency", "32", "-M", "concurrency=32", "--home", str(home),
        *(arg for param in params for arg in ("-M", param)),
    ]  # fmt: skip


def resume(server: LatencyServer, problems: int, home: Path) -> None:
    before = len(server.answered())
    args = cli_run_args(server, home, "bongard-classic", problems, "temperature=0", "cache=false")
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store_path = home / STORE_FILE
    done = 0
    while child.poll() is None and done < problems // 2:
        time.sleep(0.05)
        if store_path.exists() and (store := ResultsStore(store_path)).run_ids():
            done = store.summary(store.resolve_run("latest")).done
            store.close()
    child.send_signal(signal.SIGKILL)
    child.wait()
    time.sleep(1.0)  # let the server answer, to nobody, what was in flight
    store = ResultsStore(store_path)
    run_id = store.resolve_run("latest")
    stored = store.finished_items(run_id)
    kept = store.summary(run_id).calls + asyncio.run(checkpointed_calls(home, run_id, "descriptive", stored))
    sent_before = len(server.answered()) - before
    subprocess.run(
        [str(BONGARD), "run", "--resume", run_id, "--home", str(home)], check=True, capture_output=True
    )
    summary = store.summary(run_id)
    sent_after = len(server.answered()) - before - sent_before
    made_again = sent_after - (summary.calls - kept)
    print(f"resume: SIGKILL after {done}/{problems} items, then --resume (response cache off)")
    print(
        f"  calls kept at the kill {kept} (stored items + item checkpoints); calls lost in flight "
        f"{sent_before - kept}; kept calls made again {made_again} (target 0); "
        f"lost items {problems - summary.done} (target 0); items done {summary.done}/{summary.items}"
    )


def cache(server: LatencyServer, problems: int, home: Path) -> None:
    run_config = config(server, problems, 32, temperature=0)
    before = len(server.answered())
    _, _, first_wall = timed_run(run_config, home)
    first_calls = len(server.answered()) - before
    _, _, second_wall = timed_run(run_config, home)
    second_calls = len(server.answered()) - before - first_calls
    print(f"cache: {problems} problems x descriptive at temperature 0, then the identical run again")
    print(
        f"  first run {first_calls} model calls in {first_wall:.2f} s; second run {second_calls} model calls "
        f"(target 0) in {second_wall:.2f} s -> speed-up {first_wall / second_wall:.1f}x"
    )


def repeated_classic(count: int, folder: Path) -> Path:
    """`count` problems in the folder layout, cycling through the real classic panels (symlinks)."""
    classic = (default_data_dir() / "bongard-classic").resolve()
    for number in range(count):
        source = classic / f"{number % 100 + 1:03d}"
        for side, first in (("left", 0), ("right", 6)):
            (folder / f"p{number + 1:04d}" / side).mkdir(parents=True)
            for index in range(6):
                (folder / f"p{number + 1:04d}" / side / f"{index + 1}.png").symlink_to(
                    source / f"{first + index}.png"
                )
    return folder


def peak_rss_mb(args: list[str]) -> tuple[float, float]:
    """Peak resident memory of one process (MiB) and its wall time."""
    started = time.perf_counter()
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the run failed: {' '.join(args)}")
    return usage.ru_maxrss / 1024, time.perf_counter() - started


def memory(server: LatencyServer, sizes: list[int], work: Path) -> None:
    peaks = {}
    for size in sizes:
        data = repeated_classic(size, work / f"data-{size}")
        home = work / f"home-{size}"
        args = cli_run_args(server, home, f"folder:{data}", size, "cache=false")
        args[args.index("--problems") : args.index("--problems") + 2] = []
        peaks[size], wall = peak_rss_mb(args)
        summary = (store := ResultsStore(home / STORE_FILE)).summary(store.resolve_run("latest"))
        print(
            f"memory: {size} problems x descriptive: peak RSS {peaks[size]:.0f} MiB "
            f"({summary.done} items done, {summary.calls} calls, {wall:.0f} s)"
        )
    small, large = sizes[0], sizes[-1]
    growth = (peaks[large] - peaks[small]) / peaks[small] * 100
    print(f"  growth from {small} to {large} problems: {growth:+.1f} % (target < 20 %)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problems", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--memory-sizes", default="100,1000", help="problem counts for the memory figure")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bongard-bench-runs-"))
    try:
        with latency_server(args.latency_ms, work) as server:
            latency_s = args.latency_ms / 1000
            scheduling(server, args.problems, args.concurrency, latency_s, work / "scheduling")
            resume(server, args.problems, work / "resume")
            cache(server, args.problems, work / "cache")
            memory(server, [int(n) for n in args.memory_sizes.split(",")], work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
