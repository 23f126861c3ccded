"""`vllm-offline` on a Ray cluster: one engine per worker, on GPUs of the worker's own.

Ray's GPUs are logical, so a local cluster whose nodes declare GPUs stands for a GPU cluster: a
head with none and two worker nodes with 5 and 3 (an odd GPU left on each: an engine's GPUs are on
one node, so they hold 2 + 1 engines of 2 GPUs, not 8 / 2). A stand-in `vllm` package
(`tests/standins/vllm_package`), first on every process's path, records each engine a process
makes, the `CUDA_VISIBLE_DEVICES` Ray gave it, and each conversation it answered.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphs.runs.runner import ItemOutcome, RunConfig, start_run
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.ray_clusters import loopback_cluster
from tests.standins.vllm_package.vllm import RECORDS_ENV

STAND_IN = Path(__file__).parent / "standins" / "vllm_package"
SPEC = "vllm-offline:some/model"


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The records folder of a running cluster (head: 0 GPUs; nodes: 5 GPUs and 2 CPUs, 3 GPUs and
    1 CPU), this process connected to it as a driver, the stand-in on every process's path."""
    with pytest.MonkeyPatch.context() as patch:
        folder = tmp_path_factory.mktemp("engines")
        # The nodes' processes inherit this environment: their workers import the stand-in.
        patch.setenv(
            "PYTHONPATH", os.pathsep.join(filter(None, [str(STAND_IN), os.environ.get("PYTHONPATH")]))
        )
        patch.setenv(RECORDS_ENV, str(folder))
        patch.syspath_prepend(str(STAND_IN))  # the driver checks that vllm is installed
        nodes = [{"num_cpus": 2, "num_gpus": 5}, {"num_cpus": 1, "num_gpus": 3}]
        with loopback_cluster({"num_cpus": 1, "num_gpus": 0}, nodes):
            yield folder


@pytest.fixture
def engines(records: Path) -> Path:
    """The records folder, emptied of earlier tests' records."""
    for file in records.glob("*.jsonl"):
        file.unlink()
    return records


def run_args(shared_data: Path, home: Path, *extra: str) -> list[str]:
    return [
        "run", "--strategy", "descriptive", "--model", SPEC, "-M", "tensor_parallel_size=2",
        "--dataset", "bongard-classic", "-O", "holdout_test=true", "--data-dir", str(shared_data),
        "--problems", "1-4", "--home", str(home), "--executor", "ray", *extra,
    ]  # fmt: skip


def read_records(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for file in sorted(folder.glob("*.jsonl")) for line in file.read_text().splitlines()
    ]


def test_each_worker_makes_one_engine_on_gpus_of_its_own(
    engines: Path, shared_data: Path, tmp_path: Path
) -> None:
    result = run_bongard(*run_args(shared_data, tmp_path, "--concurrency", "6"), timeout=300)
    assert result.returncode == 0, result.stderr
    # As many workers as engines fit (2 on the 5-GPU node, 1 on the 3-GPU node), not one per CPU.
    assert "ray: 3 workers on 2 nodes" in result.stderr
    assert "4/4 items done, 0 failed" in result.stdout

    made = [record for record in read_records(engines) if "engine" in record]
    assert len(made) == 3 and len({record["pid"] for record in made}) == 3  # one engine per worker
    for record in made:  # tensor parallel over the worker's GPUs, in processes of its own
        assert record["engine"] == {
            "model": "some/model",
            "tensor_parallel_size": 2,
            "distributed_executor_backend": "mp",
        }
    assert sorted(Counter(record["node"] for record in made).values()) == [1, 2]
    gpus = [(record["node"], gpu) for record in made for gpu in record["cuda_visible_devices"].split(",")]
    assert len(gpus) == 6 == len(set(gpus))  # 2 each, none shared
    assert "vllm" not in sys.modules  # the driver made no engine

    store = ResultsStore(tmp_path / STORE_FILE)
    run = store.resolve_run("latest")
    answers = store.answer_records(run)
    stored = sorted((problem, attempt) for problem, attempt, _ in answers)
    assert stored == [(f"bongard-classic/{n}", 0) for n in range(1, 5)]  # every item, once
    replies = [reply for record in read_records(engines) for reply in record.get("replies", [])]
    assert len(replies) == store.summary(run).calls  # each call answered once, by an engine
    for _, _, answer in answers:
        assert {call.reply for call in answer.trace} <= set(replies)
        assert answer.text in replies and (answer.left_rule or "").startswith("shapes ")


def test_more_workers_than_the_gpus_hold_are_refused(
    engines: Path, shared_data: Path, tmp_path: Path
) -> None:
    refused = run_bongard(*run_args(shared_data, tmp_path, "--concurrency", "8", "--workers", "4"))
    said = " ".join(refused.stderr.replace("│", " ").split())
    assert refused.returncode == 2
    assert (
        "error: vllm-offline:some/model takes 2 GPUs of one node for each worker's engine: "
        "the cluster's 8 GPUs (5 + 3 + 0 on its 3 nodes) hold 3 such workers, not 4"
    ) in said
    assert not read_records(engines)  # no worker started


def test_an_engines_limits_are_its_own_and_the_runs_items_are_divided(
    engines: Path, shared_data: Path, tmp_path: Path
) -> None:
    import ray

    from graphs.cluster.executor import NAMESPACE, ClusterOptions, WorkerInfo, run_on_ray, worker_name

    config = RunConfig(
        strategy="descriptive",
        dataset="bongard-classic",
        data_dir=str(shared_data),
        dataset_options={"holdout_test": "true"},
        agents={"describer": SPEC, "reasoner": SPEC},
        agent_params={"tensor_parallel_size": 2, "concurrency": 3},
        problems=["1", "2"],
        concurrency=2,
    )
    store = ResultsStore(tmp_path / STORE_FILE)
    run_id, runner = start_run(config, store, tmp_path)
    seen: list[WorkerInfo] = []

    def on_item(outcome: ItemOutcome) -> None:
        if not seen:
            pool = [ray.get_actor(worker_name(run_id, index), namespace=NAMESPACE) for index in range(2)]
            seen.extend(ray.get([worker.about.remote() for worker in pool]))

    run_on_ray(runner, run_id, ClusterOptions(), on_item=on_item)
    assert store.summary(run_id).done == 2
    # 2 workers (room for 3, but at most --concurrency 2), each with its engine's own 3 calls in
    # flight (not 2 + 1 of one endpoint's 3) and its share of the run's 2 items at once.
    assert [(info.items, info.calls) for info in seen] == [(1, {SPEC: 3})] * 2
    assert len([record for record in read_records(engines) if "engine" in record]) == 2
