"""Runs at scale: the client's cost beside the floor, resume after SIGKILL, the cache, memory and scale.

Run from the repository root: `python -m benchmarks.runs`. The model is a
stand-in OpenAI-protocol server with a fixed latency in its own process
(`benchmarks.latency_server`), so the figures measure the runner, the graphs
and the agents layer, not a model; its own CPU is printed beside them, to show
it is not the bottleneck. The data are the real classic problems. Figures are
measured side by side in one run (the machine may be shared: compare the
ratios); none gates CI.

- speed: `bongard run --strategy descriptive --concurrency C` over N problems
  (13 calls each), its requests recorded by the server, then the same
  requests replayed by raw `httpx`, `httpx2` (the `openai` SDK's own HTTP
  library since openai 3): one `AsyncClient`, a pool of C, the floor; and
  aiohttp (what the toolkit's own client posts through): one session; and by
  the raw `openai` SDK, C in flight. For each: wall / ideal (ideal = calls x latency / C; wall from the
  server's first request received to its last reply) and client CPU per call
  (the process's CPU over that span / calls; for `bongard run`, its child
  process sampled, so start-up before the first request and the store and
  result table after the last reply are printed apart). Ratios are to the SDK.
  A second `bongard run` goes through `ChatOpenAI` and the SDK (the `openai`
  provider pointed at the stand-in), the path every call took before the
  toolkit's own OpenAI-protocol client (`agents.providers.openai_wire`).
- rounds: `--rounds` paired rounds, each `bongard run` (as in speed), then the raw `openai` SDK and
  the SDK script on the run's own requests, then an inspect_ai evaluation sending them
  (`benchmarks.inspect_replay`), and a run's import CPU (`benchmarks.startup`); each round's ratios
  and their medians (issue 53's acceptance figures).
- resume: a `bongard run` process SIGKILLed about half way, then resumed,
  with the response cache off, so only the item checkpoints can spare a
  finished call. The calls kept at the kill are those of the stored items plus
  those in the checkpoints of unfinished ones; after the resume the run needs
  exactly the rest. Prints the calls lost in flight (sent, not yet received:
  at most the concurrency), kept calls made again, and lost items.
- cache: an identical second run; model calls it made and the speed-up.
- memory and scale: `bongard run` over 100, 1,000 and 5,400 items (the size of
  Bongard-RWR+; the classic problems repeated, cache off so every call is
  made) against a second server with a short latency (5 ms: 70,200 calls at
  100 ms would take too long); peak RSS and CPU per call, neither of which
  should grow with the run.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx
from openai import AsyncOpenAI

from datasets_io.catalog import default_data_dir
from graphs.runs.checkpoints import checkpointed_calls
from graphs.runs.runner import RunConfig, start_run
from results.store import STORE_FILE, ResultsStore
from tests.repeated_classic import repeated_classic

BONGARD = Path(sys.executable).with_name("bongard")
CRITICAL_PATH_CALLS = 2
KILL_MARGIN_S = 0.05
"""A call answered this close to the kill may not have reached the killed process."""
SAMPLE_S = 0.005
"""How often a `bongard run` child's CPU time is sampled (the kernel counts it in 10 ms ticks)."""
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process, from Linux's /proc/PID/stat (fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


class LatencyServer:
    def __init__(self, url: str, log: Path, record: Path | None, pid: int, latency_s: float) -> None:
        self.url = url
        self.log = log
        self.record = record
        self.pid = pid
        self.latency_s = latency_s

    def answered(self) -> list[tuple[str, float]]:
        lines = self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []
        return [(digest, float(at)) for digest, at in (line.split("\t") for line in lines)]

    def cpu_s(self) -> float:
        return cpu_seconds(self.pid)

    def recorded(self) -> list[dict[str, Any]]:
        """The bodies of every request answered so far, in the order answered."""
        assert self.record is not None, "start the server with a record file"
        return [json.loads(line) for line in self.record.read_text(encoding="utf-8").splitlines()]


