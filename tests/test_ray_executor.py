"""Runs on a real Ray cluster: a head and two worker nodes on 127.0.0.1, each its own raylet.

`descriptive` over 20 classic problems against a stand-in OpenAI-protocol server: the Ray run
stores every item once with the local run's answers and calls, keeps a provider limit across
the workers, and a rerun is served by the shared cache; a worker killed mid-run costs at most
the calls it had in flight. The cluster is started once for the module (about 15 s).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from datasets_io.store import STORE_FILE, ResultsStore
from graphs.runner import ItemOutcome, RunConfig, start_run
from tests.cli import run_bongard, run_bongard_process
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer

PROBLEMS = "1-20"
ASKED = ("role", "agent", "task", "conversation", "step", "images", "prompt", "reply")
"""What a stored call says was asked and answered (not when, nor how long it took)."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A head and two worker nodes, one CPU each; this process is connected as a driver."""
    with pytest.MonkeyPatch.context() as patch:
        # Ray's own switch to keep every address on the loopback: otherwise it rewrites 127.0.0.1
        # to the host's address, where a loopback-bound head does not answer.
        patch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        ray = pytest.importorskip("ray")
        from ray.cluster_utils import Cluster

        nodes = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False},
        )
        for _ in range(2):
            nodes.add_node(num_cpus=1, node_ip_address="127.0.0.1")
        nodes.wait_for_nodes()
        ray.init(address=nodes.address, logging_level=logging.ERROR, log_to_driver=False)
        try:
            yield nodes.address
        finally:
            ray.shutdown()
            nodes.shutdown()  # type: ignore[no-untyped-call]


def prompt_of(body: Any) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


def respond(body: Any) -> str:
    """A reply of the shape asked for, its words depending on the whole request (images included),
    so each item's answer is its own."""
    digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()[:8]
    if "How do the two sides differ" in prompt_of(body):
        return f"Left: shapes {digest}\nRight: lines {digest}"
    return f"a picture of {digest}"


@pytest.fixture
def server() -> Iterator[StandInServer]:
    with StandInServer(OpenAIChat(), responder=respond) as running:
        yield running


def run_args(server: StandInServer, shared_data: Path, home: Path, *extra: str) -> list[str]:
    return [
        "run", "--strategy", "descriptive", "--model", f"openai-compatible:solver@{server.url}/v1",
        "--dataset", "bongard-classic", "-O", "holdout_test=true", "--data-dir", str(shared_data),
        "--problems", PROBLEMS, "--seed", "3", "--home", str(home), *extra,
    ]  # fmt: skip


