"""Ollama without reloads: one `num_ctx` per model and run, sized before the first request from the
run's rehearsed requests (images by the model family's published rule), or fixed with `-M num_ctx`,
which never refuses a request that fits."""

from __future__ import annotations

from pathlib import Path

from agents.image_tokens import open_weight_rule
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.protocols import OllamaChat
from tests.standins.schema_replies import minimal_reply
from tests.standins.server import StandInServer

MODEL = "ollama:qwen2.5vl:7b"


def test_a_descriptive_iterative_run_sends_one_context_size_in_every_request(
    shared_data: Path, tmp_path: Path
) -> None:
    with StandInServer(OllamaChat(), responder=minimal_reply) as server:
        ran = run_bongard(
            "run", "--strategy", "descriptive-iterative", "--model", MODEL, "-M", f"base_url={server.url}",
            "--dataset", "bongard-classic", "--problems", "1-4", "--concurrency", "4",
            "--data-dir", shared_data, "--home", tmp_path,
        )  # fmt: skip
        sizes = [request.body["options"]["num_ctx"] for request in server.model_requests()]
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert len(sizes) > 4 * 3 and len(set(sizes)) == 1  # every call of every problem, one size
    printed = " ".join(ran.stdout.split())
    assert f"context: {MODEL}: num_ctx={sizes[0]} for every request" in printed
    assert "images: Qwen-VL: one token per 28 x 28 px, plus 2" in printed
    store = ResultsStore(tmp_path / STORE_FILE)
    assert store.run_config(store.resolve_run("latest"))["agent_config"][MODEL] == {"num_ctx": sizes[0]}


def test_a_fixed_context_runs_classic_problems_that_fit(shared_data: Path, tmp_path: Path) -> None:
    """A 104 px classic panel is 18 Qwen2.5-VL tokens, not a fixed 1024: twelve panels and a sheet fit
    in 8192 with room to spare."""
    assert open_weight_rule("qwen2.5vl:7b").tokens(104, 104) == 18
    with StandInServer(OllamaChat(), responder=minimal_reply) as server:
        ran = run_bongard(
            "run", "--strategy", "images-to-sides", "--model", MODEL, "-M", f"base_url={server.url}",
            "-M", "num_ctx=8192", "--dataset", "bongard-classic", "-O", "holdout_test=true",
            "--problems", "1-3", "--data-dir", shared_data, "--home", tmp_path,
        )  # fmt: skip
        sizes = {request.body["options"]["num_ctx"] for request in server.model_requests()}
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert sizes == {8192} and "3/3 items done, 0 failed" in ran.stdout
    assert "context:" not in ran.stdout  # fixed by the user: nothing sized
