"""Bounded replies and readable retries (issue 18), against a stand-in OpenAI-protocol server.

A runaway reply (valid JSON followed by megabytes of junk) used to pin a core in LangChain's
quadratic partial-JSON repair, in a worker thread no timeout stopped; it is now read in linear time
and cut at the agent's reply limit. An unreadable Retry-After falls back to backoff, a long one is
honoured up to a cap, and a timeout says what timed out and after how long.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from agents.call import AgentReply, CallSpec
from agents.managed import AgentCallError, ManagedAgent
from agents.provider import MAX_REPLY_CHARS
from agents.registry import resolve_agent
from agents.retry import MAX_RETRY_AFTER_S, RetryPolicy, retry_delay_s
from agents.structured import OPENINGS_TRIED, extract_json
from tests.standins.server import Fault, StandInServer

ONE_TRY = RetryPolicy(max_attempts=1)
FAST_RETRIES = RetryPolicy(max_attempts=3, max_total_s=60, base_delay_s=0.01, max_delay_s=0.1)
RULE = {"left": "circles", "right": "triangles"}
KIB = 1024


class Rule(BaseModel):
    left: str
    right: str


def agent_for(server: StandInServer, policy: RetryPolicy = FAST_RETRIES, **params: Any) -> ManagedAgent:
    return resolve_agent(
        f"openai-compatible:m@{server.url}/v1", {"cache": False, **params}, retry_policy=policy
    )


def ask(agent: ManagedAgent, call: CallSpec | None = None) -> AgentReply:
    return asyncio.run(agent.acall([HumanMessage(content="Solve.")], call))


def json_and_junk(size: int) -> str:
    text = json.dumps(RULE) + " and so on"
    return text + "x" * (size - len(text))


def threads_parsing_json() -> list[int]:
    """Threads now inside LangChain's JSON parsing, which no timeout stops."""

    def parsing(frame: Any) -> bool:
        files = (f.f_code.co_filename for f, _ in traceback.walk_stack(frame))
        return any("langchain_core" in name and "json" in name for name in files)

    return [ident for ident, frame in sys._current_frames().items() if parsing(frame)]


def test_a_long_reply_of_json_and_junk_parses_at_once_and_leaves_no_thread_parsing(
    home: Path, server: StandInServer
) -> None:
    """128 KiB took about 68 s in LangChain's parser (issue 18), far past this 10 s timeout."""
    server.responder = lambda body: json_and_junk(128 * KIB)
    agent = agent_for(server, ONE_TRY, timeout_s=10)

    async def call_then_look() -> tuple[AgentReply | AgentCallError, list[int]]:
        try:
            reply: AgentReply | AgentCallError = await agent.acall(
                [HumanMessage("Solve.")], CallSpec(output_schema=Rule)
            )
        except AgentCallError as failed:
            reply = failed
        return reply, threads_parsing_json()

    reply, parsing = asyncio.run(call_then_look())
    assert parsing == []
    assert isinstance(reply, AgentReply), reply
    assert reply.parsed == RULE and reply.parse_status == "ok"


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + json.dumps(RULE),  # nested past the stack: not an error, no quadratic retries
        "see [a] " * OPENINGS_TRIED + json.dumps(RULE),
    ],
)
def test_openings_past_the_first_few_are_not_tried(text: str) -> None:
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json(text)
    assert extract_json("see [the rules]: " + json.dumps(RULE)) == RULE  # a bracketed word first is fine


def test_a_reply_over_the_limit_is_cut_there_and_says_so(home: Path, server: StandInServer) -> None:
    server.responder = lambda body: "word " * (200 * KIB)  # 1 MiB of free text
    reply = ask(agent_for(server, max_reply_chars=1000))
    assert reply.text.startswith("word word") and reply.truncated
    assert reply.text.endswith(
        f"\n[reply cut: its first 1000 of {1000 * KIB} characters kept (max_reply_chars)]"
    )
    assert len(reply.text) < 1100


def test_a_structured_reply_over_the_default_limit_keeps_its_json(home: Path, server: StandInServer) -> None:
    server.responder = lambda body: json_and_junk(MAX_REPLY_CHARS + 100 * KIB)
    reply = ask(agent_for(server), CallSpec(output_schema=Rule))
    assert reply.parsed == RULE and reply.truncated
    assert len(reply.text) < MAX_REPLY_CHARS + 100


def test_the_reply_limit_is_part_of_the_cache_key_only_when_set(home: Path, server: StandInServer) -> None:
    default, cut = agent_for(server).params, agent_for(server, max_reply_chars=1000).params
    assert "max_reply_chars" not in default.sampling()
    assert cut.sampling()["max_reply_chars"] == 1000  # a cut reply is another reply


def test_an_unreadable_retry_after_falls_back_to_backoff(home: Path, server: StandInServer) -> None:
    server.faults.append(Fault(429, {"retry-after": "soon"}, '{"error": {"message": "slow down"}}'))
    reply = ask(agent_for(server))
    assert reply.text == "stand-in reply" and reply.attempts == 2


def refused(retry_after: str) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(429, headers={"retry-after": retry_after}, request=request)
    return httpx.HTTPStatusError("rate limited", request=request, response=response)


@pytest.mark.parametrize(
    ("retry_after", "cap", "waited"),
    [
        ("120", MAX_RETRY_AFTER_S, 120.0),  # over a minute: honoured, not cut to 60 s
        ("86400", MAX_RETRY_AFTER_S, MAX_RETRY_AFTER_S),  # a day: the cap
        ("120", 30.0, 30.0),  # a cap of one's own
        ("Wed, 21 Oct 2015 07:28:00 GMT", MAX_RETRY_AFTER_S, 0.0),  # a date past
    ],
)
def test_retry_after_is_honoured_up_to_the_cap(retry_after: str, cap: float, waited: float) -> None:
    policy = RetryPolicy(max_retry_after_s=cap)
    assert retry_delay_s(policy, 1, refused(retry_after)) == waited


@pytest.mark.parametrize("retry_after", ["soon", "inf", "nan", ""])
def test_an_unreadable_retry_after_is_backoff(retry_after: str) -> None:
    policy = RetryPolicy(base_delay_s=0.5)
    assert 0 <= retry_delay_s(policy, 1, refused(retry_after)) <= 0.5


def test_the_retry_after_cap_is_an_agent_parameter(home: Path, server: StandInServer) -> None:
    server.faults.append(Fault(429, {"retry-after": "120"}, '{"error": {"message": "come back later"}}'))
    reply = ask(agent_for(server, max_retry_after_s=0.1))
    first, second = (r.at for r in server.model_requests())
    assert reply.attempts == 2 and second - first < 60  # not the two minutes asked, nor the old 60 s


def test_a_timeout_says_what_timed_out_and_after_how_long(home: Path, server: StandInServer) -> None:
    server.faults.extend([Fault(200, delay_s=2.0)] * 2)
    agent = agent_for(server, RetryPolicy(max_attempts=2, base_delay_s=0.01), timeout_s=0.5)
    with pytest.raises(AgentCallError) as failed:
        ask(agent)
    assert f"no complete reply from {server.url}/v1 within 0.5 s (timeout_s)" in str(failed.value)
