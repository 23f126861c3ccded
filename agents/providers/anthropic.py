"""Anthropic Claude models through `langchain-anthropic` (the `anthropic` SDK underneath)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from agents.batch_apis.anthropic import AnthropicBatches
from agents.images import ImageLimits
from agents.limits import RateLimits
from agents.provider import AgentParams, Provider

DEFAULT_MAX_TOKENS = 2048
ANTHROPIC_BATCHES = AnthropicBatches()


def build(model: str, params: AgentParams) -> BaseChatModel:
    """A `ChatAnthropic` whose async client uses the endpoint's HTTP pools (`agents.http_pool`).

    langchain-anthropic otherwise shares one process-wide pool, whose kept-alive
    connections belong to the first event loop that used them: a second loop in
    the same process (`bongard run --judges` judges in a new one) then fails with
    "Event loop is closed". The endpoint's pools are one per event loop. In batch mode the client
    sends the calls through Message Batches (`agents.batching`).
    """
    import anthropic
    from langchain_anthropic import ChatAnthropic

    from agents.http_pool import batching_client, endpoint_client

    settings: dict[str, Any] = {
        "model": model,
        "temperature": params.temperature,
        "max_tokens": params.max_tokens or DEFAULT_MAX_TOKENS,
        "top_p": params.top_p,
        "timeout": params.timeout_s,
        "max_retries": 0,
        "base_url": params.base_url,
    }
    chat = ChatAnthropic(**{key: value for key, value in settings.items() if value is not None})
    pooled = (
        batching_client(params.base_url, ANTHROPIC_BATCHES, params)
        if params.batch
        else endpoint_client(params.base_url, params.timeout_s)
    )
    chat.__dict__["_async_client"] = anthropic.AsyncClient(**chat._client_params, http_client=pooled)
    return chat


PROVIDER = Provider(
    name="anthropic",
    summary="Anthropic Claude models",
    build=build,
    requires=("langchain_anthropic",),
    extra="anthropic",
    key_env=("ANTHROPIC_API_KEY",),
    # Anthropic's vision guide: 100 images a request, 5 MB each as sent, 8000 px a side, and 2000 px
    # a side where a request has more than 20
    image_limits=ImageLimits(
        max_images=100,
        max_bytes_per_image=5 * 1024 * 1024,
        counts_base64=True,
        max_side=8000,
        many_images=(20, 2000),
    ),
    rate_limits=RateLimits(concurrency=8),
    structured_method="function_calling",
    cache_breakpoints=True,
    batches=ANTHROPIC_BATCHES,
)
