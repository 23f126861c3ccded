"""Batch mode (issue 51): a run's calls go through OpenAI's Batch API, Anthropic's Message Batches
or Gemini's Batch Mode, against stand-ins that speak them (creation, status transitions, results)
and refuse what they refuse. Each request is the body direct mode sends, a multi-turn strategy
advances one round per batch, an errored request is sent again, a cancelled batch is recorded as
such, and the run costs the direct run's cost at the batch rate."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agents.batch_ledger import LEDGER_FILE, BatchLedger
from results.store import STORE_FILE, ResultsStore
from tests.cli import BONGARD, run_bongard
from tests.standins.anthropic_batches import AnthropicBatchAPI
from tests.standins.gemini_batches import GeminiBatchAPI
from tests.standins.openai_batches import OpenAIBatchAPI
from tests.standins.protocols import AnthropicMessages, GeminiGenerateContent, OpenAIChat
from tests.standins.schema_replies import minimal_reply
from tests.standins.server import StandInServer, WireProtocol

KEY = {"OPENAI_API_KEY": "sk-stand-in-000"}
FAST = ("-M", "batch=true", "-M", "batch_wait_s=0.3", "-M", "batch_poll_s=0.02", "--concurrency", "16")


@dataclass(frozen=True)
class BatchPath:
    """One provider's batch path: its direct protocol, its batch stand-in, a model, and how a run
    reaches the stand-in."""

    direct: Callable[[], WireProtocol]
    batched: Callable[..., Any]
    model: str
    url_suffix: str
    env: dict[str, str]
    sdk: str


PATHS = {
    "openai": BatchPath(OpenAIChat, OpenAIBatchAPI, "openai:gpt-4o", "/v1", KEY, "langchain_openai"),
    "anthropic": BatchPath(
        AnthropicMessages, AnthropicBatchAPI, "anthropic:claude-sonnet-4-6", "",
        {"ANTHROPIC_API_KEY": "sk-ant-stand-in-000"}, "langchain_anthropic",
    ),
    "gemini": BatchPath(
        GeminiGenerateContent, GeminiBatchAPI, "gemini:gemini-2.5-flash", "",
        {"GOOGLE_API_KEY": "stand-in-key-000"}, "langchain_google_genai",
    ),
}  # fmt: skip


@pytest.fixture(params=list(PATHS))
def batch_path(request: pytest.FixtureRequest) -> BatchPath:
    """Each provider's batch path in turn, skipped where its SDK is not installed."""
    path = PATHS[request.param]
    pytest.importorskip(path.sdk)
    return path


