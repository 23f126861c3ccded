"""Agent specs -> managed agents: `provider:model`, parameters, and third-party providers.

Specs: `openai:gpt-4o`, `anthropic:claude-sonnet-4-5`, `gemini:gemini-2.5-pro`,
`ollama:llava:13b`, `vllm:Qwen/Qwen2-VL-7B-Instruct`, `vllm-offline:MODEL`,
`llamacpp:PATH.gguf` or `llamacpp:gemma3-270m`, `openai-compatible:MODEL@URL`, and the
non-LLM agents `perception` and `similarity[:EMBEDDER]`.
A package adds providers under the entry-point group `bongard_agents.agents`,
each entry point naming a `Provider` object.
"""

from __future__ import annotations

import importlib
import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agents.cache import ResponseCache
from agents.managed import ManagedAgent
from agents.pricing import Price, find_price
from agents.provider import AgentParams, Provider
from agents.retry import RetryPolicy
from agents.secrets import load_env_file
from datasets_io.errors import describe_validation_error
from datasets_io.plugins import PluginGroup
from datasets_io.workspace import workspace_home

ENTRY_POINT_GROUP = "bongard_agents.agents"
BUILT_IN = {
    "openai": "agents.providers.openai",
    "anthropic": "agents.providers.anthropic",
    "gemini": "agents.providers.gemini",
    "ollama": "agents.providers.ollama",
    "vllm": "agents.providers.vllm",
    "vllm-offline": "agents.providers.vllm_offline",
    "llamacpp": "agents.providers.llamacpp",
    "openai-compatible": "agents.providers.openai_compatible",
    "perception": "agents.providers.perception",
    "similarity": "agents.providers.similarity",
}
CACHE_FILE = "cache.sqlite"


class AgentSpecError(ValueError):
    """A spec or parameter that names no usable agent; the message lists the valid choices."""


_extra_providers: dict[str, Provider] = {}


def register_provider(provider: Provider) -> Provider:
    """Make a provider available by name (what the entry points do for packages)."""
    _extra_providers[provider.name] = provider
    return provider


def provider_names() -> list[str]:
    _load_entry_points()
    return [*BUILT_IN, *(name for name in _extra_providers if name not in BUILT_IN)]


def get_provider(name: str) -> Provider:
    _load_entry_points()
    if name in _extra_providers:
        return _extra_providers[name]
    if name not in BUILT_IN:
        raise AgentSpecError(f"unknown provider {name!r}; providers: {', '.join(provider_names())}")
    provider: Provider = importlib.import_module(BUILT_IN[name]).PROVIDER
    return provider


_plugins = PluginGroup(ENTRY_POINT_GROUP)


def _register_plugin(name: str, provider: Any) -> None:
    if isinstance(provider, Provider):
        _extra_providers.setdefault(provider.name, provider)


def _load_entry_points() -> None:
    _plugins.load_once(_register_plugin)


def split_spec(spec: str) -> tuple[str, str]:
    """`provider:model` -> (provider, model); the model may itself contain colons. A provider
    with a default model (a non-LLM agent such as `perception`) may be named alone."""
    provider, separator, model = spec.partition(":")
    if not separator and provider in provider_names() and get_provider(provider).default_model:
        return provider, str(get_provider(provider).default_model)
    if not separator or not model:
        raise AgentSpecError(
            f"agent spec {spec!r} is not PROVIDER:MODEL; providers: {', '.join(provider_names())}"
        )
    return provider, model


def parse_params(values: Mapping[str, Any]) -> AgentParams:
    try:
        return AgentParams.model_validate(dict(values))
    except ValidationError as error:
        raise AgentSpecError(f"bad agent parameter: {describe_validation_error(error)}") from None


def read_agent_config(path: Path) -> dict[str, dict[str, Any]]:
    """A config file (TOML or JSON) mapping agent specs to parameters; `"*"` applies to all.

    ```toml
    ["*"]
    temperature = 0
    ["openai:gpt-4o"]
    max_tokens = 1024
    ```
    """
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise AgentSpecError(f"{path}: expected a table of agent specs, each with its parameters")
    return data


def resolve_agent(
    spec: str,
    params: Mapping[str, Any] | None = None,
    *,
    config: Mapping[str, Mapping[str, Any]] | None = None,
    cache: ResponseCache | None = None,
    use_cache: bool = True,
    retry_policy: RetryPolicy | None = None,
    home: Path | None = None,
) -> ManagedAgent:
    """A ready agent for a spec: provider built, limits, cache, retries and price attached.

    Parameters come from the config file's `"*"` table, then its table for this
    spec, then `params` (e.g. `-M` options), later ones winning.
    """
    load_env_file()
    provider_name, model = split_spec(spec)
    provider = get_provider(provider_name)
    merged: dict[str, Any] = {**(config or {}).get("*", {}), **(config or {}).get(spec, {}), **(params or {})}
    agent_params = parse_params(merged)
    if not provider.installed():
        hint = f"pip install 'bongard-agents[{provider.extra}]'" if provider.extra else "install its package"
        raise AgentSpecError(f"provider {provider_name} is not installed: {hint}")
    if provider.key_set() is False:
        raise AgentSpecError(f"provider {provider_name} needs a key in one of: {', '.join(provider.key_env)}")
    try:
        inner = provider.build(model, agent_params)
    except (ValueError, FileNotFoundError, RuntimeError) as error:
        raise AgentSpecError(f"{spec}: {error}") from None
    if use_cache and agent_params.cache and cache is None:
        cache = ResponseCache(workspace_home(home) / CACHE_FILE)
    return ManagedAgent(
        spec=spec,
        inner=inner,
        inner_factory=lambda: provider.build(model, agent_params),
        provider=provider,
        params=agent_params,
        price=_price(spec, agent_params),
        response_cache=cache if use_cache and agent_params.cache else None,
        retry_policy=retry_policy or RetryPolicy(),
    )


def _price(spec: str, params: AgentParams) -> Price | None:
    if params.price_input is not None and params.price_output is not None:
        return Price(params.price_input, params.price_output)
    return find_price(spec)
