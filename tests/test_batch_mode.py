"""Batch mode (issue 51): a run's calls go through OpenAI's Batch API, against a stand-in that
speaks it (Files, Batches, status transitions, output and error files) and refuses what it refuses.
Each request is the body direct mode sends, a multi-turn strategy advances one round per batch,
an errored request is sent again alone, and the run costs the direct run's cost at the batch rate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from results.store import STORE_FILE, ResultsStore
from tests.cli import run_bongard
from tests.standins.batches import OpenAIBatchAPI
from tests.standins.protocols import OpenAIChat
from tests.standins.schema_replies import minimal_reply
from tests.standins.server import StandInServer

pytest.importorskip("langchain_openai")

KEY = {"OPENAI_API_KEY": "sk-stand-in-000"}
FAST = ("-M", "batch=true", "-M", "batch_wait_s=0.3", "-M", "batch_poll_s=0.02", "--concurrency", "16")


def run(server: StandInServer, home: Path, data: Path, strategy: str, *extra: str) -> ResultsStore:
    ran = run_bongard(
        "run", "--strategy", strategy, "--model", "openai:gpt-4o", "-M", f"base_url={server.url}/v1",
        "--dataset", "bongard-classic", "--problems", "2-4", "--data-dir", data, "--home", home, *extra,
        env=KEY,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return ResultsStore(home / STORE_FILE)


def canonical(bodies: list[Any]) -> list[str]:
    return sorted(json.dumps(body, sort_keys=True) for body in bodies)


def test_a_batch_runs_requests_are_the_direct_runs_and_it_costs_half(
    shared_data: Path, tmp_path: Path
) -> None:
    with StandInServer(OpenAIChat(), responder=minimal_reply) as direct:
        store = run(direct, tmp_path / "direct", shared_data, "direct")
        sent = [r.body for r in direct.model_requests()]
    api = OpenAIBatchAPI(minimal_reply)
    with StandInServer(api, responder=minimal_reply) as batched:
        batch_store = run(batched, tmp_path / "batch", shared_data, "direct", *FAST)
    assert canonical(api.bodies) == canonical(sent)  # field for field, images included
    assert len(sent) == 3 and any("image_url" in json.dumps(body) for body in sent)
    assert [batch["request_counts"]["total"] for batch in api.batches.values()] == [3]
    direct_run, batch_run = (s.summary(s.resolve_run("latest")) for s in (store, batch_store))
    assert (batch_run.done, batch_run.failed) == (3, 0)
    assert direct_run.cost_usd is not None and batch_run.cost_usd == pytest.approx(
        direct_run.cost_usd * 0.5, rel=1e-12
    )
    answers = [a.text for _, _, a in batch_store.answer_records(batch_store.resolve_run("latest"))]
    assert answers == [a.text for _, _, a in store.answer_records(store.resolve_run("latest"))]


def test_a_multi_turn_strategy_advances_one_round_per_batch(shared_data: Path, tmp_path: Path) -> None:
    api = OpenAIBatchAPI(minimal_reply)
    with StandInServer(api, responder=minimal_reply) as batched:
        store = run(
            batched, tmp_path, shared_data, "contrastive-iterative",
            "--batch", "-M", "batch_wait_s=0.3", "-M", "batch_poll_s=0.02",
        )  # fmt: skip
    summary = store.summary(store.resolve_run("latest"))
    assert (summary.done, summary.failed) == (3, 0)
    per_problem = summary.calls // 3
    sizes = [batch["request_counts"]["total"] for batch in api.batches.values()]
    assert sizes == [3] * per_problem  # every round of the three conversations in one batch


def test_an_errored_request_is_sent_again_alone_in_the_next_batch(shared_data: Path, tmp_path: Path) -> None:
    api = OpenAIBatchAPI(minimal_reply, failing=1)
    with StandInServer(api, responder=minimal_reply) as batched:
        store = run(batched, tmp_path, shared_data, "direct", *FAST)
    summary = store.summary(store.resolve_run("latest"))
    assert (summary.done, summary.failed) == (3, 0)
    sizes = [batch["request_counts"] for batch in api.batches.values()]
    assert sizes == [{"total": 3, "completed": 2, "failed": 1}, {"total": 1, "completed": 1, "failed": 0}]
    first = json.loads(api.files["file-1"].decode().splitlines()[0])["body"]
    assert api.bodies[-1] == first  # the failed request, again, alone


def test_the_stand_in_refuses_a_batch_of_two_models() -> None:
    api = OpenAIBatchAPI(minimal_reply)
    lines = [{"custom_id": str(n), "method": "POST", "url": "/v1/chat/completions", "body": {"model": m}}
             for n, m in enumerate(("gpt-4o", "gpt-4.1"))]  # fmt: skip
    upload = api.reply(
        "/v1/files",
        {"multipart": {"purpose": b"batch", "file": "\n".join(map(json.dumps, lines)).encode()}},
        "",
        "stop",
    )
    file_id = json.loads(b"".join(upload.chunks))["id"]
    created = json.loads(
        b"".join(
            api.reply(
                "/v1/batches",
                {"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h"},
                "",
                "stop",
            ).chunks
        )
    )
    state = json.loads(b"".join(api.reply(f"/v1/batches/{created['id']}", None, "", "stop").chunks))
    assert state["status"] == "failed"
    assert "only include requests to a single model" in state["errors"]["data"][0]["message"]


def test_a_provider_without_a_batch_api_is_refused_in_one_line(shared_data: Path, tmp_path: Path) -> None:
    refused = run_bongard(
        "run", "--strategy", "direct", "--model", "anthropic:claude-sonnet-4-5",
        "--dataset", "bongard-classic", "--problems", "2", "--batch",
        "--data-dir", shared_data, "--home", tmp_path,
        env={"ANTHROPIC_API_KEY": "sk-ant-stand-in-000"},
    )  # fmt: skip
    assert refused.returncode != 0
    assert "anthropic:claude-sonnet-4-5: anthropic has no batch API (batch mode: openai)" in refused.stderr


def test_a_run_killed_while_its_batch_is_in_progress_is_resumed_without_sending_a_request_again(
    shared_data: Path, tmp_path: Path
) -> None:
    import os
    import signal
    import subprocess
    import time

    from tests.cli import BONGARD

    api = OpenAIBatchAPI(minimal_reply)
    api.hold = True  # the batch stays in progress, as an hours-long one would
    with StandInServer(api, responder=minimal_reply) as batched:
        command = [
            str(BONGARD), "run", "--strategy", "direct", "--model", "openai:gpt-4o",
            "-M", f"base_url={batched.url}/v1", "--dataset", "bongard-classic", "--problems", "2-4",
            "--data-dir", str(shared_data), "--home", str(tmp_path), *FAST,
        ]  # fmt: skip
        running = subprocess.Popen(
            command, env={**os.environ, **KEY}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 60
        while (
            not any(b["status"] == "in_progress" for b in api.batches.values())
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)
        assert len(api.batches) == 1, "the run submitted no batch"
        running.send_signal(signal.SIGKILL)
        running.wait(timeout=30)
        api.hold = False  # the batch finishes while no process waits for it
        resumed = run_bongard("run", "--resume", "latest", "--home", tmp_path, env=KEY)
        assert resumed.returncode == 0, resumed.stderr
        batches_after_resume = len(api.batches)
        again = run_bongard(*command[1:], env=KEY)  # a new run of the same calls: answered afresh
        assert again.returncode == 0, again.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    resumed_id, _ = store.run_ids()  # oldest first
    summary = store.summary(resumed_id)
    assert (summary.status, summary.done, summary.failed) == ("complete", 3, 0)
    assert batches_after_resume == 1  # the resumed run took the first batch's results: nothing sent again
    assert len(api.bodies) == 6 and len(api.batches) == 2  # the new run: its own batch, never the old one's
