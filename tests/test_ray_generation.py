"""`bongard generate --executor ray` on a real Ray cluster (`cluster` in tests/conftest.py: a head
and two worker nodes on 127.0.0.1, each its own raylet).

Three classic source problems; a stand-in OpenAI-protocol server is the describer and the
augmenter, its replies following from each request (the panel's pixels included), the
deterministic shapes generator renders and the classical embedder embeds. Stopped for the human
review (a worker killed on the way), decided and resumed, the Ray generation writes the same
dataset, byte for byte, as a local generation of the same seed, with each source asked about and
built once and only the killed worker's call in flight made again, and an endpoint's limit of one
call in flight held across both workers; a resume after completion sends nothing to the cluster.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from datasets_io.generation.generated import Decision
from graphs.generation.graph import GenerationState
from graphs.generation.run import Advanced, Generation, GenerationStatus
from results.reviews import GenerationRecords
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.server import StandIn, StandInServer

SOURCES = ("6", "31", "40")
COLOURS = ("red", "blue", "green", "black")
SHAPES = ("triangles", "squares", "circles", "stars")
OUTPUTS = ("dataset.json", "labels.csv", "pool.json")


def respond(body: Any) -> str:
    """The structured reply asked for (a prompt pair, or N prompts), its words from the request."""
    schema = body["response_format"]["json_schema"]["schema"]["properties"]
    digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).digest()
    colour, shape = COLOURS[digest[0] % 4], SHAPES[digest[1] % 4]
    if "prompts" in schema:
        count = schema["prompts"]["minItems"]
        return json.dumps({"prompts": [f"{n + digest[2] % 3} {colour} {shape}" for n in range(1, count + 1)]})
    return json.dumps({"positive": f"{digest[3] % 4 + 1} {colour} {shape}", "negative": "dotted lines"})


@pytest.fixture
def server(standin: StandIn) -> StandInServer:
    return standin(responder=respond)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, str]]:
    """How often the driver records each source as asked about (review) or built, across passes."""
    counts: Counter[tuple[str, str]] = Counter()
    record = Generation.record

    def counting(
        job: Generation,
        status: GenerationStatus,
        results: dict[str, GenerationState],
        source: str,
        advanced: Advanced,
    ) -> None:
        kind = "built" if advanced.values is not None else "asked" if advanced.asked else "waiting"
        counts[source, kind] += 1
        record(job, status, results, source, advanced)

    monkeypatch.setattr(Generation, "record", counting)
    return counts


def generate(server: StandInServer, shared_data: Path, home: Path, *extra: str) -> tuple[int, str, str]:
    url = f"{server.url}/v1"
    done = run_bongard(
        "generate",
        "--source",
        "bongard-classic",
        "-O",
        "holdout_test=true",
        "--problems",
        ",".join(SOURCES),
        "--out",
        home / "generated",
        "--describer",
        f"openai-compatible:describer@{url}",
        "--augmenter",
        f"openai-compatible:augmenter@{url}",
        "-M",
        "temperature=0",
        "--generator",
        "shapes",
        "--embedder",
        "classical",
        "--variations",
        "2",
        "--panels",
        "2",
        "--subsets",
        "2",
        "--size",
        "96",
        "--seed",
        "5",
        "--concurrency",
        "2",
        "--data-dir",
        shared_data,
        "--home",
        home,
        *extra,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


def resume(home: Path, shared_data: Path, *extra: str) -> tuple[int, str, str]:
    done = run_bongard("generate", "--resume", "latest", "--data-dir", shared_data, "--home", home, *extra)
    return done.returncode, done.stdout, done.stderr


def kill_worker(index: int) -> int:
    """SIGKILL the process of the running generation's worker `index`; its pid."""
    import ray

    from graphs.cluster.connect import NAMESPACE
    from graphs.cluster.generation import WorkerPlace

    [name] = [
        actor["name"]
        for actor in ray.util.list_named_actors(all_namespaces=True)
        if actor["namespace"] == NAMESPACE and actor["name"].endswith(f"/worker-{index}")
    ]
    worker: Any = ray.get_actor(name, namespace=NAMESPACE)
    place: WorkerPlace = ray.get(worker.about.remote())
    pid = place.pid
    os.kill(pid, signal.SIGKILL)
    return pid


def decide(home: Path) -> None:
    """Every image on its own side, but for the second variant of each side's first image."""
    records = GenerationRecords(ResultsStore(home / STORE_FILE))
    generation = records.resolve("latest")
    decisions: dict[int, Decision] = {
        r.image_id: "none" if r.image_id % 10000 == 2 else "left" if r.side == "left" else "right"
        for r in records.reviews(generation)
    }
    records.decide(generation, decisions, "human")


