"""vLLM: the serve command line, the connect mode, and the offline engine adapter.

vLLM needs a GPU, so its engine never runs here. The serve mode is checked by
its exact command line, the connect mode against a stand-in OpenAI-protocol
server, and the offline adapter against a stand-in `vllm` module that
records what the adapter asks of the engine API.
"""

from __future__ import annotations

import asyncio
import importlib.machinery
import json
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from agents.call import CallSpec
from agents.images import image_block
from agents.local_reply_limit import LOCAL_REPLY_TOKENS
from agents.managed import AgentCallError
from agents.providers import vllm_offline
from agents.providers.vllm import VllmParams, serve_argv
from agents.registry import AgentSpecError, resolve_agent
from tests.builders import make_image
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer


class Side(BaseModel):
    side: str


def test_serve_command_line_carries_per_model_arguments() -> None:
    params = VllmParams.model_validate(
        {"max_model_len": 8192, "images_per_prompt": 12, "tensor_parallel_size": 2, "seed": 3}
    )
    argv = serve_argv("Qwen/Qwen2-VL-7B-Instruct", params, 8123)
    assert argv[1:6] == ["serve", "Qwen/Qwen2-VL-7B-Instruct", "--host", "127.0.0.1", "--port"]
    assert argv[6] == "8123"
    flags = dict(zip(argv[7::2], argv[8::2], strict=True))
    assert flags == {
        "--max-model-len": "8192",
        "--tensor-parallel-size": "2",
        "--limit-mm-per-prompt": json.dumps({"image": 12}),
        "--seed": "3",
    }


def test_without_vllm_and_without_a_url_the_error_says_what_to_do(home: Path) -> None:
    with pytest.raises(AgentSpecError, match=r"vLLM is not installed here.*base_url"):
        resolve_agent("vllm:Qwen/Qwen2-VL-7B-Instruct")


def test_connect_mode_talks_to_a_running_server(home: Path) -> None:
    with StandInServer(OpenAIChat()) as server:
        agent = resolve_agent("vllm:Qwen/Qwen2-VL-7B-Instruct", {"base_url": f"{server.url}/v1"})
        reply = asyncio.run(agent.acall([HumanMessage(content="hello")]))
    [request] = server.model_requests()
    assert request.path == "/v1/chat/completions" and request.body["model"] == "Qwen/Qwen2-VL-7B-Instruct"
    assert reply.text == "stand-in reply" and reply.cost_usd == 0.0


@pytest.mark.parametrize("key", [None, "vllm-secret-key-0123456789"])
def test_connect_mode_sends_the_servers_key_from_vllm_api_key(
    home: Path, monkeypatch: pytest.MonkeyPatch, key: str | None
) -> None:
    """A server started with --api-key refuses any other key (401); without one it takes any."""
    if key is None:
        monkeypatch.delenv("VLLM_API_KEY", raising=False)
    else:
        monkeypatch.setenv("VLLM_API_KEY", key)
    with StandInServer(OpenAIChat()) as server:
        server.api_key = key
        agent = resolve_agent("vllm:m", {"base_url": f"{server.url}/v1", "cache": False})
        assert asyncio.run(agent.acall([HumanMessage(content="hello")])).text == "stand-in reply"
        [request] = server.model_requests()
        sent = {name.lower(): value for name, value in request.headers.items()}["authorization"]
        assert sent == f"Bearer {key or 'not-needed'}"
        monkeypatch.delenv("VLLM_API_KEY", raising=False)  # the key the server needs, missing
        refused = resolve_agent("vllm:m", {"base_url": f"{server.url}/v1", "cache": False})
        if key is not None:
            with pytest.raises(AgentCallError, match="AuthenticationError: Error code: 401"):
                asyncio.run(refused.acall([HumanMessage(content="hello")]))


class EngineStandIn:
    """Records what the adapter asks of `vllm.LLM` and answers from a queue."""

    created: ClassVar[list[dict[str, Any]]] = []
    chats: ClassVar[list[tuple[list[Any], Any]]] = []
    answers: ClassVar[list[str]] = []

    def __init__(self, model: str, **engine_args: Any) -> None:
        EngineStandIn.created.append({"model": model, **engine_args})

    def chat(self, conversations: list[Any], sampling: Any, use_tqdm: bool = True) -> list[Any]:
        EngineStandIn.chats.append((conversations, sampling))
        text = EngineStandIn.answers.pop(0)
        completion = types.SimpleNamespace(text=text, token_ids=[1] * 5, finish_reason="stop")
        return [types.SimpleNamespace(prompt_token_ids=[1] * 9, outputs=[completion])]


@pytest.fixture
def vllm_stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[EngineStandIn]]:
    module = types.ModuleType("vllm")
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    module.LLM = EngineStandIn  # type: ignore[attr-defined]
    module.SamplingParams = lambda **kwargs: kwargs  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(vllm_offline, "_engines", {})
    EngineStandIn.created, EngineStandIn.chats, EngineStandIn.answers = [], [], []
    yield EngineStandIn


def test_offline_engine_is_given_a_reply_limit_where_none_is_set(
    home: Path, vllm_stand_in: type[EngineStandIn]
) -> None:
    """vLLM's SamplingParams stops at 16 tokens where no max_tokens is given: every answer of a strategy
    whose paper states no limit was cut. It gets the local reply limit; a set one is kept (below)."""
    vllm_stand_in.answers = ["Left: circles. Right: squares."]
    agent = resolve_agent("vllm-offline:Qwen/Qwen2-VL-7B-Instruct", {"temperature": 0, "cache": False})
    asyncio.run(agent.acall([HumanMessage(content="Which rule?")], CallSpec(task="answer")))
    [(_, sampling)] = vllm_stand_in.chats
    assert sampling == {"temperature": 0.0, "max_tokens": LOCAL_REPLY_TOKENS, "stop": None}


def test_offline_adapter_builds_one_engine_and_asks_for_json(
    home: Path,
    vllm_stand_in: type[EngineStandIn],
    tmp_path: Path,
) -> None:
    vllm_stand_in.answers = ["left, I think", '{"side": "left"}']
    agent = resolve_agent(
        "vllm-offline:Qwen/Qwen2-VL-7B-Instruct",
        {
            "temperature": 0,
            "max_tokens": 64,
            "images_per_prompt": 2,
            "max_model_len": 4096,
            "cache": False,
            "reask_unparsed": True,
        },
    )
    panel = make_image(tmp_path / "p.png", (200, 10, 10), size=(2048, 1024))
    message = HumanMessage(content=[{"type": "text", "text": "Which side?"}, image_block(panel)])
    reply = asyncio.run(agent.acall([message], CallSpec(task="classify", output_schema=Side)))
    assert vllm_stand_in.created == [
        {"model": "Qwen/Qwen2-VL-7B-Instruct", "max_model_len": 4096, "limit_mm_per_prompt": {"image": 2}}
    ]
    (first, sampling), (second, _) = vllm_stand_in.chats
    assert sampling == {"temperature": 0.0, "max_tokens": 64, "stop": None}
    parts = first[0][0]["content"]
    assert parts[0] == {"type": "text", "text": "Which side?"}
    assert parts[1]["type"] == "image_url" and parts[1]["image_url"]["url"].startswith(
        "data:image/png;base64,"
    )
    assert "JSON schema" in str(first[0][-1]["content"])  # no constrained decoding: the prompt asks
    assert "could not be used" in str(second[0][-1]["content"])  # then one re-ask
    assert reply.parsed == {"side": "left"} and reply.usage.input_tokens == 18
