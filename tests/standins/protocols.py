"""Response shapes of the wire protocols the providers and image generators speak."""

from __future__ import annotations

import base64
import io
import json
import re
import time
from typing import Any
from urllib.parse import urlsplit

from PIL import Image, ImageColor

from tests.standins.server import Reply

TOKENS_IN = 11
TOKENS_OUT = 7


def _json(data: Any) -> list[bytes]:
    return [json.dumps(data).encode()]


class OpenAIChat:
    """POST /v1/chat/completions (OpenAI, vLLM, llama.cpp, any OpenAI-compatible server)."""

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.endswith("/chat/completions")

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        return Reply(
            _json(
                {
                    "id": "chatcmpl-standin",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "standin"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": finish,
                        }
                    ],
                    "usage": {
                        "prompt_tokens": TOKENS_IN,
                        "completion_tokens": TOKENS_OUT,
                        "total_tokens": 18,
                    },
                }
            )
        )


class AnthropicMessages:
    """POST /v1/messages; a forced tool is answered with a tool_use block holding the JSON."""

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.endswith("/v1/messages")

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        choice = body.get("tool_choice") or {}
        if choice.get("type") == "tool":
            content: list[dict[str, Any]] = [
                {"type": "tool_use", "id": "toolu_standin", "name": choice["name"], "input": json.loads(text)}
            ]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": text}]
            stop = "max_tokens" if finish == "length" else "end_turn"
        return Reply(
            _json(
                {
                    "id": "msg_standin",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model"),
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": {"input_tokens": TOKENS_IN, "output_tokens": TOKENS_OUT},
                }
            )
        )


GEMINI_API_VERSIONS = "(?:v1|v1beta|v1alpha)"
"""The versions of the Gemini API that serve generateContent: google-genai 3.x posts to v1, 1.x-2.x
to v1beta; any other path is a 404 there, and so here."""


class GeminiGenerateContent:
    """POST /{v1,v1beta,v1alpha}/models/MODEL:generateContent."""

    def handles(self, method: str, path: str) -> bool:
        pattern = rf"/{GEMINI_API_VERSIONS}/models/[^/:]+:generateContent"
        return method == "POST" and re.fullmatch(pattern, urlsplit(path).path) is not None

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        return Reply(
            _json(
                {
                    "candidates": [
                        {
                            "content": {"parts": [{"text": text}], "role": "model"},
                            "finishReason": "MAX_TOKENS" if finish == "length" else "STOP",
                            "index": 0,
                        }
                    ],
                    "usageMetadata": {
                        "promptTokenCount": TOKENS_IN,
                        "candidatesTokenCount": TOKENS_OUT,
                        "totalTokenCount": TOKENS_IN + TOKENS_OUT,
                    },
                    "modelVersion": "standin",
                }
            )
        )


class OllamaChat:
    """POST /api/chat, streamed as NDJSON unless the request says `"stream": false`."""

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path == "/api/chat"

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        now = "2026-11-22T00:00:00Z"
        model = body.get("model")
        final = {
            "model": model,
            "created_at": now,
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": finish,
            "prompt_eval_count": TOKENS_IN,
            "eval_count": TOKENS_OUT,
        }
        if body.get("stream") is False:
            final["message"] = {"role": "assistant", "content": text}
            return Reply(_json(final))
        pieces = [text[i : i + 8] for i in range(0, len(text), 8)] or [""]
        lines = [
            json.dumps(
                {
                    "model": model,
                    "created_at": now,
                    "message": {"role": "assistant", "content": piece},
                    "done": False,
                }
            )
            for piece in pieces
        ]
        lines.append(json.dumps(final))
        return Reply([("\n".join(lines) + "\n").encode()], content_type="application/x-ndjson")


class OpenAIImages:
    """POST /v1/images/generations: one PNG of the requested size, as `b64_json`.

    The responder's text names the image's colour (`"#3366cc"`, `"red"`); any
    other text gives grey, so a test can tell which reply it decoded.
    """

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.endswith("/images/generations")

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        width, height = (int(side) for side in str(body.get("size", "256x256")).split("x"))
        try:
            colour = ImageColor.getrgb(text)
        except ValueError:
            colour = (128, 128, 128)
        encoded = io.BytesIO()
        Image.new("RGB", (width, height), colour).save(encoded, format="PNG")
        return Reply(
            _json(
                {
                    "created": int(time.time()),
                    "data": [{"b64_json": base64.b64encode(encoded.getvalue()).decode()}],
                }
            )
        )