@contextmanager
def latency_server(latency_ms: float, folder: Path, record: bool = False) -> Iterator[LatencyServer]:
    folder.mkdir(parents=True, exist_ok=True)
    log, bodies = folder / f"answered-{latency_ms:g}ms.tsv", folder / f"requests-{latency_ms:g}ms.jsonl"
    recording = ["--record", str(bodies)] if record else []
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.latency_server",
            "--latency-ms",
            f"{latency_ms}",
            "--log",
            log,
            *recording,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdin is not None
    try:
        url = process.stdout.readline().strip()
        yield LatencyServer(url, log, bodies if record else None, process.pid, latency_ms / 1000)
    finally:
        process.stdin.close()
        process.wait(timeout=10)


def model_spec(server: LatencyServer) -> str:
    return f"openai-compatible:stand-in@{server.url}/v1"


def model_args(server: LatencyServer, client: str = "lean") -> list[str]:
    """`--model` for the stand-in through the toolkit's own OpenAI-protocol client (`lean`,
    `openai-compatible`) or through `ChatOpenAI` and the `openai` SDK (`sdk`, the `openai` provider
    pointed at it: the path every call took before)."""
    if client == "sdk":
        return ["--model", "openai:stand-in", "-M", f"base_url={server.url}/v1"]
    return ["--model", model_spec(server)]


SDK_ENV = {**os.environ, "OPENAI_API_KEY": "stand-in-key"}
"""The `openai` provider wants a key: the stand-in's own, never a real one a user has set."""


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


@dataclass
class Figures:
    """One client's calls as the server saw them, and the CPU they cost the client and the server."""

    client: str
    calls: int
    wall_s: float
    """From the server's first request received (answer time less the fixed latency) to its last reply."""
    cpu_s: float
    server_cpu_s: float
    max_in_flight: int
    startup_cpu_s: float | None = None
    after_cpu_s: float | None = None
    peak_rss_mib: float | None = None
    launch_to_exit_s: float | None = None
    """For a child process: from its launch to its exit, start-up and tail included."""

    @property
    def cpu_per_call_ms(self) -> float:
        return self.cpu_s / self.calls * 1e3


def served(server: LatencyServer, before: int) -> tuple[int, float, float, int]:
    """Calls answered since the log held `before`: count, first received, last answered, most in flight."""
    times = sorted(at for _, at in server.answered()[before:])
    if not times:
        raise RuntimeError("the server answered no call")
    in_flight = max(
        bisect.bisect_left(times, at + server.latency_s) - index for index, at in enumerate(times)
    )
    return len(times), times[0] - server.latency_s, times[-1], in_flight


def cpu_at(samples: Sequence[tuple[float, float]], moment: float) -> float:
    """A sampled process's CPU time at `moment`: the first sample taken then or later."""
    index = bisect.bisect_left([at for at, _ in samples], moment)
    return samples[min(index, len(samples) - 1)][1]


