"""The managed agent against a stand-in OpenAI-protocol server: requests, images, structure, faults."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from PIL import Image

from agents.call import CallSpec
from agents.managed import AgentCallError, ManagedAgent
from agents.registry import AgentSpecError, resolve_agent
from agents.retry import status_code
from tests.agent_calls import FAST_RETRIES, Rule, ask
from tests.builders import make_image
from tests.standins.protocols import TOKENS_IN, TOKENS_OUT, OpenAIChat
from tests.standins.server import Fault, StandInServer


def agent_for(server: StandInServer, **params: Any) -> ManagedAgent:
    return resolve_agent(f"openai-compatible:test-model@{server.url}/v1", params, retry_policy=FAST_RETRIES)


def sent_images(body: dict[str, Any]) -> list[Image.Image]:
    images: list[Image.Image] = []
    for message in body["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part["type"] == "image_url":
                header, data = part["image_url"]["url"].split(",", 1)
                assert header.startswith("data:image/") and header.endswith(";base64")
                images.append(Image.open(io.BytesIO(base64.b64decode(data))))
    return images


def test_request_carries_text_image_and_parameters(
    home: Path, server: StandInServer, shared_data: Path
) -> None:
    panel = shared_data / "bongard-classic" / "001" / "0.png"
    reply = ask(agent_for(server, temperature=0, max_tokens=50, seed=7), "Describe it.", panel)
    [request] = server.model_requests()
    body = request.body
    assert body["model"] == "test-model"
    assert (body["temperature"], body["seed"]) == (0, 7)
    assert body["max_tokens"] == 50 and "max_completion_tokens" not in body  # the name every server reads
    assert body["messages"][0]["content"][0] == {"type": "text", "text": "Describe it."}
    [image] = sent_images(body)
    assert image.size == Image.open(panel).size  # small panels are sent as they are
    assert reply.text == "stand-in reply"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (TOKENS_IN, TOKENS_OUT)
    assert reply.cost_usd is None  # no price known for this model: unknown, never 0


def test_large_images_are_downscaled_unless_switched_off(
    home: Path, server: StandInServer, tmp_path: Path
) -> None:
    big = make_image(tmp_path / "big.png", (10, 120, 200), size=(3000, 1500))
    ask(agent_for(server), "Look.", big)
    ask(agent_for(server, image_max_side=0), "Look.", big)
    first, second = (sent_images(r.body)[0] for r in server.model_requests())
    assert first.size == (1024, 512)
    assert second.size == (3000, 1500)


def test_image_limit_is_checked_before_sending(home: Path, server: StandInServer, tmp_path: Path) -> None:
    agent = agent_for(server)
    panel = make_image(tmp_path / "p.png", (0, 0, 0))
    with pytest.raises(AgentCallError, match="at most 500 images per request; this one has 501"):
        ask(agent, *([panel] * 501))
    assert list(server.model_requests()) == []


def test_structured_output_uses_json_schema_and_parses(home: Path, server: StandInServer) -> None:
    server.responder = lambda body: json.dumps({"left": "circles", "right": "squares"})
    reply = ask(agent_for(server), "Solve.", call=CallSpec(task="answer", output_schema=Rule))
    [request] = server.model_requests()
    assert request.body["response_format"]["type"] == "json_schema"
    assert request.body["response_format"]["json_schema"]["schema"]["required"] == ["left", "right"]
    assert (reply.parse_status, reply.parsed) == ("ok", {"left": "circles", "right": "squares"})


def test_invalid_structured_reply_is_re_asked_once(home: Path, server: StandInServer) -> None:
    answers = iter(['{"left": "circles"}', json.dumps({"left": "circles", "right": "squares"})])
    server.responder = lambda body: next(answers)
    reply = ask(
        agent_for(server, reask_unparsed=True), "Solve.", call=CallSpec(task="answer", output_schema=Rule)
    )
    _, second = server.model_requests()
    follow_up = second.body["messages"]
    assert follow_up[-2] == {"role": "assistant", "content": '{"left": "circles"}'}
    assert "could not be used" in follow_up[-1]["content"] and "right" in follow_up[-1]["content"]
    assert reply.parse_status == "ok" and reply.parsed == {"left": "circles", "right": "squares"}
    assert reply.usage.input_tokens == 2 * TOKENS_IN


def test_a_reply_that_never_parses_is_reported_not_raised(home: Path, server: StandInServer) -> None:
    server.responder = lambda body: "I think the answer is circles."
    reply = ask(
        agent_for(server, reask_unparsed=True), "Solve.", call=CallSpec(task="answer", output_schema=Rule)
    )
    assert len(list(server.model_requests())) == 2
    assert reply.parse_status == "failed" and reply.parsed is None
    assert reply.parse_error and reply.text == "I think the answer is circles."


def test_a_reply_cut_at_the_token_limit_is_marked_truncated(home: Path, server: StandInServer) -> None:
    server.finish_reason = "length"
    assert ask(agent_for(server), "Talk.").truncated is True


def test_a_structured_reply_cut_at_the_token_limit_is_a_parse_failure_not_an_error(
    home: Path, server: StandInServer
) -> None:
    """The OpenAI SDK refuses to parse a cut reply (LengthFinishReasonError); the call still returns."""
    server.finish_reason = "length"
    server.responder = lambda body: '{"left": "circ'
    agent = agent_for(server, max_tokens=5, reask_unparsed=True)
    reply = ask(agent, "Solve.", call=CallSpec(task="answer", output_schema=Rule))
    assert len(list(server.model_requests())) == 2  # re-asked once, as any unusable reply
    assert (reply.parse_status, reply.parsed, reply.truncated) == ("failed", None, True)
    assert reply.text == '{"left": "circ' and "token limit" in str(reply.parse_error)
    assert reply.usage.output_tokens == 2 * TOKENS_OUT


def test_an_unparsed_reply_is_not_re_asked_unless_asked_and_is_recorded_as_a_parse_failure(
    home: Path, server: StandInServer
) -> None:
    """No paper re-asks a broken reply: by default it is a wrong answer, sent once."""
    server.responder = lambda body: "the left side, I think"
    reply = ask(agent_for(server, temperature=0), "Solve.", call=CallSpec(task="answer", output_schema=Rule))
    assert len(list(server.model_requests())) == 1
    assert (reply.parse_status, reply.parsed) == ("failed", None) and reply.parse_error
    asked = agent_for(server, temperature=0, reask_unparsed=True)
    assert (
        asked.params.sampling() != agent_for(server, temperature=0).params.sampling()
    )  # not one cache entry
    ask(asked, "Solve.", call=CallSpec(task="answer", output_schema=Rule))
    assert len(list(server.model_requests())) == 3  # the re-ask is a second request of its own


def test_a_429_storm_completes_every_request(home: Path, server: StandInServer) -> None:
    server.fault_policy = lambda index: (
        Fault(429, {"retry-after": "1"}, '{"error": {"message": "rate limited"}}') if index % 2 == 1 else None
    )
    agent = agent_for(server)

    async def many() -> list[Any]:
        message = [HumanMessage(content="hello")]
        return await asyncio.gather(*(agent.acall(message) for _ in range(10)))

    started = time.monotonic()
    replies = asyncio.run(many())
    assert [r.text for r in replies] == ["stand-in reply"] * 10
    refused = [r for i, r in enumerate(server.model_requests()) if i % 2 == 1]
    assert len(refused) >= 5
    assert time.monotonic() - started >= 1.0  # Retry-After was honoured
    assert any(r.attempts > 1 for r in replies)


@pytest.mark.parametrize(
    "fault",
    [
        Fault(500),
        Fault(503, body="<html>upstream down</html>"),
        Fault(200, body="{not json", delay_s=0),
        Fault(200, delay_s=3.0),  # slower than the 1 s timeout below
    ],
)
def test_transient_faults_are_retried(home: Path, server: StandInServer, fault: Fault) -> None:
    server.faults.append(fault)
    reply = ask(agent_for(server, timeout_s=1.0), "hello")
    assert reply.text == "stand-in reply"
    assert reply.attempts == 2


def test_a_bad_request_fails_at_once_with_a_clear_error(home: Path, server: StandInServer) -> None:
    server.faults.append(Fault(400, body='{"error": {"message": "model does not exist"}}'))
    with pytest.raises(
        AgentCallError, match=r"openai-compatible:test-model@.*Error code: 400 - model does not exist"
    ):
        ask(agent_for(server), "hello")
    assert len(list(server.model_requests())) == 1


def test_retries_are_bounded(home: Path, server: StandInServer) -> None:
    server.fault_policy = lambda index: Fault(500)
    with pytest.raises(AgentCallError, match="Error code: 500 - injected fault"):
        ask(agent_for(server), "hello")
    assert len(list(server.model_requests())) == FAST_RETRIES.max_attempts


def test_deterministic_requests_reach_the_model_once(
    home: Path, server: StandInServer, tmp_path: Path
) -> None:
    panel = make_image(tmp_path / "p.png", (90, 30, 30))
    first = ask(agent_for(server, temperature=0), "Describe.", panel)
    second = ask(agent_for(server, temperature=0), "Describe.", panel)
    assert len(list(server.model_requests())) == 1
    assert (first.cache_hit, second.cache_hit) == (False, True)
    assert second.text == first.text and second.usage == first.usage and second.cost_usd == 0.0
    make_image(panel, (30, 90, 30))  # other pixels, same path: a new request
    assert ask(agent_for(server, temperature=0), "Describe.", panel).cache_hit is False
    assert len(list(server.model_requests())) == 2


def test_sampled_and_uncached_requests_always_reach_the_model(home: Path, server: StandInServer) -> None:
    for _ in range(2):
        ask(agent_for(server, temperature=0.7), "hello")
        ask(agent_for(server, temperature=0, cache=False), "hello")
    assert len(list(server.model_requests())) == 4


def test_failed_parses_and_errors_are_not_cached(home: Path, server: StandInServer) -> None:
    server.responder = lambda body: "no json here"
    for _ in range(2):
        ask(
            agent_for(server, temperature=0, reask_unparsed=True), "Solve.", call=CallSpec(output_schema=Rule)
        )
    assert len(list(server.model_requests())) == 4


def test_provider_concurrency_is_shared_and_bounded(home: Path, server: StandInServer) -> None:
    server.latency_s = 0.2
    agents = [agent_for(server, concurrency=2), agent_for(server, concurrency=2)]

    async def many() -> None:
        await asyncio.gather(*(agents[i % 2].acall([HumanMessage(content=f"q{i}")]) for i in range(8)))

    asyncio.run(many())
    assert server.max_in_flight == 2  # one endpoint, one gate: the two agents together stay within 2


@pytest.mark.parametrize(
    "spec_for",
    [
        lambda url: (f"openai-compatible:m@{url}/v1", {}),  # the server named in the spec
        lambda url: ("vllm:m", {"base_url": f"{url}/v1"}),  # the server given as -M base_url
    ],
    ids=["model@url", "base_url"],
)
def test_servers_of_one_provider_each_get_their_own_concurrency(
    home: Path, spec_for: Callable[[str], tuple[str, dict[str, Any]]]
) -> None:
    with StandInServer(OpenAIChat()) as first, StandInServer(OpenAIChat()) as second:
        first.latency_s = second.latency_s = 0.2
        agents = []
        for server, concurrency in ((first, 2), (second, 3)):
            spec, params = spec_for(server.url)
            agents.append(resolve_agent(spec, {**params, "concurrency": concurrency}))

        async def many() -> None:
            await asyncio.gather(
                *(agent.acall([HumanMessage(content=f"q{n}")]) for agent in agents for n in range(8))
            )

        asyncio.run(many())
    assert (first.max_in_flight, second.max_in_flight) == (2, 3)


def test_a_provider_decides_which_failures_are_retried(home: Path, server: StandInServer) -> None:
    agent = agent_for(server)
    never = agent.model_copy(update={"provider": replace(agent.provider, retryable=lambda error: False)})
    server.faults.append(Fault(500))
    with pytest.raises(AgentCallError, match="Error code: 500"):
        ask(never, "hello")
    assert len(list(server.model_requests())) == 1  # a 500 is retried by default, not by this provider
    conflicts = agent.model_copy(
        update={"provider": replace(agent.provider, retryable=lambda error: status_code(error) == 400)}
    )
    server.faults.append(Fault(400))
    assert ask(conflicts, "hello").attempts == 2


def test_price_parameters_give_a_cost(home: Path, server: StandInServer) -> None:
    reply = ask(agent_for(server, price_input=1.0, price_output=2.0), "hello")
    assert reply.cost_usd == pytest.approx((TOKENS_IN * 1.0 + TOKENS_OUT * 2.0) / 1_000_000)


def test_unknown_specs_name_the_choices(home: Path) -> None:
    with pytest.raises(AgentSpecError, match="unknown provider 'gpt'; providers: anthropic, gemini"):
        resolve_agent("gpt:4o")
    with pytest.raises(AgentSpecError, match="not PROVIDER:MODEL"):
        resolve_agent("openai")
    with pytest.raises(AgentSpecError, match="bad agent parameter: temperature"):
        resolve_agent("openai-compatible:m@http://127.0.0.1:9/v1", {"temperature": "hot"})


def test_a_missing_key_is_named_without_its_value(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AgentSpecError, match="needs a key in one of: OPENAI_API_KEY"):
        resolve_agent("openai:gpt-4o")


def test_identical_deterministic_requests_in_flight_reach_the_model_once(
    home: Path, server: StandInServer
) -> None:
    server.latency_s = 0.3
    agent = agent_for(server, temperature=0)

    async def twins() -> list[Any]:
        return await asyncio.gather(*(agent.acall([HumanMessage(content="same")]) for _ in range(4)))

    replies = asyncio.run(twins())
    assert len(list(server.model_requests())) == 1
    assert sorted(r.cache_hit for r in replies) == [False, True, True, True]
    assert {r.text for r in replies} == {"stand-in reply"}
