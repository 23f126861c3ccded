"""Models served by a running Ollama server, through `langchain-ollama`."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from agents.limits import RateLimits
from agents.provider import AgentParams, Provider

DEFAULT_URL = "http://127.0.0.1:11434"


def base_url(model: str, params: AgentParams) -> str:
    """The server asked for, or Ollama's default one."""
    return params.base_url or DEFAULT_URL


def build(model: str, params: AgentParams) -> BaseChatModel:
    import httpx
    from langchain_ollama import ChatOllama

    settings: dict[str, Any] = {
        "model": model,
        "base_url": base_url(model, params),
        "temperature": params.temperature,
        "num_predict": params.max_tokens,
        "seed": params.seed,
        "top_p": params.top_p,
        # every connection kept alive (httpx keeps 20): the run's gate bounds them
        "client_kwargs": {
            "timeout": params.timeout_s,
            "limits": httpx.Limits(max_connections=None, max_keepalive_connections=None),
        },
    }
    return ChatOllama(**{key: value for key, value in settings.items() if value is not None})


PROVIDER = Provider(
    name="ollama",
    summary="a running Ollama server (-M base_url=..., default 127.0.0.1:11434)",
    build=build,
    requires=("langchain_ollama",),
    extra="ollama",
    rate_limits=RateLimits(concurrency=4),
    endpoint=base_url,
    structured_method="json_schema",
)
