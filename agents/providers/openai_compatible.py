"""Any server speaking the OpenAI chat-completions protocol: `openai-compatible:MODEL@URL`."""

from __future__ import annotations

import os

from langchain_core.language_models import BaseChatModel

from agents.provider import AgentParams, Provider
from agents.providers.openai import OPENAI_IMAGE_LIMITS
from agents.providers.openai_wire import wire_chat_model

KEY_ENV = "OPENAI_COMPATIBLE_API_KEY"
NO_KEY = "not-needed"


def split_model_url(model: str) -> tuple[str, str | None]:
    """`MODEL@URL` -> (MODEL, URL); a bare MODEL leaves the URL to `-M base_url=...`."""
    name, separator, url = model.rpartition("@")
    return (name, url) if separator and name else (model, None)


def base_url(model: str, params: AgentParams) -> str:
    """The server named in the spec, else the one in `-M base_url=...`."""
    url = split_model_url(model)[1] or params.base_url
    if not url:
        raise ValueError("openai-compatible needs a server: MODEL@URL or -M base_url=URL")
    return url


def build(model: str, params: AgentParams) -> BaseChatModel:
    name = split_model_url(model)[0]
    return wire_chat_model(
        name, params, base_url=base_url(model, params), api_key=os.environ.get(KEY_ENV) or NO_KEY
    )


PROVIDER = Provider(
    name="openai-compatible",
    summary="any OpenAI-compatible server: openai-compatible:MODEL@http://host:port/v1",
    build=build,
    image_limits=OPENAI_IMAGE_LIMITS,
    endpoint=base_url,
    structured_method="json_schema",
)
