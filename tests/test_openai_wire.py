"""The lean OpenAI-protocol path against the SDK path it replaces, on one stand-in server.

`openai-compatible` posts its requests itself (`agents.providers.openai_wire`); `openai:MODEL -M
base_url=URL` goes through `ChatOpenAI` and the `openai` SDK. For the same calls both must send the
same body, read the same reply, and fail the same way; a run on the lean path must not load the SDK.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from agents.call import AgentReply, CallSpec
from agents.images import image_block
from agents.managed import AgentCallError, ManagedAgent
from agents.registry import resolve_agent
from agents.retry import RetryPolicy
from agents.structured import CUT_REPLY_ERROR
from agents.wire_sessions import endpoint_session, env_proxy
from tests.data_paths import shared_data_dir
from tests.standins.schema_replies import minimal_reply, output_schema
from tests.standins.server import Fault, StandIn, StandInServer

PANEL = next(iter(sorted((shared_data_dir() / "bongard-classic").rglob("*.png"))))


class Part(BaseModel):
    shape: str = Field(description="the shape's name")
    count: int


class Answer(BaseModel):
    """Which side a panel belongs to, and why."""

    side: str
    parts: list[Part]


DICT_SCHEMA = {
    "title": "verdict",
    "description": "a judge's verdict",
    "type": "object",
    "properties": {"accepted": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["accepted", "reason"],
}


def respond(body: Any) -> str:
    return minimal_reply(body) if output_schema(body) is not None else "a figure of three lines"


@pytest.fixture
def server(home: Path, monkeypatch: pytest.MonkeyPatch, standin: StandIn) -> StandInServer:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in-key")
    return standin(responder=respond)


def agents_for(server: StandInServer, **params: Any) -> tuple[ManagedAgent, ManagedAgent]:
    """The same model on the lean path and through the SDK, retries off."""
    settings = {"cache": False, **params}
    lean = resolve_agent(f"openai-compatible:m@{server.url}/v1", settings)
    sdk = resolve_agent("openai:m", {**settings, "base_url": f"{server.url}/v1"})
    for agent in (lean, sdk):
        agent.retry_policy = agent.retry_policy.__class__(max_attempts=1)
    return lean, sdk


def both(
    server: StandInServer, messages: list[BaseMessage], call: CallSpec, **params: Any
) -> tuple[tuple[AgentReply, dict[str, Any]], tuple[AgentReply, dict[str, Any]]]:
    """Each path's reply and the body the server received from it."""
    results = []
    for agent in agents_for(server, **params):
        before = len(server.requests)
        reply = asyncio.run(agent.acall(messages, call))
        [request] = server.requests[before:]
        results.append((reply, request.body))
    return results[0], results[1]


CONVERSATION: list[BaseMessage] = [
    SystemMessage("You sort panels."),
    HumanMessage(content=[{"type": "text", "text": "This panel:"}, image_block(PANEL)]),
    AIMessage("It shows lines."),
    HumanMessage("Which side is it on?"),
]


NO_PROPERTIES = {"type": "object", "required": ["side"]}
"""A schema no response format can carry: both paths ask for it in the prompt."""


def as_other_servers_name_it(body: dict[str, Any]) -> dict[str, Any]:
    """A body for OpenAI's API as the lean path sends it to any other server: the same reply limit,
    named `max_tokens` (OpenAI's `max_completion_tokens` is ignored by a server that knows only that)."""
    return {("max_tokens" if key == "max_completion_tokens" else key): value for key, value in body.items()}


@pytest.mark.parametrize(
    ("messages", "call", "params"),
    [
        ([HumanMessage("hello")], CallSpec(), {}),
        (CONVERSATION, CallSpec(), {"temperature": 0, "max_tokens": 64, "seed": 7, "top_p": 0.5}),
        (CONVERSATION, CallSpec(output_schema=Answer), {"temperature": 0}),
        ([HumanMessage("Judge it.")], CallSpec(output_schema=DICT_SCHEMA), {}),
        ([HumanMessage("Which side?")], CallSpec(output_schema=NO_PROPERTIES), {}),
    ],
    ids=["text", "images-and-sampling", "model-schema", "dict-schema", "schema-in-the-prompt"],
)
def test_the_lean_path_sends_and_reads_what_the_sdk_path_does(
    server: StandInServer, messages: list[BaseMessage], call: CallSpec, params: dict[str, Any]
) -> None:
    (lean, lean_body), (sdk, sdk_body) = both(server, messages, call, **params)
    assert lean_body == as_other_servers_name_it(sdk_body)
    if call.output_schema is not None:
        constrained = call.output_schema != NO_PROPERTIES
        assert ("response_format" in lean_body) is constrained
        assert (len(lean_body["messages"]) > len(messages)) is not constrained  # the prompt asks
        assert (lean.output_mode == "prompt") is not constrained
    else:
        assert lean.output_mode is None
    ignored = {"agent", "latency_s"}
    assert lean.model_dump(exclude=ignored) == sdk.model_dump(exclude=ignored)
    assert lean.usage.total_tokens > 0


class Loose(BaseModel):
    """A schema outside the strict subset: an optional field."""

    side: str
    note: str = ""