def measured_child(
    label: str, args: list[str], server: LatencyServer, profile: Path | None = None
) -> Figures:
    """A `bongard run` process, its CPU sampled so that start-up, the calls and the tail are apart;
    peak RSS and the total CPU from the kernel's account of the reaped child. With `profile`, py-spy
    attaches to it and writes its raw samples there (`benchmarks.profile`)."""
    before, server_before = len(server.answered()), server.cpu_s()
    samples: list[tuple[float, float]] = []
    finished = threading.Event()
    launched = time.perf_counter()
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=SDK_ENV)
    spy = (
        None
        if profile is None
        else subprocess.Popen(
            [
                str(BONGARD.with_name("py-spy")),
                "record",
                "--pid",
                str(child.pid),
                "--format",
                "raw",
                "--rate",
                "250",
                "--full-filenames",
                "--output",
                str(profile),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )

    def sample() -> None:
        while not finished.wait(SAMPLE_S):
            try:
                samples.append((time.time(), cpu_seconds(child.pid)))
            except (OSError, IndexError):  # exited: reaped, or a zombie's emptied stat
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(child.pid, 0)
    exited = time.perf_counter()
    finished.set()
    sampler.join()
    if spy is not None:
        spy.wait(timeout=60)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"the run failed: {' '.join(args)}")
    calls, first, last, in_flight = served(server, before)
    total = usage.ru_utime + usage.ru_stime
    startup, at_last = cpu_at(samples, first), cpu_at(samples, last)
    return Figures(
        label,
        calls,
        last - first,
        at_last - startup,
        server.cpu_s() - server_before,
        in_flight,
        startup_cpu_s=startup,
        after_cpu_s=total - at_last,
        peak_rss_mib=usage.ru_maxrss / 1024,
        launch_to_exit_s=exited - launched,
    )


def replayed(label: str, server: LatencyServer, replay: Any) -> Figures:
    """A replay in this process: its CPU from `time.process_time`, its calls from the server's log."""
    before, server_before = len(server.answered()), server.cpu_s()
    started = time.process_time()
    asyncio.run(replay)
    cpu = time.process_time() - started
    calls, first, last, in_flight = served(server, before)
    return Figures(label, calls, last - first, cpu, server.cpu_s() - server_before, in_flight)


def http_libraries() -> dict[str, Any]:
    """httpx, and httpx2 where installed: the `openai` SDK's own HTTP library from openai 3."""
    try:
        import httpx2
    except ImportError:
        return {"httpx": httpx}
    return {"httpx": httpx, "httpx2": httpx2}


async def replay_http(
    library: Any, server: LatencyServer, bodies: list[dict[str, Any]], concurrency: int
) -> None:
    """The floor: the recorded requests posted by one `AsyncClient` of `library` (httpx or httpx2)
    keeping `concurrency` connections alive, `concurrency` in flight."""
    limits = library.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    slots = asyncio.Semaphore(concurrency)
    async with library.AsyncClient(base_url=f"{server.url}/v1", limits=limits, timeout=60) as client:

        async def one(body: dict[str, Any]) -> None:
            async with slots:
                response = await client.post("/chat/completions", json=body)
                response.raise_for_status()
                response.json()

        await asyncio.gather(*(one(body) for body in bodies))


async def replay_aiohttp(server: LatencyServer, bodies: list[dict[str, Any]], concurrency: int) -> None:
    """The recorded requests posted by one aiohttp session, `concurrency` in flight."""
    slots = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession() as session:

        async def one(body: dict[str, Any]) -> None:
            async with slots, session.post(f"{server.url}/v1/chat/completions", json=body) as response:
                response.raise_for_status()
                await response.json()

        await asyncio.gather(*(one(body) for body in bodies))


async def replay_sdk(server: LatencyServer, bodies: list[dict[str, Any]], concurrency: int) -> None:
    """The recorded requests through the raw `openai` SDK as a user calls it, `concurrency` in flight."""
    slots = asyncio.Semaphore(concurrency)
    async with AsyncOpenAI(base_url=f"{server.url}/v1", api_key="not-needed", max_retries=0) as client:

        async def one(body: dict[str, Any]) -> None:
            async with slots:
                await client.chat.completions.create(**body)

        await asyncio.gather(*(one(body) for body in bodies))


SDK_SCRIPT = """
import asyncio, json, sys
from openai import AsyncOpenAI

async def main(url, bodies, concurrency):
    slots = asyncio.Semaphore(concurrency)
    async with AsyncOpenAI(base_url=url, api_key="not-needed", max_retries=0) as client:
        async def one(body):
            async with slots:
                await client.chat.completions.create(**body)
        await asyncio.gather(*(one(body) for body in bodies))

bodies = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8")]
asyncio.run(main(sys.argv[1], bodies, int(sys.argv[3])))
"""
"""What a researcher writes without the toolkit: the same requests through the `openai` SDK, from a
fresh interpreter to its exit."""


@contextmanager
def bodies_file(bodies: list[dict[str, Any]]) -> Iterator[Path]:
    """The recorded requests in a JSON-lines file, for a client in another process."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", encoding="utf-8", delete=False) as handle:
        handle.write("".join(json.dumps(body) + "\n" for body in bodies))
    try:
        yield Path(handle.name)
    finally:
        Path(handle.name).unlink()


def sdk_script_launch_to_exit(server: LatencyServer, bodies: list[dict[str, Any]], concurrency: int) -> float:
    """Seconds from launching `SDK_SCRIPT` on the recorded requests to its exit."""
    with bodies_file(bodies) as path:
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", SDK_SCRIPT, f"{server.url}/v1", str(path), str(concurrency)], check=True
        )
        return time.perf_counter() - started


def through_inspect(server: LatencyServer, bodies: list[dict[str, Any]], concurrency: int) -> Figures:
    """The recorded requests sent by an inspect_ai evaluation in its own process
    (`benchmarks.inspect_replay`), measured as a `bongard run` child is."""
    with bodies_file(bodies) as path:
        command = [
            sys.executable,
            "-m",
            "benchmarks.inspect_replay",
            f"{server.url}/v1",
            str(path),
            str(concurrency),
        ]
        return measured_child("inspect_ai eval, requests replayed", command, server)


def speed_args(server: LatencyServer, problems: int, concurrency: int, home: Path, client: str) -> list[str]:
    """`bongard run` of the descriptive strategy over the first `problems` classic problems."""
    return [
        str(BONGARD), "run", "--strategy", "descriptive", *model_args(server, client), "--dataset",
        "bongard-classic", "--problems", f"1-{problems}", "--concurrency", str(concurrency),
        "-M", "temperature=0", "-M", "cache=false", "--home", str(home / client),
    ]  # fmt: skip


def speed(server: LatencyServer, problems: int, concurrency: int, home: Path) -> None:
    def args(client: str) -> list[str]:
        return speed_args(server, problems, concurrency, home, client)

    run = measured_child(f"`bongard run --concurrency {concurrency}`", args("lean"), server)
    bodies = server.recorded()
    through_sdk = measured_child("the same through ChatOpenAI and the SDK (`openai`)", args("sdk"), server)
    floors = [
        replayed(f"raw {name}, requests replayed", server, replay_http(library, server, bodies, concurrency))
        for name, library in http_libraries().items()
    ]
    aiohttp_floor = replay_aiohttp(server, bodies, concurrency)
    floors.append(replayed("raw aiohttp, requests replayed", server, aiohttp_floor))
    sdk = replayed("raw openai SDK, requests replayed", server, replay_sdk(server, bodies, concurrency))
    ideal = max(len(bodies) * server.latency_s / concurrency, CRITICAL_PATH_CALLS * server.latency_s)
    print(
        f"speed: {problems} problems x descriptive, {len(bodies)} calls, stand-in latency "
        f"{server.latency_s * 1e3:.0f} ms, {concurrency} in flight; ideal {ideal:.2f} s; "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} before"
    )
    columns = ("client", "calls", "most in flight", "wall / ideal", "client CPU per call",
               "vs the SDK: wall, CPU", "server CPU per call (share of a core)")  # fmt: skip
    print("| " + " | ".join(columns) + " |\n" + "| --- " * len(columns) + "|")
    for figures in (*floors, sdk, run, through_sdk):
        wall, server_ms = figures.wall_s / ideal, figures.server_cpu_s / figures.calls * 1e3
        cells = (
            figures.client,
            figures.calls,
            figures.max_in_flight,
            f"{wall:.2f}",
            f"{figures.cpu_per_call_ms:.1f} ms",
            f"{figures.wall_s / sdk.wall_s:.2f}x, {figures.cpu_per_call_ms / sdk.cpu_per_call_ms:.2f}x",
            f"{server_ms:.2f} ms ({figures.server_cpu_s / figures.wall_s:.0%})",
        )
        print("| " + " | ".join(map(str, cells)) + " |")
    for label, figures in (("`bongard run`", run), ("through the SDK", through_sdk)):
        print(
            f"  {label}: {figures.startup_cpu_s:.2f} s of CPU before its first request, "
            f"{figures.after_cpu_s:.2f} s after its last reply (the store, the result table)"
        )
    script = sdk_script_launch_to_exit(server, bodies, concurrency)
    assert run.launch_to_exit_s is not None
    print(
        f"  launch to exit / ideal: `bongard run` {run.launch_to_exit_s:.2f} s, "
        f"{run.launch_to_exit_s / ideal:.2f}x; a raw openai SDK script on the same requests {script:.2f} s, "
        f"{script / ideal:.2f}x (target for `bongard run`: 1.3x)"
    )


def paired_rounds(server: LatencyServer, problems: int, concurrency: int, home: Path, rounds: int) -> None:
    """Rounds of `bongard run` beside the raw SDK, the SDK script and an inspect_ai evaluation on the
    run's own requests, one after another in each round, so each ratio pairs figures measured under
    the same load; the medians of the rounds' ratios are issue 53's acceptance figures, with the
    import CPU of a run's start-up (`benchmarks.startup`) measured in each round too."""
    from benchmarks.startup import RUN_IMPORTS, child_cpu_seconds

    columns = ("round", "`bongard run` CPU per call", "raw SDK", "inspect_ai", "run / SDK",
               "run / inspect_ai", "launch to exit: run, SDK script", "run / script",
               "a run's imports (CPU)")  # fmt: skip
    print(f"paired rounds: {problems} problems x descriptive, {concurrency} in flight")
    print("| " + " | ".join(columns) + " |\n" + "| --- " * len(columns) + "|")
    ratios: dict[str, list[float]] = {"sdk": [], "inspect": [], "script": [], "imports": []}
    for number in range(1, rounds + 1):
        before = len(server.recorded())
        run = measured_child(
            "`bongard run`", speed_args(server, problems, concurrency, home / str(number), "lean"), server
        )
        bodies = server.recorded()[before:]
        sdk = replayed("raw openai SDK", server, replay_sdk(server, bodies, concurrency))
        script = sdk_script_launch_to_exit(server, bodies, concurrency)
        inspect = through_inspect(server, bodies, concurrency)
        imports = child_cpu_seconds([sys.executable, "-c", RUN_IMPORTS])
        assert run.launch_to_exit_s is not None
        ratios["sdk"].append(run.cpu_per_call_ms / sdk.cpu_per_call_ms)
        ratios["inspect"].append(run.cpu_per_call_ms / inspect.cpu_per_call_ms)
        ratios["script"].append(run.launch_to_exit_s / script)
        ratios["imports"].append(imports)
        cells = (
            number, f"{run.cpu_per_call_ms:.2f} ms", f"{sdk.cpu_per_call_ms:.2f} ms",
            f"{inspect.cpu_per_call_ms:.2f} ms", f"{ratios['sdk'][-1]:.2f}x", f"{ratios['inspect'][-1]:.2f}x",
            f"{run.launch_to_exit_s:.2f} s, {script:.2f} s", f"{ratios['script'][-1]:.2f}x",
            f"{imports:.2f} s",
        )  # fmt: skip
        print("| " + " | ".join(map(str, cells)) + " |", flush=True)
    median = {name: statistics.median(values) for name, values in ratios.items()}
    print(
        f"  medians of {rounds} rounds (load average {os.getloadavg()[0]:.1f} at the end): CPU per call "
        f"{median['sdk']:.2f}x the raw SDK's (target at most 0.9x), {median['inspect']:.2f}x inspect_ai's "
        f"(target under 0.3x); launch to exit {median['script']:.2f}x the SDK script's (target within 1.1x); "
        f"a run's imports {median['imports']:.2f} s of CPU (target at most 0.65 s)"
    )


def cli_run_args(server: LatencyServer, home: Path, dataset: str, problems: int, *params: str) -> list[str]:
    return [
        str(BONGARD), "run", "--strategy", "descriptive", "--model", model_spec(server), "--dataset", dataset,
        "--problems", f"1-{problems}", "--concurrency", "32", "--home", str(home),
        *(arg for param in params for arg in ("-M", param)),
    ]  # fmt: skip


def resume(server: LatencyServer, problems: int, home: Path) -> None:
    before = len(server.answered())
    args = cli_run_args(server, home, "bongard-classic", problems, "temperature=0", "cache=false")
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=SDK_ENV)
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


