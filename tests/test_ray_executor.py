"""Runs on a real Ray cluster: a head and two worker nodes on 127.0.0.1, each its own raylet.

`descriptive` over 20 classic problems against a stand-in OpenAI-protocol server: the Ray run
stores every item once with the local run's answers and calls, keeps a provider limit across
more workers than the limit through the endpoint's limiter actor, and a rerun is served by the
cache actor (the workers never open the cache file); a worker killed mid-run costs at most the
calls it had in flight and its slots come back. The cluster is started once for the module
(about 15 s).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agents.limits import RateLimits
from agents.registry import CACHE_FILE
from graphs.runs.runner import ItemOutcome, RunConfig, start_run
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard, run_bongard_process
from tests.killed_runs import kill, start, wait_for
from tests.ports import refused_port
from tests.standins.server import StandIn, StandInServer

PROBLEMS = "1-20"
ASKED = ("role", "agent", "task", "conversation", "step", "images", "prompt", "reply")
"""What a stored call says was asked and answered (not when, nor how long it took)."""


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
def server(standin: StandIn) -> StandInServer:
    return standin(responder=respond)


def run_args(server: StandInServer, shared_data: Path, home: Path, *extra: str) -> list[str]:
    return [
        "run", "--strategy", "descriptive", "--model", f"openai-compatible:solver@{server.url}/v1",
        "--dataset", "bongard-classic", "-O", "holdout_test=true", "--data-dir", str(shared_data),
        "--problems", PROBLEMS, "--seed", "3", "--home", str(home), *extra,
    ]  # fmt: skip


def items(home: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The latest run's answers by item, each call reduced to what the run asked and got."""
    store = ResultsStore(home / STORE_FILE)
    answers = [
        (p, a, answer.model_dump(mode="json"))
        for p, a, answer in store.answer_records(store.resolve_run("latest"))
    ]
    found = {(problem, attempt): answer for problem, attempt, answer in answers}
    assert len(found) == len(answers)  # no item twice
    for answer in found.values():
        answer["trace"] = [{k: call[k] for k in ASKED} for call in answer["trace"]]
    return found


def holders(path: Path) -> set[int]:
    """The processes that have the SQLite file `path` (or its WAL) open, by pid (Linux's /proc)."""
    names = {str(path.resolve()) + suffix for suffix in ("", "-wal", "-shm")}
    found: set[int] = set()
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if os.readlink(fd) in names:
                found.add(int(fd.parts[2]))
        except OSError:  # a process or descriptor gone meanwhile
            continue
    return found


def worker_pids(run_id: str, workers: int) -> set[int]:
    import ray

    from graphs.cluster.executor import NAMESPACE, WorkerInfo, worker_name

    pool = [ray.get_actor(worker_name(run_id, index), namespace=NAMESPACE) for index in range(workers)]
    infos: list[WorkerInfo] = ray.get([worker.about.remote() for worker in pool])
    return {info.pid for info in infos}