@pytest.mark.parametrize(("schema", "strict"), [(Answer, True), (DICT_SCHEMA, True), (Loose, False)])
def test_a_schema_inside_the_strict_subset_goes_out_strict_on_both_paths(
    server: StandInServer, schema: Any, strict: bool
) -> None:
    """OpenAI enforces a strict schema exactly (the stand-in refuses a strict one outside the subset)."""
    (lean, lean_body), (sdk, sdk_body) = both(
        server, [HumanMessage("Which side?")], CallSpec(output_schema=schema)
    )
    for reply, body in ((lean, lean_body), (sdk, sdk_body)):
        assert body["response_format"]["json_schema"].get("strict", False) is strict
        assert reply.parse_status == "ok", reply.parse_error
        assert reply.output_mode == ("strict" if strict else "schema")  # recorded as it went out


def test_a_structured_reply_cut_at_the_token_limit_is_a_failed_parse_on_both_paths(
    server: StandInServer,
) -> None:
    server.finish_reason = "length"
    (lean, _), (sdk, _) = both(server, [HumanMessage("hello")], CallSpec(output_schema=Answer))
    for reply in (lean, sdk):
        assert (reply.parse_status, reply.parse_error, reply.truncated) == ("failed", CUT_REPLY_ERROR, True)


@pytest.mark.parametrize(
    ("status", "name"),
    [
        (400, "BadRequestError"),
        (401, "AuthenticationError"),
        (429, "RateLimitError"),
        (503, "InternalServerError"),
    ],
)
def test_an_error_status_fails_as_the_sdk_says_it(server: StandInServer, status: int, name: str) -> None:
    body = '{"error": {"message": "not today", "type": "invalid_request_error"}}'
    failures = []
    for agent in agents_for(server):
        server.faults.append(Fault(status, {"retry-after": "0"}, body))
        with pytest.raises(AgentCallError) as failed:
            asyncio.run(agent.acall([HumanMessage("hello")]))
        failures.append(str(failed.value).split(": ", 1)[1])  # past the agent's name
    (lean_name, lean), (_, sdk) = (failure.split(": ", 1) for failure in failures)
    assert lean_name == name  # the SDK's name; LangChain renames it (OpenAIInvalidRequestError...)
    assert lean == sdk == f"Error code: {status} - not today"


def test_a_reply_cut_mid_body_is_tried_again_on_both_paths(server: StandInServer) -> None:
    """A body cut short is a dropped link, not the 400 that aiohttp's parser error carries."""
    for agent in agents_for(server):
        agent.retry_policy = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02)
        server.faults.append(Fault(drop="mid-reply"))
        before = len(server.requests)
        reply = asyncio.run(agent.acall([HumanMessage("hello")]))
        assert reply.text == "a figure of three lines"
        assert len(server.requests) - before == 2


def test_the_lean_model_is_a_langchain_chat_model_too(server: StandInServer) -> None:
    lean, _ = agents_for(server, temperature=0)
    reply = asyncio.run(lean.inner.ainvoke([HumanMessage("hello")], stop=["END"]))
    assert isinstance(reply, AIMessage) and reply.text == "a figure of three lines"
    assert server.requests[-1].body["stop"] == ["END"]


def test_a_reply_without_choices_names_what_is_missing(server: StandInServer) -> None:
    server.faults.append(Fault(200, body=json.dumps({"id": "x", "object": "chat.completion"})))
    lean, _ = agents_for(server)
    with pytest.raises(AgentCallError, match=r"no choices\[0\]\.message"):
        asyncio.run(lean.acall([HumanMessage("hello")]))


def test_a_call_on_the_lean_path_does_not_load_the_sdk(server: StandInServer) -> None:
    script = (
        "import asyncio, sys\n"
        "from langchain_core.messages import HumanMessage\n"
        "from agents.registry import resolve_agent\n"
        f"agent = resolve_agent('openai-compatible:m@{server.url}/v1', {{'cache': False}})\n"
        "asyncio.run(agent.acall([HumanMessage('hello')]))\n"
        "asyncio.run(agent.acall([HumanMessage('again, in a loop of its own')]))\n"
        "print(sorted(m for m in ('openai', 'langchain_openai') if m in sys.modules))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", script],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]" and len(server.requests) == 2
    assert loaded.stderr == ""  # no session or socket left unclosed by either loop


def test_a_loops_session_is_closed_as_the_loop_shuts_down(server: StandInServer) -> None:
    lean, _ = agents_for(server)

    async def call() -> aiohttp.ClientSession:
        await lean.acall([HumanMessage("hello")])
        session = await endpoint_session(f"{server.url}/v1")
        await lean.acall([HumanMessage("hello again")])  # on the same session
        assert await endpoint_session(f"{server.url}/v1") is session and not session.closed
        return session

    first, second = asyncio.run(call()), asyncio.run(call())
    assert first is not second and first.closed and second.closed


def test_the_lean_path_honours_the_proxy_the_environment_names(
    server: StandInServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY and NO_PROXY as httpx honours them, read once per server rather than per request."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # nothing listens there once the socket is closed
    for name in ("http_proxy", "no_proxy", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    lean, _ = agents_for(server)
    for no_proxy, reached in (("", False), ("127.0.0.1", True)):
        monkeypatch.setenv("NO_PROXY", no_proxy)
        env_proxy.cache_clear()
        before = len(server.requests)
        if reached:
            asyncio.run(lean.acall([HumanMessage("hello")]))
        else:
            with pytest.raises(AgentCallError, match=f"Cannot connect to host 127.0.0.1:{port}"):
                asyncio.run(lean.acall([HumanMessage("hello")]))
        assert len(server.requests) - before == int(reached)
    env_proxy.cache_clear()
