"""`--concurrency N` means N calls in flight, and a run keeps its connections alive.

A `bongard run` of `descriptive` over real classic problems against a stand-in
OpenAI-protocol server with a fixed latency: the server records the most requests
it had in flight at once and the TCP connections it accepted.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from agents.limits import Endpoint, RateLimits, in_flight
from datasets_io.catalog import open_dataset
from graphs.generation.graph import GenerationSettings
from graphs.generation.run import GenerationConfig, start_generation
from graphs.registry import get_strategy
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.data_paths import shared_data_dir
from tests.standins.server import StandIn, StandInServer

DESCRIPTIVE_CALLS = (
    get_strategy("descriptive").calls_for(open_dataset("bongard-classic", shared_data_dir()).problem("1"))
    or 0
)
"""Calls per classic problem, as the strategy states them (12 panel descriptions and 1 answer)."""


@pytest.fixture
def server(standin: StandIn) -> StandInServer:
    return standin(responder=lambda body: "Left: one line\nRight: two lines")


def run(
    server: StandInServer, home: Path, data: Path, problems: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    result = run_bongard(
        "run",
        "--strategy",
        "descriptive",
        "--model",
        f"openai-compatible:m@{server.url}/v1",
        "--dataset",
        "bongard-classic",
        "--data-dir",
        data,
        "--home",
        home,
        "--problems",
        problems,
        "-M",
        "cache=false",
        *extra,
    )
    assert result.returncode == 0, result.stderr
    return result


def test_concurrency_32_has_32_calls_in_flight_on_kept_alive_connections_and_says_so(
    server: StandInServer, tmp_path: Path, shared_data: Path
) -> None:
    server.latency_s = 1.5  # longer than the client takes to send 32 requests, on a busy machine too
    out = run(server, tmp_path, shared_data, "1-8", "--concurrency", "32").stdout
    assert len(list(server.model_requests())) == 8 * DESCRIPTIVE_CALLS
    assert server.max_in_flight == 32  # not the provider's default of 8
    assert server.connections == 32  # each kept alive and reused (httpx keeps 20 by default)
    assert "calls in flight: up to 32 (--concurrency)" in out


@pytest.mark.parametrize(
    "limit", [["-M", "concurrency=4"], ["--agent-config", "agents.toml"]], ids=["-M", "agent config"]
)
def test_a_lower_limit_the_user_set_binds_and_is_named(
    server: StandInServer, tmp_path: Path, shared_data: Path, limit: list[str]
) -> None:
    (tmp_path / "agents.toml").write_text('["*"]\nconcurrency = 4\n', encoding="utf-8")
    limit = [str(tmp_path / arg) if arg.endswith(".toml") else arg for arg in limit]
    server.latency_s = 0.3
    out = run(server, tmp_path, shared_data, "1-2", "--concurrency", "32", *limit).stdout
    assert server.max_in_flight == 4
    assert "calls in flight: up to 4 (openai-compatible limit concurrency=4)" in out


def test_the_bound_is_the_sum_of_the_gates_the_agents_draw_from() -> None:
    first, second = Endpoint("openai-compatible", "http://a/v1"), Endpoint("ollama", "http://b")
    gates = [(first, RateLimits(concurrency=4)), (second, RateLimits(concurrency=6)), (first, RateLimits(4))]
    assert str(in_flight(32, gates)) == (
        "calls in flight: up to 10 (openai-compatible limit concurrency=4 + ollama limit concurrency=6)"
    )
    assert str(in_flight(8, gates)) == "calls in flight: up to 8 (--concurrency)"


def test_the_progress_line_gives_the_passes_rate_not_a_burst(
    server: StandInServer, tmp_path: Path, shared_data: Path
) -> None:
    """An item's 13 calls are counted when it finishes: a rate over the last few items read thousands
    of calls a second where 2 calls of 50 ms in flight allow at most 40."""
    server.latency_s = 0.05
    progress = run(server, tmp_path, shared_data, "1-4", "--concurrency", "2").stderr
    rates = [float(rate) for rate in re.findall(r"([0-9.]+) calls/s", progress)]
    assert rates and all(0 < rate <= 2 / server.latency_s for rate in rates), rates


@pytest.mark.parametrize(
    ("params", "bound"),
    [
        ({}, "up to 16 (--concurrency)"),
        ({"concurrency": 3}, "up to 3 (openai-compatible limit concurrency=3)"),
    ],
    ids=["follows --concurrency", "a limit the user set"],
)
def test_a_generation_has_its_concurrency_in_flight_unless_the_user_set_less(
    tmp_path: Path, shared_data: Path, params: dict[str, int], bound: str
) -> None:
    """As a run: its agents' own limits were their provider's defaults (8), capping --concurrency 16."""
    spec = "openai-compatible:m@http://127.0.0.1:9/v1"
    config = GenerationConfig(
        source="bongard-classic",
        data_dir=str(shared_data),
        problems=["6"],
        agents={"describer": spec, "augmenter": spec},
        agent_params=params,
        generator="shapes",
        embedder="classical",
        settings=GenerationSettings(folder=str(tmp_path / "out")),
        concurrency=16,
    )
    job = start_generation(config, ResultsStore(tmp_path / STORE_FILE), tmp_path)
    agents = job.agents().values()
    assert {agent.rate_limits.concurrency for agent in agents} == {params.get("concurrency", 16)}
    assert str(job.in_flight(agents)) == f"calls in flight: {bound}"
