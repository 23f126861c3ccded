"""Prompt-cache breakpoints: where a provider whose cache is asked for (Anthropic's `cache_control`)
is told that the request so far will be sent again.

Anthropic caches a request's prefix up to a block marked `cache_control` and reads it back for a
later request that starts the same way; a write costs 1.25 times the input price, a read a tenth.
A call marks two places: the end of the system prompt, and the end of its own turn (the prompt and
the images it shows). The next call of the same conversation (a multi-turn strategy's next round)
or the next attempt at the same problem then reads all of it from the cache. OpenAI and Gemini
cache repeated prefixes without being asked; their replies' usage says what was read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

EPHEMERAL = {"type": "ephemeral"}
"""Anthropic's cache entry kind (five minutes, renewed on every read)."""


def with_cache_breakpoints(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Copies of `messages` with a breakpoint after the system prompt and after the last user turn."""
    marked = list(messages)
    last_user = max((i for i, m in enumerate(marked) if isinstance(m, HumanMessage)), default=None)
    for index, message in enumerate(marked):
        if isinstance(message, SystemMessage) or index == last_user:
            marked[index] = message.model_copy(update={"content": _marked(message.content)})
    return marked


def _marked(content: str | list[str | dict[Any, Any]]) -> list[str | dict[Any, Any]]:
    """The content as blocks, its last block carrying the breakpoint."""
    blocks: list[str | dict[Any, Any]] = (
        [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    )
    if not blocks:
        return blocks
    last = blocks[-1]
    blocks[-1] = {
        **(last if isinstance(last, dict) else {"type": "text", "text": last}),
        "cache_control": EPHEMERAL,
    }
    return blocks
