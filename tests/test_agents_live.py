"""Opt-in live calls to the paid APIs: each runs only when its provider's key is set.

Set e.g. OPENAI_API_KEY and `BONGARD_LIVE_MODELS=openai:gpt-4o-mini,anthropic:claude-haiku-4-5`
(defaults below) to check a real image round trip with structured output.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from agents.call import CallSpec, ImageSource
from agents.images import image_block
from agents.registry import get_provider, resolve_agent

DEFAULT_MODELS = "openai:gpt-4o-mini,anthropic:claude-haiku-4-5,gemini:gemini-2.5-flash"
MODELS = (os.environ.get("BONGARD_LIVE_MODELS") or DEFAULT_MODELS).split(",")


class Shape(BaseModel):
    figure: str
    count: int


@pytest.mark.parametrize("spec", MODELS)
def test_live_image_call_with_structured_output(
    spec: str, shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = get_provider(spec.partition(":")[0])
    if provider.key_set() is not True:
        pytest.skip(f"live test: set one of {', '.join(provider.key_env)} to run it")
    monkeypatch.setenv("BONGARD_HOME", str(tmp_path / "home"))
    panel = shared_data / "bongard-classic" / "001" / "0.png"
    agent = resolve_agent(spec, {"temperature": 0, "max_tokens": 200})
    message = HumanMessage(
        content=[
            {"type": "text", "text": "Name the figure in this image and how many there are."},
            image_block(panel),
        ]
    )
    reply = asyncio.run(
        agent.acall([message], CallSpec(output_schema=Shape, images=[ImageSource(path=panel)]))
    )
    assert reply.parse_status == "ok"
    assert reply.usage.input_tokens > 0 and reply.cost_usd is not None