def memory_and_scale(server: LatencyServer, sizes: list[int], work: Path) -> None:
    print(
        f"memory and scale: `bongard run --concurrency 32` x descriptive over the classic problems "
        f"repeated, cache off, stand-in latency {server.latency_s * 1e3:.0f} ms"
    )
    columns = ("items", "calls", "wall", "start-up CPU", "CPU per call", "peak RSS")
    print("| " + " | ".join(columns) + " |\n" + "| --- " * len(columns) + "|")
    runs: list[Figures] = []
    for size in sizes:
        data = repeated_classic(
            (default_data_dir() / "bongard-classic").resolve(), size, work / f"data-{size}"
        )
        args = cli_run_args(server, work / f"home-{size}", f"folder:{data}", size, "cache=false")
        args[args.index("--problems") : args.index("--problems") + 2] = []
        runs.append(figures := measured_child(f"{size} items", args, server))
        cells = (
            size,
            figures.calls,
            f"{figures.wall_s:.0f} s",
            f"{figures.startup_cpu_s:.2f} s",
            f"{figures.cpu_per_call_ms:.1f} ms",
            f"{figures.peak_rss_mib:.0f} MiB",
        )
        print("| " + " | ".join(map(str, cells)) + " |", flush=True)
    small, large = runs[0], runs[-1]
    assert small.peak_rss_mib is not None and large.peak_rss_mib is not None
    print(
        f"  from {sizes[0]} to {sizes[-1]} items: "
        f"peak RSS {large.peak_rss_mib / small.peak_rss_mib - 1:+.1%}, "
        f"CPU per call {large.cpu_per_call_ms / small.cpu_per_call_ms - 1:+.1%} (target: neither grows)"
    )


