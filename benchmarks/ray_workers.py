"""Throughput of a run on Ray with 1, 2 and 4 workers, as ratios to the ideal.

Run from the repository root: `python -m benchmarks.ray_workers`. A Ray instance of this
process's own (one node, a CPU per worker asked for) runs `descriptive` over classic problems
against a stand-in OpenAI-protocol server with a fixed latency; each worker may have the same
number of calls in flight, so N workers should make N times the calls per second. The rate is
taken at the server, from its first request to its last (the workers' start-up left out); the
ideal is workers x calls in flight each / latency. Figures depend on the machine's cores.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path

import ray

from datasets_io.store import STORE_FILE, ResultsStore
from graphs.ray_executor import ClusterOptions, run_on_ray
from graphs.runner import RunConfig, start_run
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency-ms", type=float, default=200.0, help="stand-in latency per call")
    parser.add_argument("--per-worker", type=int, default=2, help="calls in flight per worker")
    parser.add_argument("--problems", type=int, default=20, help="classic problems per run")
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"), help="the Bongard data")
    args = parser.parse_args()
    ray.init(address="local", num_cpus=4, logging_level=logging.ERROR, log_to_driver=False)
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