def items(home: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The latest run's answers by item, each call reduced to what the run asked and got."""
    store = ResultsStore(home / STORE_FILE)
    answers = store.answers(store.resolve_run("latest"))
    found = {(problem, attempt): answer for problem, attempt, answer in answers}
    assert len(found) == len(answers)  # no item twice
    for answer in found.values():
        answer["trace"] = [{k: call[k] for k in ASKED} for call in answer["trace"]]
    return found


def test_a_ray_run_matches_the_local_run_keeps_the_limit_and_is_cached_on_rerun(
    cluster: str, server: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    server.latency_s = 0.02
    limits = ("--concurrency", "8", "-M", "concurrency=4", "-M", "temperature=0")
    local = run_bongard(*run_args(server, shared_data, tmp_path / "local", *limits))
    assert local.returncode == 0, local.stderr
    sent_locally = len(list(server.model_requests()))
    server.max_in_flight = 0

    on_ray = [*run_args(server, shared_data, tmp_path / "ray", *limits), "--executor", "ray"]
    # A driver of its own joining the running cluster, as a user's shell runs it.
    joined = run_bongard_process(*on_ray, "--ray-address", cluster, "--workers", "3", timeout=600)
    assert joined.returncode == 0, joined.stderr
    assert "ray: 3 workers on 3 nodes" in joined.stderr
    assert "20/20 items done, 0 failed" in joined.stdout
    assert items(tmp_path / "ray") == items(tmp_path / "local")  # answers and calls, item for item
    store = ResultsStore(tmp_path / "ray" / STORE_FILE)
    summary = store.summary(store.resolve_run("latest"))
    sent_on_ray = len(list(server.model_requests())) - sent_locally
    assert sent_on_ray == summary.calls - summary.cached_calls  # no call made twice
    # 8 items at once over 3 workers (3 + 3 + 2), but the provider's 4 calls split 2 + 1 + 1.
    assert 2 <= server.max_in_flight <= 4

    # The workers share the workspace's cache: a new run of the same settings asks the model nothing.
    rerun = run_bongard(*on_ray)  # this process's connection to the cluster
    assert rerun.returncode == 0, rerun.stderr
    assert len(list(server.model_requests())) == sent_locally + sent_on_ray
    again = store.summary(store.resolve_run("latest"))
    assert (again.done, again.cached_calls) == (20, again.calls) and again.id != summary.id


class CountingStore(ResultsStore):
    """The results store, counting how often each item is written."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.saved: Counter[tuple[str, int]] = Counter()

    def save_item(self, run_id: str, problem: str, attempt: int, *rest: Any, **named: Any) -> None:
        super().save_item(run_id, problem, attempt, *rest, **named)
        self.saved[problem, attempt] += 1


def test_a_killed_worker_costs_at_most_its_calls_in_flight(
    cluster: str, server: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    """Sampled calls (temperature 0.7) are never cached: every call made again reaches the server."""
    import ray

    from graphs.ray_executor import NAMESPACE, ClusterOptions, WorkerInfo, run_on_ray, worker_name

    server.latency_s = 0.05
    spec = f"openai-compatible:solver@{server.url}/v1"
    config = RunConfig(
        strategy="descriptive",
        dataset="bongard-classic",
        data_dir=str(shared_data),
        dataset_options={"holdout_test": "true"},
        agents={"describer": spec, "reasoner": spec},
        agent_params={"temperature": 0.7},
        problems=[str(n) for n in range(1, 21)],
        concurrency=6,
    )
    store = CountingStore(tmp_path / STORE_FILE)
    run_id, runner = start_run(config, store, tmp_path)
    killed: dict[str, Any] = {}

    def on_item(outcome: ItemOutcome) -> None:
        if len(store.saved) == 4 and not killed:
            worker: Any = ray.get_actor(worker_name(run_id, 0), namespace=NAMESPACE)
            info: WorkerInfo = ray.get(worker.about.remote())
            os.kill(info.pid, signal.SIGKILL)
            killed.update(pid=info.pid, calls=info.calls[spec])

    run_on_ray(runner, run_id, ClusterOptions(workers=3), on_item=on_item)
    assert killed["calls"] == 2  # worker 0's share of the run's 6 calls in flight
    summary = store.summary(run_id)
    assert (summary.items, summary.done, summary.failed, summary.status) == (20, 20, 0, "complete")
    assert set(store.saved.values()) == {1} and len(store.saved) == 20  # each item stored once
    repeated = len(list(server.model_requests())) - summary.calls
    # The restarted worker continues its items from their checkpoints: only the calls in flight at
    # the kill are made again (and, as locally, one whose checkpoint write was still queued).
    assert 0 <= repeated <= 2 * killed["calls"]


def test_a_dead_endpoint_stops_a_ray_run_as_it_stops_a_local_one(
    cluster: str, shared_data: Path, tmp_path: Path
) -> None:
    """Run by a driver of its own with no address: a Ray instance of its own, beside the cluster."""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = f"openai-compatible:solver@http://127.0.0.1:{port}/v1"
    args = [
        "run", "--strategy", "descriptive", "--model", model, "--dataset", "bongard-classic",
        "-O", "holdout_test=true", "--data-dir", str(shared_data), "--problems", "1-2",
        "--home", str(tmp_path), "--executor", "ray", "--workers", "2",
    ]  # fmt: skip
    stopped = run_bongard_process(*args, timeout=300)
    assert "ray: 2 workers on 1 node" in stopped.stderr
    assert stopped.returncode == 4  # none done
    assert "stopped: the first 5 requests to openai-compatible" in stopped.stderr
    assert "resume with `bongard run --resume" in stopped.stdout


def test_a_local_run_never_loads_ray_and_ray_options_need_the_ray_executor(
    shared_data: Path, tmp_path: Path
) -> None:
    script = (
        "import json, sys\n"
        f"sys.argv = ['bongard', 'run', '--problems', '1', '--data-dir', {str(shared_data)!r}, "
        f"'--home', {str(tmp_path)!r}]\n"
        "from graphs.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps('ray' in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert "1/1 items done" in result.stdout and json.loads(result.stdout.splitlines()[-1]) is False
    refused = run_bongard("run", "--workers", "2", "--home", tmp_path)
    said = " ".join(refused.stderr.replace("│", " ").split())  # the message as one line, not boxed
    assert refused.returncode == 2 and "--ray-address and --workers go with --executor ray" in said