def test_a_ray_run_matches_the_local_run_keeps_the_limit_and_is_cached_on_rerun(
    cluster: str, server: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    server.latency_s = 0.02
    limits = ("--concurrency", "8", "-M", "concurrency=2", "-M", "temperature=0")
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
    assert " calls/s" in joined.stderr  # the progress line's rate, of the whole cluster
    assert "arguments in the object store" not in joined.stderr  # Ray could not restart the workers
    assert items(tmp_path / "ray") == items(tmp_path / "local")  # answers and calls, item for item
    store = ResultsStore(tmp_path / "ray" / STORE_FILE)
    summary = store.summary(store.resolve_run("latest"))
    sent_on_ray = len(list(server.model_requests())) - sent_locally
    assert sent_on_ray == summary.calls - summary.cached_calls  # no call made twice
    # 8 items at once over 3 workers (3 + 3 + 2), more workers than the provider's 2 calls in
    # flight: the limiter actor lends them to whichever worker asks, never more than 2 at once.
    assert server.max_in_flight == 2

    # A new run of the same settings (from this process's connection) asks the model nothing: the
    # cache actor answers, and no worker opens the cache file, as on a machine of its own.
    from graphs.cluster.executor import ClusterOptions, run_on_ray

    run_id, runner = start_run(
        RunConfig.model_validate(store.run_config(summary.id)), store, tmp_path / "ray"
    )
    seen: dict[str, set[int]] = {}

    def on_item(outcome: ItemOutcome) -> None:
        if not seen:
            seen.update(holders=holders(tmp_path / "ray" / CACHE_FILE), workers=worker_pids(run_id, 3))

    run_on_ray(runner, run_id, ClusterOptions(workers=3), on_item=on_item)
    assert len(list(server.model_requests())) == sent_locally + sent_on_ray
    again = store.summary(run_id)
    assert (again.done, again.cached_calls) == (20, again.calls) and again.id != summary.id
    assert seen["holders"].isdisjoint(seen["workers"])
    assert seen["holders"] - {os.getpid()}  # the cache actor's process holds it (the check sees files)


class CountingStore(ResultsStore):
    """The results store, counting how often each item is written."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.saved: Counter[tuple[str, int]] = Counter()

    def save_item(self, run_id: str, problem: str, attempt: int, *rest: Any, **named: Any) -> None:
        super().save_item(run_id, problem, attempt, *rest, **named)
        self.saved[problem, attempt] += 1


def test_a_killed_worker_costs_at_most_its_calls_in_flight_and_its_slots_come_back(
    cluster: str, server: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    """Sampled calls (temperature 0.7) are never cached: every call made again reaches the server.
    The worker is killed holding slots of the endpoint's 2: were they not given back, the run
    would wait for them for ever."""
    import ray

    from graphs.cluster.executor import NAMESPACE, ClusterOptions, WorkerInfo, run_on_ray, worker_name
    from graphs.cluster.services import limiter_name

    server.latency_s = 0.05
    spec = f"openai-compatible:solver@{server.url}/v1"
    config = RunConfig(
        strategy="descriptive",
        dataset="bongard-classic",
        data_dir=str(shared_data),
        dataset_options={"holdout_test": "true"},
        agents={"describer": spec, "reasoner": spec},
        agent_params={"temperature": 0.7, "concurrency": 2},
        problems=[str(n) for n in range(1, 21)],
        concurrency=6,
    )
    store = CountingStore(tmp_path / STORE_FILE)
    run_id, runner = start_run(config, store, tmp_path)
    killed: dict[str, Any] = {}

    def on_item(outcome: ItemOutcome) -> None:
        if killed and "restarted" not in killed:  # its new process: the one the slots went back to
            worker: Any = ray.get_actor(worker_name(run_id, killed["index"]), namespace=NAMESPACE)
            killed["restarted"] = ray.get(worker.about.remote()).pid
        if len(store.saved) >= 4 and not killed:
            # The worker killed is one holding slots at that moment (whichever: under load, any one
            # worker may wait its turn at the endpoint's 2 slots for a long while).
            limiter: Any = ray.get_actor(limiter_name(run_id, 0), namespace=NAMESPACE)
            deadline = time.monotonic() + 30
            while not (holding := ray.get(limiter.holding.remote())) and time.monotonic() < deadline:
                time.sleep(0.005)
            index, held = max(holding.items(), key=lambda pair: pair[1]) if holding else (0, 0)
            worker = ray.get_actor(worker_name(run_id, index), namespace=NAMESPACE)
            info: WorkerInfo = ray.get(worker.about.remote())
            os.kill(info.pid, signal.SIGKILL)
            killed.update(index=index, pid=info.pid, calls=info.calls[spec], held=held)

    run_on_ray(runner, run_id, ClusterOptions(workers=3), on_item=on_item)
    assert killed["calls"] == 2 and killed["held"]  # it may take all 2, and held some at the kill
    assert killed["restarted"] != killed["pid"]  # restarted by Ray, not lost (the driver frees those)
    assert server.max_in_flight == 2  # the endpoint's limit held through the kill and the restart
    summary = store.summary(run_id)
    assert (summary.items, summary.done, summary.failed, summary.status) == (20, 20, 0, "complete")
    assert set(store.saved.values()) == {1} and len(store.saved) == 20  # each item stored once
    repeated = len(list(server.model_requests())) - summary.calls
    # The restarted worker continues its items from their checkpoints: only the calls in flight at
    # the kill are made again (and, as locally, one whose checkpoint write was still queued).
    assert 0 <= repeated <= 2 * killed["calls"]


def test_a_killed_driver_is_resumed_locally_without_repaying_the_workers_finished_calls(
    cluster: str, server: StandInServer, shared_data: Path, tmp_path: Path
) -> None:
    """`bongard run --executor ray` SIGKILLed mid-run takes its workers with it; a local `--resume`
    finishes the run from the checkpoints the workers wrote in the workspace. Sampled calls: none
    is cached, so each call made again reaches the server."""
    import ray

    from graphs.cluster.executor import NAMESPACE, worker_name

    server.latency_s = 0.05
    args = run_args(server, shared_data, tmp_path, "-M", "temperature=0.7", "--concurrency", "4")
    driver = start(*args, "--executor", "ray", "--ray-address", cluster, "--workers", "2")
    wait_for(lambda: len(list(server.model_requests())) >= 80, "80 answered calls")
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id = store.resolve_run("latest")
    kill(driver)

    def workers_gone() -> bool:
        for index in range(2):
            try:
                ray.get_actor(worker_name(run_id, index), namespace=NAMESPACE)
            except ValueError:
                continue
            return False
        return True

    wait_for(workers_gone, "the workers to end with their driver", timeout_s=60)
    stored_at_kill = store.summary(run_id).done
    resumed = run_bongard("run", "--resume", run_id, "--home", tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    summary = store.summary(run_id)
    assert (summary.done, summary.status) == (20, "complete") and 0 < stored_at_kill < 20
    repeated = len(list(server.model_requests())) - summary.calls
    # At most the 4 calls in flight at the kill, and for each a finished call whose checkpoint
    # write was still queued (as locally). Read from per-worker folders, a local resume made the
    # unfinished items' every finished call again.
    assert 0 <= repeated <= 2 * 4, repeated


def test_a_dead_endpoint_stops_a_ray_run_as_it_stops_a_local_one(
    cluster: str, shared_data: Path, tmp_path: Path
) -> None:
    """Run by a driver of its own with no address: a Ray instance of its own, beside the cluster."""
    with refused_port() as port:
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


def test_a_limiter_gives_a_dead_workers_slots_back_and_none_to_its_old_process() -> None:
    """The limiter actor's bookkeeping, run as plain asyncio: a worker restarted (a new process
    joins) or lost for good (left) hands its slots to the others."""
    pytest.importorskip("ray")
    from graphs.cluster.services import EndpointLimiter

    async def scenario() -> None:
        limiter = EndpointLimiter(RateLimits(concurrency=2))
        await limiter.join(0, "first")
        await limiter.join(1, "only")
        assert [await limiter.acquire(0, "first", 0) for _ in range(2)] == [0, 1]
        waiting = asyncio.create_task(limiter.acquire(1, "only", 0))
        late = asyncio.create_task(limiter.acquire(0, "first", 0))  # asked before the kill
        await asyncio.sleep(0.01)
        assert not waiting.done() and await limiter.holding() == {0: 2}
        await limiter.join(0, "second")  # worker 0 restarted: its first process's 2 slots come back
        assert await waiting == 2 and await late is None  # none for a dead process
        assert await limiter.holding() == {1: 1}
        assert await limiter.acquire(0, "second", 0) == 3
        again = asyncio.create_task(limiter.acquire(1, "only", 0))
        await asyncio.sleep(0.01)
        assert not again.done()
        await limiter.leave(0)  # lost for good
        assert await again == 4 and await limiter.holding() == {1: 2}
        await limiter.release(2)
        await limiter.release(2)  # a lease given back twice frees one slot
        assert await limiter.holding() == {1: 1}
        assert await limiter.acquire(1, "only", 0) == 5 and limiter.gate.semaphore.locked()  # no third

    asyncio.run(scenario())
