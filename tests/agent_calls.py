"""Calling a managed agent in a test: quick retries, a small answer schema, one question with images."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from pydantic import BaseModel

from agents.call import CallSpec
from agents.images import image_block
from agents.managed import ManagedAgent
from agents.retry import RetryPolicy

FAST_RETRIES = RetryPolicy(max_attempts=6, max_total_s=60, base_delay_s=0.01, max_delay_s=2)


class Rule(BaseModel):
    left: str
    right: str


def ask(agent: ManagedAgent, *content: str | Path, call: CallSpec | None = None) -> Any:
    """One user turn of texts and image files, answered."""
    blocks: list[str | dict[Any, Any]] = [
        image_block(item) if isinstance(item, Path) else {"type": "text", "text": item} for item in content
    ]
    return asyncio.run(agent.acall([HumanMessage(content=blocks)], call))