def run(
    server: StandInServer,
    home: Path,
    data: Path,
    strategy: str,
    *extra: str,
    path: BatchPath = PATHS["openai"],
) -> ResultsStore:
    ran = run_bongard(
        "run", "--strategy", strategy, "--model", path.model, "-M", f"base_url={server.url}{path.url_suffix}",
        "--dataset", "bongard-classic", "--problems", "2-4", "--data-dir", data, "--home", home, *extra,
        env=path.env,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return ResultsStore(home / STORE_FILE)


def killed_once_kept(command: list[str], env: dict[str, str], ledger: Path) -> None:
    """`command` as a process of its own, SIGKILLed once the workspace's ledger keeps a batch."""
    running = subprocess.Popen(command, env={**os.environ, **env}, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (ledger.exists() and BatchLedger(ledger).statuses()) and time.monotonic() < deadline:
        time.sleep(0.05)
    running.send_signal(signal.SIGKILL)
    running.wait(timeout=30)


def canonical(bodies: list[Any]) -> list[str]:
    return sorted(json.dumps(body, sort_keys=True) for body in bodies)


def batch_sizes(api: Any) -> list[int]:
    """Requests in each batch the stand-in was sent, in order."""
    return [len(batch.get("lines") or batch.get("requests") or []) for batch in api.batches.values()]


def test_a_batch_runs_requests_are_the_direct_runs_and_it_costs_half(
    batch_path: BatchPath, shared_data: Path, tmp_path: Path
) -> None:
    with StandInServer(batch_path.direct(), responder=minimal_reply) as direct:
        store = run(direct, tmp_path / "direct", shared_data, "direct", path=batch_path)
        sent = [r.body for r in direct.model_requests()]
    api = batch_path.batched(minimal_reply)
    with StandInServer(api, responder=minimal_reply) as batched:
        api.origin = batched.url
        batch_store = run(batched, tmp_path / "batch", shared_data, "direct", *FAST, path=batch_path)
    assert canonical(api.bodies) == canonical(sent)  # field for field, images included
    assert len(sent) == 3 and any(kind in json.dumps(body) for body in sent for kind in IMAGE_FIELDS)
    assert batch_sizes(api) == [3]
    direct_run, batch_run = (s.summary(s.resolve_run("latest")) for s in (store, batch_store))
    assert (batch_run.done, batch_run.failed) == (3, 0)
    assert direct_run.cost_usd is not None and batch_run.cost_usd == pytest.approx(
        direct_run.cost_usd * 0.5, rel=1e-12
    )
    answers = [a.text for _, _, a in batch_store.answer_records(batch_store.resolve_run("latest"))]
    assert answers == [a.text for _, _, a in store.answer_records(store.resolve_run("latest"))]


IMAGE_FIELDS = ('"image_url"', '"type": "image"', '"inlineData"')


ROUNDS = {
    "contrastive-iterative": [3] * 7,  # one conversation: 6 pair turns and the answer turn
    "descriptive-iterative": [6] * 7 + [3],  # two side conversations of 7 turns abreast, then the answer
}
"""The requests of each batch, for three problems: a batch per round of the strategy's turns."""


@pytest.mark.parametrize(
    ("name", "strategy"),
    [("openai", "contrastive-iterative"), ("openai", "descriptive-iterative"),
     ("anthropic", "descriptive-iterative"), ("gemini", "descriptive-iterative")],
)  # fmt: skip
def test_a_multi_turn_strategy_advances_one_round_per_batch(
    name: str, strategy: str, shared_data: Path, tmp_path: Path
) -> None:
    path = PATHS[name]
    pytest.importorskip(path.sdk)
    api = path.batched(minimal_reply)
    with StandInServer(api, responder=minimal_reply) as batched:
        api.origin = batched.url
        store = run(
            batched, tmp_path, shared_data, strategy,
            "--batch", "-M", "batch_wait_s=0.3", "-M", "batch_poll_s=0.02", path=path,
        )  # fmt: skip
    summary = store.summary(store.resolve_run("latest"))
    assert (summary.done, summary.failed) == (3, 0)
    assert batch_sizes(api) == ROUNDS[strategy] and summary.calls == sum(ROUNDS[strategy])


def faulted_run(path: BatchPath, home: Path, data: Path, **fault: Any) -> tuple[Any, ResultsStore]:
    """A direct run of three problems in batch mode against `path`'s stand-in, told `fault`."""
    api = path.batched(minimal_reply, **fault)
    with StandInServer(api, responder=minimal_reply) as batched:
        api.origin = batched.url
        store = run(batched, home, data, "direct", *FAST, path=path)
    summary = store.summary(store.resolve_run("latest"))
    assert (summary.status, summary.done, summary.failed) == ("complete", 3, 0)
    return api, store


def test_an_errored_request_is_sent_again_alone_in_the_next_batch(
    batch_path: BatchPath, shared_data: Path, tmp_path: Path
) -> None:
    api, _ = faulted_run(batch_path, tmp_path, shared_data, failing=1)
    assert batch_sizes(api) == [3, 1]
    assert canonical(api.bodies[-1:]) == canonical(api.bodies[:1])  # the failed request, again, alone


def test_the_requests_of_an_expired_batch_go_again_in_the_next(
    batch_path: BatchPath, shared_data: Path, tmp_path: Path
) -> None:
    api, _ = faulted_run(batch_path, tmp_path, shared_data, expire=True)
    sizes = batch_sizes(api)  # the first expired unanswered; its requests go again (as their retries fall)
    assert sizes[0] == 3 and sum(sizes[1:]) == 3 and len(api.bodies) == 3
    kept = BatchLedger(tmp_path / LEDGER_FILE).statuses()
    assert next(iter(kept.values())) in ("expired", "ended")  # Anthropic's batch ends, its requests expired


def test_a_cancelled_batch_is_recorded_as_such_and_its_calls_fail_saying_so(
    batch_path: BatchPath, shared_data: Path, tmp_path: Path
) -> None:
    api = batch_path.batched(minimal_reply, cancel=True)
    with StandInServer(api, responder=minimal_reply) as batched:
        api.origin = batched.url
        ran = run_bongard(
            "run", "--strategy", "direct", "--model", batch_path.model,
            "-M", f"base_url={batched.url}{batch_path.url_suffix}", "--dataset", "bongard-classic",
            "--problems", "2-4", "--data-dir", shared_data, "--home", tmp_path, *FAST, env=batch_path.env,
        )  # fmt: skip
        assert ran.returncode != 0
        store = ResultsStore(tmp_path / STORE_FILE)
        run_id = store.resolve_run("latest")
        assert (store.summary(run_id).done, store.summary(run_id).failed) == (0, 3)
        (batch_id,) = api.batches
        errors = set(store.item_errors(run_id).values())
        assert len(errors) == 1 and f"batch {batch_id} was cancelled" in errors.pop()
        assert "--retry-errors` retries the 3 failed items" in ran.stdout
        assert BatchLedger(tmp_path / LEDGER_FILE).statuses() == {batch_id: "cancelled"}
        api.cancel = False  # retried, they go in a batch of their own, never waiting on the cancelled one
        resumed = run_bongard(
            "run", "--resume", "latest", "--retry-errors", "--home", tmp_path, env=batch_path.env
        )
        assert resumed.returncode == 0, resumed.stderr
    assert store.summary(run_id).done == 3 and batch_sizes(api) == [3, 3]


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
        "run", "--strategy", "direct", "--model", "ollama:llava", "--dataset", "bongard-classic",
        "--problems", "2", "--batch", "--data-dir", shared_data, "--home", tmp_path,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "ollama:llava: ollama has no batch API (batch mode: anthropic, gemini, openai)" in refused.stderr


def test_a_run_killed_while_its_batch_is_in_progress_is_resumed_without_sending_a_request_again(
    batch_path: BatchPath, shared_data: Path, tmp_path: Path
) -> None:
    api = batch_path.batched(minimal_reply)
    api.hold = True  # the batch stays in progress, as an hours-long one would
    with StandInServer(api, responder=minimal_reply) as batched:
        api.origin = batched.url
        command = [
            str(BONGARD), "run", "--strategy", "direct", "--model", batch_path.model,
            "-M", f"base_url={batched.url}{batch_path.url_suffix}", "--dataset", "bongard-classic",
            "--problems", "2-4", "--data-dir", str(shared_data), "--home", str(tmp_path), *FAST,
        ]  # fmt: skip
        killed_once_kept(command, batch_path.env, tmp_path / LEDGER_FILE)
        assert len(api.batches) == 1, "the run kept no batch"
        api.hold = False  # the batch finishes while no process waits for it
        resumed = run_bongard("run", "--resume", "latest", "--home", tmp_path, env=batch_path.env)
        assert resumed.returncode == 0, resumed.stderr
        batches_after_resume = len(api.batches)
        again = run_bongard(*command[1:], env=batch_path.env)  # a new run of the same calls: answered afresh
        assert again.returncode == 0, again.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    resumed_id, unkilled_id = store.run_ids()  # oldest first
    summary, unkilled = store.summary(resumed_id), store.summary(unkilled_id)
    assert (summary.status, summary.done, summary.failed) == ("complete", 3, 0)
    assert batches_after_resume == 1  # the resumed run took the first batch's results: nothing sent again
    assert len(api.bodies) == 6 and len(api.batches) == 2  # the new run: its own batch, never the old one's
    assert (summary.calls, summary.tokens, summary.cost_usd) == (
        unkilled.calls,
        unkilled.tokens,
        unkilled.cost_usd,
    )
    answers = [
        {(p, a): answer.text for p, a, answer in store.answer_records(r)} for r in (resumed_id, unkilled_id)
    ]
    assert answers[0] == answers[1]


def test_judging_in_batch_mode_sends_every_answer_in_one_batch(shared_data: Path, tmp_path: Path) -> None:
    with StandInServer(OpenAIChat(), responder=minimal_reply) as direct:
        run(direct, tmp_path, shared_data, "direct")
    api = OpenAIBatchAPI(lambda body: "EVALUATION: WRONG")
    with StandInServer(api, responder=minimal_reply) as batched:
        judged = run_bongard(
            "judge", "latest", "--judges", "openai:gpt-4o", "-M", f"base_url={batched.url}/v1", "--batch",
            "-M", "batch_wait_s=0.3", "-M", "batch_poll_s=0.02", "--home", tmp_path, env=KEY,
        )  # fmt: skip
    assert judged.returncode == 0, judged.stderr
    assert "3 answers judged" in judged.stdout and "0 ok, 3 wrong" in judged.stdout
    assert [batch["request_counts"]["total"] for batch in api.batches.values()] == [3]


def test_a_judging_killed_while_its_batch_is_in_progress_collects_that_batch_when_run_again(
    shared_data: Path, tmp_path: Path
) -> None:
    with StandInServer(OpenAIChat(), responder=minimal_reply) as direct:
        store = run(direct, tmp_path, shared_data, "direct")
    api = OpenAIBatchAPI(lambda body: "EVALUATION: WRONG")
    api.hold = True
    with StandInServer(api, responder=minimal_reply) as batched:
        judge = [
            str(BONGARD), "judge", "latest", "--judges", "openai:gpt-4o", "-M", f"base_url={batched.url}/v1",
            "--batch", "-M", "batch_wait_s=0.3", "-M", "batch_poll_s=0.02", "--home", str(tmp_path),
        ]  # fmt: skip
        killed_once_kept(judge, KEY, tmp_path / LEDGER_FILE)
        api.hold = False
        again = run_bongard(*judge[1:], env=KEY)
    assert again.returncode == 0, again.stderr
    assert "3 answers judged" in again.stdout and len(api.batches) == 1  # the kept batch, not a new one
    run_id = store.resolve_run("latest")
    assert [j.items for j in store.judgings(run_id)] == [3]


def test_a_detached_run_submits_its_batch_and_exits_and_each_resume_collects_a_round(
    shared_data: Path, tmp_path: Path
) -> None:
    api = OpenAIBatchAPI(minimal_reply)
    api.hold = True
    with StandInServer(api, responder=minimal_reply) as batched:
        detached = run_bongard(
            "run", "--strategy", "contrastive-iterative", "--model", "openai:gpt-4o",
            "-M", f"base_url={batched.url}/v1", "--dataset", "bongard-classic", "--problems", "2-3",
            "--data-dir", shared_data, "--home", tmp_path, *FAST, "--detach", env=KEY,
        )  # fmt: skip
        assert detached.returncode == 0, detached.stderr
        assert "detached: 1 batch in progress (batch_1)" in detached.stdout
        assert "resume --resume" not in detached.stdout and len(api.batches) == 1
        again = run_bongard("run", "--resume", "latest", "--detach", "--home", tmp_path, env=KEY)
        assert again.returncode == 0 and "detached: 1 batch in progress (batch_1)" in again.stdout
        assert len(api.batches) == 1  # still in progress: nothing submitted again
        resumes = 0
        while True:
            api.released |= set(api.batches)  # the batches out so far finish; a new one takes hours
            again = run_bongard("run", "--resume", "latest", "--detach", "--home", tmp_path, env=KEY)
            if "detached" not in again.stdout:
                break
            resumes += 1
            assert len(api.batches) == resumes + 1  # each resume: the round back, the next one submitted
    store = ResultsStore(tmp_path / STORE_FILE)
    summary = store.summary(store.resolve_run("latest"))
    assert again.returncode == 0 and (summary.status, summary.done) == ("complete", 2)
    assert batch_sizes(api) == [2] * 7 and resumes == 6 and len(api.bodies) == 14  # no request twice


def test_detach_without_batch_mode_is_refused(shared_data: Path, tmp_path: Path) -> None:
    refused = run_bongard(
        "run", "--strategy", "direct", "--model", "openai:gpt-4o", "--dataset", "bongard-classic",
        "--problems", "2", "--detach", "--data-dir", shared_data, "--home", tmp_path, env=KEY,
    )  # fmt: skip
    assert refused.returncode == 2 and "give --batch (or -M batch=true)" in refused.stderr


def batch_grid(folder: Path, server: StandInServer, data: Path, budget_line: str = "") -> Path:
    """Two strategies x gpt-4o (its batch API) and a model of a server with none, on two problems."""
    path = folder / "grid.toml"
    path.write_text(
        'name = "grid"\nstrategies = ["direct", "contrastive"]\n'
        f'models = [{{ spec = "openai:gpt-4o", params = {{ base_url = "{server.url}/v1", '
        'batch_wait_s = 0.3, batch_poll_s = 0.02 } }, "openai-compatible:local@http://127.0.0.1:1/v1"]\n'
        f'[[datasets]]\nname = "bongard-classic"\ndata_dir = "{data}"\nproblems = "2-3"\n{budget_line}'
    )
    return path


def test_an_experiments_plan_in_batch_mode_shows_the_saving(shared_data: Path, tmp_path: Path) -> None:
    with StandInServer(OpenAIChat(), responder=minimal_reply) as server:
        path = batch_grid(tmp_path, server, shared_data)
        direct = run_bongard("experiment", "plan", path, "--json", "--home", tmp_path, env=KEY)
        batched = run_bongard("experiment", "plan", path, "--json", "--batch", "--home", tmp_path, env=KEY)
        shown = run_bongard("experiment", "plan", path, "--batch", "--home", tmp_path, env=KEY)
    assert direct.returncode == batched.returncode == shown.returncode == 0, batched.stderr
    plain, plan = (
        {cell["key"]: cell for cell in json.loads(found.stdout)["cells"]} for found in (direct, batched)
    )
    gpt = [key for key in plan if "gpt-4o" in key]
    assert len(gpt) == 2 and all(
        plan[k]["direct_cost_usd"] == pytest.approx(plain[k]["cost_usd"]) for k in gpt
    )
    assert all(
        plan[k]["cost_usd"] == pytest.approx(plain[k]["cost_usd"] / 2) for k in gpt
    )  # GPT-4o's batch rate
    local = [key for key in plan if "local" in key]
    assert all(plan[k]["cost_usd"] is None and plan[k]["calls"] == plain[k]["calls"] for k in local)
    said = " ".join(shown.stderr.split())
    assert "batch mode: openai-compatible:local@http://127.0.0.1:1/v1: sent directly" in said
    assert "has no batch API" in said


def test_an_experiment_in_batch_mode_runs_its_cells_together_in_shared_batches(
    shared_data: Path, tmp_path: Path
) -> None:
    api = OpenAIBatchAPI(minimal_reply)
    with StandInServer(api, responder=minimal_reply) as server:
        path = batch_grid(tmp_path, server, shared_data)
        path.write_text(path.read_text().replace(', "openai-compatible:local@http://127.0.0.1:1/v1"', ""))
        ran = run_bongard("experiment", "run", path, "--batch", "--home", tmp_path, env=KEY)
    assert ran.returncode == 0, ran.stderr
    store = ResultsStore(tmp_path / STORE_FILE)
    summaries = [store.summary(run_id) for run_id in store.run_ids()]
    assert [(s.status, s.done) for s in summaries] == [("complete", 2), ("complete", 2)]
    assert sum(s.calls for s in summaries) == 16
    # the first batch: direct's 2 calls and contrastive's 6 pair comparisons a problem; then its 2 answers
    assert batch_sizes(api) == [2 + 2 * 6, 2]


def test_compare_shows_what_a_batch_run_saved_on_its_own_recorded_usage(
    shared_data: Path, tmp_path: Path
) -> None:
    with StandInServer(OpenAIChat(), responder=minimal_reply) as direct:
        store = run(direct, tmp_path, shared_data, "contrastive")
    api = OpenAIBatchAPI(minimal_reply)
    with StandInServer(api, responder=minimal_reply) as batched:
        run(batched, tmp_path, shared_data, "direct", *FAST)
    direct_run, batch_run = store.run_ids()
    compared = run_bongard("compare", direct_run, batch_run, "--out", tmp_path / "report", "--home", tmp_path)
    assert compared.returncode == 0, compared.stderr
    cost = store.summary(batch_run).cost_usd
    assert cost is not None and cost > 0
    said = " ".join(compared.stdout.split())
    expected = (
        f"{batch_run}: ${cost:.6f} at the batch price, ${2 * cost:.6f} sent directly: saved ${cost:.6f} (50%)"
    )
    assert expected in said
    assert f"{direct_run}: $" not in said  # a direct run saved nothing


def test_a_batch_run_and_a_direct_run_of_the_same_cell_share_a_row(shared_data: Path, tmp_path: Path) -> None:
    api = OpenAIBatchAPI(minimal_reply)  # it answers direct calls as the chat endpoint does
    with StandInServer(api, responder=minimal_reply) as server:
        store = run(server, tmp_path, shared_data, "direct")
        batched = run_bongard(
            "run", "--strategy", "direct", "--model", "openai:gpt-4o", "-M", f"base_url={server.url}/v1",
            "--dataset", "bongard-classic", "--problems", "5-6", "--data-dir", shared_data,
            "--home", tmp_path, *FAST, env=KEY,
        )  # fmt: skip
        assert batched.returncode == 0, batched.stderr
    first, second = store.run_ids()
    compared = run_bongard("compare", first, second, "--out", tmp_path / "report", "--home", tmp_path)
    assert compared.returncode == 0, compared.stderr  # batch parameters change no answer: one row
    assert "direct x openai:gpt-4o" not in compared.stderr and f"{second}: $" in " ".join(
        compared.stdout.split()
    )


def test_a_gemini_batch_over_the_inline_limit_goes_up_as_a_file_and_comes_back_as_one(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = PATHS["gemini"]
    pytest.importorskip(path.sdk)
    from agents.batch_apis.gemini import GeminiBatches

    with StandInServer(path.direct(), responder=minimal_reply) as direct:
        run(direct, tmp_path / "direct", shared_data, "direct", path=path)
        sent = [r.body for r in direct.model_requests()]
    # every batch past the inline limit, as a grid of RWR+ photos is past 20 MB
    monkeypatch.setattr("agents.providers.gemini.GEMINI_BATCHES", GeminiBatches(inline_bytes=0))
    api = GeminiBatchAPI(minimal_reply)
    with StandInServer(api, responder=minimal_reply) as batched:
        api.origin = batched.url
        store = run(batched, tmp_path / "batch", shared_data, "direct", *FAST, path=path)
        uploads = [r for r in batched.requests if r.path.startswith("/upload/v1beta/files")]
    summary = store.summary(store.resolve_run("latest"))
    assert (summary.status, summary.done, summary.failed) == ("complete", 3, 0)
    (batch,) = api.batches.values()
    assert batch["from_file"] == "files/0001" and "responses_file" in batch
    assert len(uploads) == 2 and uploads[0].headers["X-Goog-Upload-Command"] == "start"
    uploaded = [json.loads(line) for line in api.files["files/0001"].decode().splitlines()]
    assert canonical([line["request"] for line in uploaded]) == canonical(sent)  # the direct bodies
    assert canonical(api.bodies) == canonical(sent)