def written(home: Path) -> dict[str, bytes]:
    """The dataset folder's files (manifest, labels, pool, every image, the embeddings) by path."""
    folder = home / "generated"
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_a_ray_generation_writes_the_local_generation_and_resumes_to_nothing(
    cluster: str, server: StandInServer, shared_data: Path, tmp_path: Path, recorded: Counter[tuple[str, str]]
) -> None:
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    code, out, _ = generate(server, shared_data, local)
    assert code == 0 and "72 images of 3 sources await review" in out
    decide(local)
    code, out, err = resume(local, shared_data)
    assert code == 0 and f"wrote 12 problems to {local / 'generated'}" in out, err
    sent_locally = len(list(server.model_requests()))
    recorded.clear()

    killed: dict[str, int] = {}
    killing_once = threading.Lock()

    def killing(body: Any) -> str:
        """Ten calls into the Ray generation, its worker 0 killed (a call of its own in flight, as
        its one call slot is likely busy): Ray restarts it and sends it its sources again."""
        with killing_once:
            if len(server.requests) >= sent_locally + 10 and not killed:
                killed["pid"] = kill_worker(0)
        return respond(body)

    server.responder = killing
    server.latency_s, server.max_in_flight = 0.05, 0
    limited = ("-M", "concurrency=1")  # the endpoint's limit, held whole by its limiter actor
    code, out, err = generate(server, shared_data, on_ray, "--executor", "ray", "--workers", "2", *limited)
    assert code == 0 and "72 images of 3 sources await review" in out, err
    assert "ray: 2 workers on 2 nodes" in err and killed  # SPREAD over the cluster's nodes
    assert server.max_in_flight == 1  # two workers, each advancing a source, one call at a time
    decide(on_ray)
    code, out, err = resume(on_ray, shared_data, "--executor", "ray", "--workers", "2")
    assert code == 0 and f"wrote 12 problems to {on_ray / 'generated'}" in out, err

    assert written(on_ray) == written(local)  # every image, manifest, label and embedding, byte for byte
    # The restarted worker continued its sources from their checkpoints: only the call it had in
    # flight was made again (and, as in a killed local run, one whose checkpoint write was queued).
    sent_on_ray = len(list(server.model_requests())) - sent_locally
    assert sent_locally <= sent_on_ray <= sent_locally + 2
    for source in SOURCES:  # each source asked about once, then built once (the driver's records)
        assert recorded[source, "asked"] == 1 and recorded[source, "built"] == 1
    records = GenerationRecords(ResultsStore(on_ray / STORE_FILE))
    assert len(records.reviews(records.resolve("latest"))) == 72

    stamps = {path: path.stat().st_mtime_ns for path in (on_ray / "generated" / "pool").rglob("*.png")}
    code, out, err = resume(on_ray, shared_data, "--executor", "ray")
    assert code == 0 and "wrote 12 problems" in out, err
    assert "ray:" not in err  # every source built: no worker started
    assert len(list(server.model_requests())) == sent_locally + sent_on_ray
    assert {path: path.stat().st_mtime_ns for path in stamps} == stamps
    assert written(on_ray) == written(local)


def test_ray_options_need_the_ray_executor(tmp_path: Path) -> None:
    refused = run_bongard("generate", "--ray-address", "auto", "--home", tmp_path)
    said = " ".join(refused.stderr.replace("│", " ").split())  # the message as one line, not boxed
    assert refused.returncode == 2 and "--ray-address and --workers go with --executor ray" in said


def test_flux_takes_a_gpu_per_worker_and_a_pool_that_cannot_be_placed_is_refused() -> None:
    pytest.importorskip("ray")
    from graphs.cluster.generation import ClusterError, ClusterOptions, actor_resources, pool_size

    assert actor_resources("flux") == actor_resources("flux:black-forest-labs/FLUX.1-schnell")
    assert actor_resources("flux") == {"num_cpus": 1, "num_gpus": 1}
    assert actor_resources("shapes") == {"num_cpus": 1, "num_gpus": 0}
    gpus = {"CPU": 16.0, "GPU": 2.0}
    assert pool_size(ClusterOptions(), gpus, 1, 8) == 2  # one FLUX pipeline per GPU
    assert pool_size(ClusterOptions(), gpus, 0, 8) == 8  # a CPU generator: up to the concurrency
    with pytest.raises(ClusterError, match="the cluster has 2 GPUs"):
        pool_size(ClusterOptions(workers=3), gpus, 1, 8)
    with pytest.raises(ClusterError, match="the cluster has 0 GPUs"):
        pool_size(ClusterOptions(), {"CPU": 4.0}, 1, 8)
    with pytest.raises(ClusterError, match="more than --concurrency 2"):
        pool_size(ClusterOptions(workers=3), gpus, 0, 2)
