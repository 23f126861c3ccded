"""A run of thousands of problems on a local multi-node Ray cluster: the figures a local run reports.

Run from the repository root: `python -m benchmarks.ray_scale [--problems N] [--nodes K]`. It writes
a Bongard-RWR+ dataset of N problems (as `benchmarks.reports`), starts a Ray cluster of K nodes on
this machine (the tests' `loopback_cluster`: a head and K - 1 more raylets on 127.0.0.1, one CPU
each, so each worker actor lands on a node of its own) and runs `image-to-side` (one call a problem)
against a stand-in OpenAI-protocol server with a fixed latency, `--per-worker` calls in flight per
worker. It prints what `benchmarks.runs` reports for a local run: the time from the run's start to
the server's first request, calls per second per worker against the ideal (calls in flight /
latency), and each worker actor process's peak resident memory (Linux's `VmHWM`). On a real
cluster the first call also waits for the nodes to fetch the toolkit's environment; calls per
second per worker hold while the model server keeps up.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.reports import DATASET, write_dataset
from results.store import STORE_FILE, ResultsStore
from tests.ray_clusters import LOOPBACK_ONLY, loopback_cluster
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer

SAMPLE_S = 0.5
WORKER_MARK = "ItemWorker"
"""What Ray puts in a worker actor's process title (`ray::ItemWorker...`)."""


def sampled_peaks(stop: threading.Event, peaks: dict[int, float]) -> None:
    """Each worker actor process's peak resident set (Linux's `VmHWM`), in MiB, read every
    `SAMPLE_S` until `stop` (the last reading before a worker exits is its peak)."""
    while not stop.wait(SAMPLE_S):
        for folder in Path("/proc").iterdir():
            try:
                if not folder.name.isdigit() or WORKER_MARK not in (folder / "cmdline").read_text():
                    continue
                status = (folder / "status").read_text().splitlines()
            except OSError:  # gone, or not ours to read
                continue
            for line in status:
                if line.startswith("VmHWM:"):
                    peaks[int(folder.name)] = int(line.split()[1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=5000)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--per-worker", type=int, default=16, help="calls in flight per worker")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bongard-ray-scale-") as work:
        root = Path(work)
        write_dataset(root / "data", options.problems)
        os.environ[LOOPBACK_ONLY] = "0"  # before Ray is imported: every address on 127.0.0.1
        from graphs.cluster.connect import ClusterOptions
        from graphs.cluster.executor import run_on_ray
        from graphs.runs.runner import RunConfig, start_run

        nodes = [{"num_cpus": 1}] * (options.nodes - 1)
        with loopback_cluster({"num_cpus": 1}, nodes), StandInServer(OpenAIChat()) as server:
            server.latency_s = options.latency_ms / 1000
            spec = f"openai-compatible:bench@{server.url}/v1"
            config = RunConfig(
                strategy="image-to-side",
                dataset=DATASET,
                data_dir=str(root / "data"),
                agents={"reasoner": spec},
                agent_params={"cache": False},
                concurrency=options.nodes * options.per_worker,
            )
            home = root / "home"
            started = time.time()
            run_id, runner = start_run(config, ResultsStore(home / STORE_FILE), home)
            peaks: dict[int, float] = {}
            stop = threading.Event()
            sampler = threading.Thread(target=sampled_peaks, args=(stop, peaks), daemon=True)
            sampler.start()
            run_on_ray(runner, run_id, ClusterOptions(workers=options.nodes))
            stop.set()
            sampler.join()
            times = sorted(request.at for request in server.model_requests())
    calls = len(times)
    rate = (calls - 1) / (times[-1] - times[0]) / options.nodes
    ideal = options.per_worker / (options.latency_ms / 1000)
    print(
        f"image-to-side, {options.problems} problems, {calls} calls, {options.nodes} nodes of 1 CPU, a "
        f"worker each, {options.per_worker} calls in flight per worker, {options.latency_ms:.0f} ms a call:"
    )
    print(f"  first call after the run's start (planning, the cluster's actors)  {times[0] - started:.2f} s")
    print(f"  calls per second per worker  {rate:.1f} (ideal {ideal:.0f}; ratio {rate / ideal:.2f})")
    shown = ", ".join(f"{peak:.0f}" for peak in sorted(peaks.values())) or "none seen"
    print(f"  peak RSS of each worker actor's process (MiB)  {shown}")


if __name__ == "__main__":
    main()
