"""Models served by a running Ollama server, through `langchain-ollama`.

Ollama cuts a prompt longer than its context window (`num_ctx`, 2048 or 4096 tokens by default,
whatever the model could take) from the front, silently: a multi-image Bongard request loses its
first panels and the model answers anyway; and it reloads the model whenever a request's `num_ctx`
differs from the last one's (ollama/ollama #9977). So a run gives each Ollama model one `num_ctx`,
sized before its first request from the largest of its rehearsed requests
(`graphs.experiments.contexts`), or `-M num_ctx=N`; a request that context cannot hold is refused
before it is sent, naming both sizes. Requests are measured by their text, their images by the
model family's published rule (`agents.image_tokens.open_weight_rule`) at the size they are sent,
and the reply's `num_predict`. Only an agent built without any `num_ctx` sizes each request alone.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from PIL import Image
from pydantic import Field

from agents.context_limit import ContextTooSmall
from agents.image_tokens import open_weight_rule
from agents.limits import RateLimits
from agents.local_reply_limit import local_reply_tokens
from agents.provider import AgentParams, Provider

DEFAULT_URL = "http://127.0.0.1:11434"
CHARS_PER_TOKEN = 3
"""Fewer characters per token than English averages, so a context sized by it is rather too large."""
MIN_CONTEXT = 4096
"""Ollama's own default on larger machines: a request is never given less."""
CONTEXT_STEP = 1024
REPLY_TOKENS = 1024
"""The reply's room a context is sized for where `-M max_tokens` sets none; the reply may use the
context's whole room left (up to the local reply limit), never more."""
MARGIN = 1.2


class OllamaParams(AgentParams):
    num_ctx: int | None = Field(
        default=None, ge=256, description="context window in tokens (default: sized to each request)"
    )
    tokens_per_image: int | None = Field(
        default=None,
        ge=1,
        description="tokens one image is counted as when sizing the context (default: by the model "
        "family's published rule, at the image's size)",
    )
    top_k: int | None = Field(default=None, ge=1, description="sample from the k likeliest tokens")
    repeat_penalty: float | None = Field(default=None, gt=0, description="penalty on repeated tokens")
    keep_alive: str | None = Field(
        default=None, description="how long the server keeps the model loaded after a request (e.g. 10m)"
    )


def text_tokens(characters: int) -> int:
    """An upper estimate of the tokens of a text of so many characters."""
    return math.ceil(characters / CHARS_PER_TOKEN)


def request_tokens(messages: Sequence[dict[str, Any]], image_tokens: Callable[[int, int], int]) -> int:
    """An upper estimate of a request's prompt tokens: its text, and each image by `image_tokens`
    of its size (Ollama's messages carry images as base64)."""
    text = sum(len(str(message.get("content") or "")) for message in messages)
    images = [image for message in messages for image in message.get("images") or []]
    return text_tokens(text) + sum(image_tokens(*_size(image)) for image in images)


def _size(image: str) -> tuple[int, int]:
    """An image's size from its base64 (its header only is decoded into pixels: none)."""
    with Image.open(io.BytesIO(base64.b64decode(image))) as opened:
        return opened.size


def image_counter(model: str, params: OllamaParams) -> Callable[[int, int], int]:
    """How an image of the model is counted: `-M tokens_per_image`, else its family's rule."""
    if params.tokens_per_image is not None:
        fixed = params.tokens_per_image
        return lambda width, height: fixed
    return open_weight_rule(model).tokens


def context_for(needed: int) -> int:
    """The context a request of `needed` tokens (reply included) is given: with a margin, in steps."""
    return max(MIN_CONTEXT, math.ceil(needed * MARGIN / CONTEXT_STEP) * CONTEXT_STEP)


def base_url(model: str, params: OllamaParams) -> str:
    """The server asked for, or Ollama's default one."""
    return params.base_url or DEFAULT_URL


def build(model: str, params: OllamaParams) -> BaseChatModel:
    import httpx
    from langchain_ollama import ChatOllama

    counted = image_counter(model, params)

    class SizedChatOllama(ChatOllama):
        """ChatOllama whose every request carries a `num_ctx` that holds it."""

        def _chat_params(
            self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any
        ) -> dict[str, Any]:
            request = super()._chat_params(messages, stop, **kwargs)
            prompt = request_tokens(request["messages"], counted)
            needed = prompt + (params.max_tokens or REPLY_TOKENS)
            options = dict(request.get("options") or {})
            if params.num_ctx is None:
                options["num_ctx"] = context_for(needed)
            elif needed > params.num_ctx:
                raise ContextTooSmall(
                    f"this request needs about {needed} tokens (reply included), more than -M "
                    f"num_ctx={params.num_ctx}; Ollama would cut it silently: raise num_ctx or leave it unset"
                )
            if params.max_tokens is None:  # Ollama's own: no limit, dropping the prompt's start when full
                room = int(options.get("num_ctx") or params.num_ctx or 0) - prompt
                options["num_predict"] = min(local_reply_tokens(params), room)
            return {**request, "options": options}

    settings: dict[str, Any] = {
        "model": model,
        "base_url": base_url(model, params),
        "temperature": params.temperature,
        "num_predict": params.max_tokens,
        "seed": params.seed,
        "top_p": params.top_p,
        "top_k": params.top_k,
        "repeat_penalty": params.repeat_penalty,
        "num_ctx": params.num_ctx,
        "keep_alive": params.keep_alive,
        # every connection kept alive (httpx keeps 20): the run's gate bounds them
        "client_kwargs": {
            "timeout": params.timeout_s,
            "limits": httpx.Limits(max_connections=None, max_keepalive_connections=None),
        },
    }
    return SizedChatOllama(**{key: value for key, value in settings.items() if value is not None})


PROVIDER = Provider(
    name="ollama",
    summary="a running Ollama server (-M base_url=..., default 127.0.0.1:11434)",
    build=build,
    params=OllamaParams,
    requires=("langchain_ollama",),
    extra="ollama",
    rate_limits=RateLimits(concurrency=4),
    endpoint=base_url,
    structured_method="json_schema",
)
