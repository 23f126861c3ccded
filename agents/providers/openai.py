"""OpenAI chat models through `langchain-openai` (the official `openai` SDK underneath)."""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import Field

from agents.batch_apis.openai import OpenAIBatches
from agents.images import ImageLimits
from agents.limits import RateLimits
from agents.provider import AgentParams, Provider

OPENAI_IMAGE_LIMITS = ImageLimits(
    max_images=500, max_bytes_per_image=20 * 1024 * 1024, max_total_bytes=50 * 1024 * 1024
)
"""OpenAI's vision guide: 500 images a request, a payload of at most 50 MB."""
OPENAI_BATCHES = OpenAIBatches()
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]


class OpenAIParams(AgentParams):
    reasoning_effort: ReasoningEffort | None = Field(
        default=None,
        description="how much a reasoning model (o-series, gpt-5) thinks before it answers; each "
        "family takes its own values (`bongard agents MODEL`), other models refuse it (unset: the API's "
        "default; none: no reasoning, a value only gpt-5.1 and later take)",
    )


def openai_chat_model(model: str, params: OpenAIParams, **overrides: Any) -> BaseChatModel:
    """A `ChatOpenAI` with the SDK's own retries off; shared by every OpenAI-protocol provider.

    Its HTTP client is the endpoint's (`agents.http_pool`): every connection kept alive, one pool
    per event loop. langchain-openai otherwise shares one process-wide client, bound to the first
    event loop that used it, whose pool keeps 20 connections alive.
    """
    from langchain_openai import ChatOpenAI

    from agents.http_pool import endpoint_client

    url = overrides.get("base_url", params.base_url)
    settings: dict[str, Any] = {
        "reasoning_effort": params.reasoning_effort,
        "model": model,
        "temperature": params.temperature,
        "max_completion_tokens": params.max_tokens,
        "seed": params.seed,
        "top_p": params.top_p,
        "timeout": params.timeout_s,
        "max_retries": 0,
        "base_url": params.base_url,
        "http_async_client": endpoint_client(url, params.timeout_s),
        **overrides,
    }
    return ChatOpenAI(**{key: value for key, value in settings.items() if value is not None})


def build(model: str, params: OpenAIParams) -> BaseChatModel:
    """OpenAI's chat model; in batch mode its requests go through the Batch API (`agents.batching`)."""
    if not params.batch:
        return openai_chat_model(model, params)
    from agents.http_pool import batching_client

    return openai_chat_model(
        model, params, http_async_client=batching_client(params.base_url, OPENAI_BATCHES, params)
    )


PROVIDER = Provider(
    name="openai",
    summary="OpenAI models (GPT-4o, GPT-4.1, o-series)",
    build=build,
    params=OpenAIParams,
    requires=("langchain_openai",),
    extra="openai",
    key_env=("OPENAI_API_KEY",),
    image_limits=OPENAI_IMAGE_LIMITS,
    rate_limits=RateLimits(concurrency=16),
    structured_method="json_schema",
    strict_schemas=True,
    batches=OPENAI_BATCHES,
)
