"""Prompt caching (issue 51): Anthropic requests mark the shared context with `cache_control` where
a problem's context goes out again, the replies' cache reads are kept per call, and `runs show`
gives the run's cached share of input tokens. Against a stand-in of the Messages API that caches
prefixes as Anthropic's guide describes, and refuses more than four marks; OpenAI's and Gemini's
caching, implicit, read from their replies' usage."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from agents.images import image_block
from agents.registry import resolve_agent
from results.store import STORE_FILE, ResultsStore
from tests.builders import make_image
from tests.cli import run_bongard
from tests.standins.protocols import AnthropicMessages, GeminiGenerateContent, OpenAIChat
from tests.standins.schema_replies import minimal_reply
from tests.standins.server import StandInServer, WireProtocol

pytest.importorskip("langchain_anthropic")

KEY = {"ANTHROPIC_API_KEY": "sk-ant-stand-in-000"}


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY["ANTHROPIC_API_KEY"])


def marks(body: Any) -> list[str]:
    """Where a request carries `cache_control`: `system`, or `message N block M`."""
    found = [f"system {i}" for i, block in enumerate(body.get("system") or []) if "cache_control" in block]
    for n, message in enumerate(body["messages"]):
        content = message["content"] if isinstance(message["content"], list) else []
        found += [f"message {n} block {m}" for m, block in enumerate(content) if "cache_control" in block]
    return found


def test_a_conversation_marks_its_system_prompt_and_last_turn_and_reads_the_first_turn_back(
    key: None, tmp_path: Path
) -> None:
    panels = [make_image(tmp_path / f"{n}.png", (n * 40, 90, 200), size=(600, 600)) for n in range(4)]
    first: list[BaseMessage] = [
        SystemMessage(content="You compare the panels of a Bongard problem."),
        HumanMessage(content=[{"type": "text", "text": "Describe these."}, *map(image_block, panels)]),
    ]
    second = [*first, AIMessage(content="Four shapes."), HumanMessage(content="Which side is larger?")]
    with StandInServer(AnthropicMessages(prompt_cache=True)) as server:
        agent = resolve_agent("anthropic:test-model", {"base_url": server.url, "prompt_cache": True})
        replies = [asyncio.run(agent.acall(messages)) for messages in (first, second)]
        bodies = [request.body for request in server.model_requests()]
    assert marks(bodies[0]) == ["system 0", "message 0 block 4"]  # after the system prompt, the last image
    assert marks(bodies[1]) == ["system 0", "message 2 block 0"]  # the new turn's end
    assert bodies[0]["messages"][0]["content"][4]["type"] == "image"
    assert (replies[0].usage.cache_read_tokens, replies[1].usage.cache_read_tokens > 0) == (0, True)
    assert replies[0].usage.cache_write_tokens >= 4 * 600 * 600 // 750  # the four images, as Anthropic counts
    assert replies[1].usage.cache_read_tokens == replies[0].usage.cache_write_tokens  # the first turn, read


def test_an_agent_that_sends_its_context_once_marks_nothing_and_shares_its_reply_cache(
    key: None, shared_data: Path, tmp_path: Path
) -> None:
    panel = shared_data / "bongard-classic" / "002" / "0.png"
    messages: list[BaseMessage] = [
        HumanMessage(content=[{"type": "text", "text": "Describe."}, image_block(panel)])
    ]
    with StandInServer(AnthropicMessages(prompt_cache=True)) as server:
        agent = resolve_agent(
            "anthropic:test-model", {"base_url": server.url, "temperature": 0}, home=tmp_path
        )
        asyncio.run(agent.acall(messages))
        agent.shares_context = True  # as in a run whose problems' context goes out again
        cached = asyncio.run(agent.acall(messages))
        bodies = [request.body for request in server.model_requests()]
    assert [marks(body) for body in bodies] == [[]]  # the second came from the reply cache: not sent
    assert cached.cache_hit  # a breakpoint does not change the reply, so it does not change its key
    with StandInServer(AnthropicMessages(prompt_cache=True)) as server:
        fresh = resolve_agent("anthropic:test-model", {"base_url": server.url}, use_cache=False)
        fresh.shares_context = True
        asyncio.run(fresh.acall(messages))
        [body] = [request.body for request in server.model_requests()]
    assert marks(body) == ["message 0 block 1"]


def test_more_marks_than_anthropic_takes_are_refused_by_the_stand_in() -> None:
    block = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    body = {"messages": [{"role": "user", "content": [block] * 5}]}
    assert "A maximum of 4 blocks" in str(AnthropicMessages(prompt_cache=True).cache_usage(body))


def test_a_multi_turn_run_reports_its_cached_share_and_a_one_call_run_marks_nothing(
    shared_data: Path, tmp_path: Path
) -> None:
    with StandInServer(AnthropicMessages(prompt_cache=True), responder=minimal_reply) as server:
        for strategy, home in (("contrastive-iterative", tmp_path / "multi"), ("direct", tmp_path / "one")):
            # Bongard-RWR's photos (about 350 px a side, 160 tokens each): a conversation passes
            # Anthropic's 1,024-token minimum from its fourth turn, as it would against the real API
            ran = run_bongard(
                "run", "--strategy", strategy, "--model", "anthropic:test-model",
                "-M", f"base_url={server.url}", "--dataset", "bongard-rwr", "--problems", "1",
                "--data-dir", shared_data, "--home", home, env=KEY,
            )  # fmt: skip
            assert ran.returncode == 0, ran.stderr
        bodies = [request.body for request in server.model_requests()]
    turns = [body for body in bodies if len(body["messages"]) > 1]
    assert len(turns) >= 5 and all(len(marks(body)) <= 2 for body in bodies)
    assert all(marks(body)[-1].startswith(f"message {len(body['messages']) - 1} ") for body in turns)
    assert marks(bodies[-1]) == []  # direct: one call a problem, one attempt, no cache write to pay for

    store = ResultsStore(tmp_path / "multi" / STORE_FILE)
    run_id = store.resolve_run("latest")
    summary = store.summary(run_id)
    calls = store.item_calls(run_id, "bongard-rwr/1", 0)
    assert sum(call.cache_read_tokens for call in calls) == summary.cache_read_tokens > 0
    reads = [call.cache_read_tokens > 0 for call in calls]
    assert not reads[0] and reads[-1]  # the first turn reads nothing; the last, what came before it
    share = summary.cache_read_tokens / summary.input_tokens
    shown = run_bongard("runs", "show", run_id, "--home", tmp_path / "multi")
    assert (
        f"prompt cache: {summary.cache_read_tokens} of {summary.input_tokens} input tokens read from the "
        f"provider's cache ({share:.0%})"
    ) in shown.stdout


@pytest.mark.parametrize(
    ("protocol", "spec", "suffix", "env"),
    [
        (OpenAIChat(cached_tokens=8), "openai:gpt-4o", "/v1", {"OPENAI_API_KEY": "sk-stand-in-000"}),
        (
            GeminiGenerateContent(cached_tokens=8),
            "gemini:gemini-2.5-flash",
            "",
            {"GOOGLE_API_KEY": "stand-in"},
        ),
    ],
    ids=["openai", "gemini"],
)
def test_openais_and_geminis_implicit_caching_is_read_from_their_usage(
    protocol: WireProtocol, spec: str, suffix: str, env: dict[str, str], shared_data: Path, tmp_path: Path
) -> None:
    with StandInServer(protocol, responder=minimal_reply) as server:
        ran = run_bongard(
            "run", "--strategy", "direct", "--model", spec, "-M", f"base_url={server.url}{suffix}",
            "--dataset", "bongard-classic", "--problems", "2-3", "--data-dir", shared_data,
            "--home", tmp_path, env=env,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert not any("cache_control" in json.dumps(r.body) for r in server.model_requests())  # implicit
    store = ResultsStore(tmp_path / STORE_FILE)
    summary = store.summary(store.resolve_run("latest"))
    assert (summary.cache_read_tokens, summary.input_tokens) == (16, 22)
    assert "prompt cache: 16 of 22 input tokens read from the provider's cache (73%)" in ran.stdout