SECTIONS = ("speed", "rounds", "resume", "cache", "scale")


def run_parser(description: str | None) -> argparse.ArgumentParser:
    """The options of a benchmark of `bongard run` against the stand-in: problems, concurrency, latency."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problems", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    return parser


def main() -> None:
    parser = run_parser(__doc__)
    parser.add_argument("--scale-sizes", default="100,1000,5400", help="item counts for memory and scale")
    parser.add_argument("--scale-latency-ms", type=float, default=5.0)
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"any of {', '.join(SECTIONS)}")
    parser.add_argument("--rounds", type=int, default=5, help="paired rounds (medians shown)")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    work = Path(tempfile.mkdtemp(prefix="bongard-bench-runs-"))
    try:
        if "speed" in sections:
            with latency_server(args.latency_ms, work / "speed", record=True) as server:
                speed(server, args.problems, args.concurrency, work / "speed" / "home")
        if "rounds" in sections:
            with latency_server(args.latency_ms, work / "rounds", record=True) as server:
                paired_rounds(server, args.problems, args.concurrency, work / "rounds" / "home", args.rounds)
        with latency_server(args.latency_ms, work) as server:
            if "resume" in sections:
                resume(server, args.problems, work / "resume")
            if "cache" in sections:
                cache(server, args.problems, work / "cache")
        if "scale" in sections:
            with latency_server(args.scale_latency_ms, work / "scale") as server:
                memory_and_scale(server, [int(n) for n in args.scale_sizes.split(",")], work / "scale")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
