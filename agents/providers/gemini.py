"""Google Gemini models through `langchain-google-genai` (the `google-genai` SDK underneath)."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage

from agents.batch_apis.gemini import GeminiBatches
from agents.images import ImageLimits
from agents.limits import RateLimits
from agents.model_families import family_of
from agents.provider import AgentParams, Provider

KEY_ENV = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
NO_SDK_RETRIES = 1
"""The Google SDK reads 0 as "its default"; 1 means a single attempt."""
GEMINI_BATCHES = GeminiBatches()


def build(model: str, params: AgentParams) -> BaseChatModel:
    """A Gemini chat model; in batch mode its calls go through Batch Mode (`agents.batching`), on a
    transport the SDK takes as its client's."""
    from langchain_google_genai import ChatGoogleGenerativeAI

    from agents.http_pool import batching_transport

    _keep_blocked_prompt_usage()
    key = next((os.environ[name] for name in KEY_ENV if os.environ.get(name)), None)
    settings: dict[str, Any] = {
        "model": model,
        "temperature": params.temperature,
        "max_output_tokens": params.max_tokens,
        "top_p": params.top_p,
        "seed": params.seed,
        "timeout": params.timeout_s,
        "max_retries": NO_SDK_RETRIES,
        "base_url": params.base_url,
        "google_api_key": key,
        "client_args": {"transport": batching_transport(params.base_url, GEMINI_BATCHES, params)}
        if params.batch
        else None,
    }
    chosen = {k: v for k, v in settings.items() if v is not None}
    family = family_of("gemini", model)
    chat = _ordered_chat() if family is not None and family.orders_properties else ChatGoogleGenerativeAI
    # temperature None when none is set: the integration's own default (0.7) would go out as if the
    # run had chosen it, where the protocol says "each API's defaults"
    return chat(**{**chosen, "temperature": params.temperature})


@cache
def _keep_blocked_prompt_usage() -> None:
    """A blocked prompt's reply (no candidate, `promptFeedback.blockReason`) keeps the prompt tokens
    Google bills for it: langchain-google-genai (4.4) reads its usage, then answers the empty reply
    without it, so the call's tokens and cost read as unknown. Its converter is wrapped once per
    process to put that usage back; every other reply passes through unchanged."""
    from langchain_google_genai import chat_models

    convert = chat_models._response_to_result

    def with_blocked_usage(response: Any, stream: bool = False, prev_usage: Any = None) -> Any:
        result = convert(response, stream, prev_usage)
        usage = response.usage_metadata
        if response.candidates or stream or usage is None or not usage.prompt_token_count:
            return result
        for generation in result.generations:
            if isinstance(generation.message, AIMessage):
                generation.message.usage_metadata = {
                    "input_tokens": usage.prompt_token_count,
                    "output_tokens": 0,
                    "total_tokens": usage.prompt_token_count,
                }
        return result

    chat_models._response_to_result = with_blocked_usage


SCHEMA_MAPS = ("properties", "$defs", "definitions")
"""Keys whose value maps names to schemas (not a schema itself)."""


def with_property_ordering(schema: Any) -> Any:
    """`schema` with each object's `propertyOrdering` set to its properties in their written order."""
    if isinstance(schema, list):
        return [with_property_ordering(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ordered = {
        key: {name: with_property_ordering(value) for name, value in value.items()}
        if key in SCHEMA_MAPS and isinstance(value, dict)
        else with_property_ordering(value)
        for key, value in schema.items()
    }
    if isinstance(properties := schema.get("properties"), dict):
        ordered["propertyOrdering"] = list(properties)
    return ordered


@cache
def _ordered_chat() -> type[BaseChatModel]:
    """The integration's chat model, sending `propertyOrdering` with every schema (Gemini 2.0 and
    earlier keep keys in order only when told; the integration sends none)."""
    from langchain_google_genai import ChatGoogleGenerativeAI

    class OrderedGemini(ChatGoogleGenerativeAI):
        def with_structured_output(self, schema: Any, *args: Any, **kwargs: Any) -> Any:
            return super().with_structured_output(with_property_ordering(schema), *args, **kwargs)

    return OrderedGemini


PROVIDER = Provider(
    name="gemini",
    summary="Google Gemini models (google-genai)",
    build=build,
    requires=("langchain_google_genai",),
    extra="gemini",
    key_env=KEY_ENV,
    # Gemini API: 3,000 images a prompt, 7 MB each inline, and a whole request of at most 20 MB
    image_limits=ImageLimits(
        max_images=3000, max_bytes_per_image=7 * 1024 * 1024, max_total_bytes=20 * 1024 * 1024
    ),
    rate_limits=RateLimits(concurrency=8),
    structured_method="json_schema",
    batches=GEMINI_BATCHES,
)
