"""Extending without editing the toolkit: a third-party agent by entry point, config files, `.env`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from agents import registry
from agents.call import CallSpec, ImageSource
from agents.images import image_block
from agents.provider import Provider
from agents.registry import read_agent_config, resolve_agent
from datasets_io.plugins import Registry
from datasets_io.problem import Panel
from tests.distributions import installed_distribution

PLUGIN = '''
"""A package's own non-LLM agent: it answers from the call metadata, never from prompt text."""
import json
from typing import Any
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from agents.provider import Provider


class PanelCounter(BaseChatModel):
    @property
    def _llm_type(self) -> str:
        return "panel-counter"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        call = kwargs["call"]
        sides = [panel.side for image in call.images for panel in image.panels]
        answer = {"task": call.task, "left": sides.count("left"), "right": sides.count("right")}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=json.dumps(answer)))])


PROVIDER = Provider(
    name="panel-counter",
    summary="counts panels per side",
    build=lambda model, params: PanelCounter(),
    reads_call_metadata=True,
    deterministic=True,
)
'''


class Counts(BaseModel):
    task: str
    left: int
    right: int


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A distribution on sys.path declaring an entry point, as `pip install` would leave it."""
    monkeypatch.setattr(registry, "PROVIDERS", Registry(registry.ENTRY_POINT_GROUP, "provider", Provider))
    monkeypatch.setenv("BONGARD_HOME", str(tmp_path / "home"))
    with installed_distribution(
        tmp_path / "site",
        monkeypatch,
        "counter-plugin",
        {"counter_plugin": PLUGIN},
        {"bongard_agents.agents": {"panel-counter": "counter_plugin:PROVIDER"}},
    ):
        yield


def test_an_entry_point_agent_plugs_in_and_reads_the_call_metadata(
    installed_plugin: None, tmp_path: Path
) -> None:
    assert "panel-counter" in registry.provider_names()
    agent = resolve_agent("panel-counter:v1")
    sheet = tmp_path / "sheet.png"
    sheet.write_bytes(b"not read by this agent")
    panels = [Panel(path=sheet, side=side, index=i) for side in ("left", "right") for i in range(6)]
    call = CallSpec(
        task="answer", output_schema=Counts, images=[ImageSource(path=sheet, panels=panels, layout="sheet")]
    )
    message = HumanMessage(content=[{"type": "text", "text": "unrelated words"}, image_block(sheet)])
    first = asyncio.run(agent.acall([message], call))
    second = asyncio.run(agent.acall([message], call))
    assert first.parsed == {"task": "answer", "left": 6, "right": 6}
    assert second.cache_hit  # deterministic by nature: cached without temperature 0


def test_a_config_file_sets_parameters_per_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BONGARD_HOME", str(tmp_path / "home"))
    config = tmp_path / "agents.toml"
    config.write_text(
        '["*"]\ntemperature = 0\n\n["openai-compatible:m@http://127.0.0.1:9/v1"]\nmax_tokens = 77\n', "utf-8"
    )
    table = read_agent_config(config)
    agent = resolve_agent("openai-compatible:m@http://127.0.0.1:9/v1", {"seed": 5}, config=table)
    assert (agent.params.temperature, agent.params.max_tokens, agent.params.seed) == (0, 77, 5)
    other = resolve_agent("openai-compatible:n@http://127.0.0.1:9/v1", config=table)
    assert (other.params.temperature, other.params.max_tokens) == (0, None)
    json_config = tmp_path / "agents.json"
    json_config.write_text(json.dumps({"*": {"temperature": 0.5}}), "utf-8")
    assert read_agent_config(json_config) == {"*": {"temperature": 0.5}}


def test_keys_are_read_from_a_dot_env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "recorded, so that the key read below is removed after the test")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("BONGARD_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("ANTHROPIC_API_KEY=sk-ant-from-dot-env-000\n", "utf-8")
    agent = resolve_agent("anthropic:claude-sonnet-4-5")
    assert agent.provider.key_set() is True  # the variable is restored to unset after the test
