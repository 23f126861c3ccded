"""Agent specs -> managed agents: `provider:model`, checked parameters, and third-party providers.

Specs: `openai:gpt-4o`, `anthropic:claude-sonnet-4-5`, `gemini:gemini-2.5-pro`,
`ollama:llava:13b`, `vllm:Qwen/Qwen2-VL-7B-Instruct`, `vllm-offline:MODEL`,
`llamacpp:PATH.gguf` or `llamacpp:gemma3-270m`, `openai-compatible:MODEL@URL`, and the
non-LLM agents `perception` and `similarity[:EMBEDDER]`.
Every provider, built-in or not, arrives through the entry-point group
`bongard_agents.agents`, each entry point naming a `Provider` object.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from agents.cache import ReplyCache, ResponseCache
from agents.learned_rules import LearnedRule, LearnedRules, forget_command, workspace_rules
from agents.managed import ManagedAgent
from agents.model_families import DecodingRefused, Fitted, fit_decoding
from agents.pricing import Price, Pricing, batch_price, find_price
from agents.provider import AgentParams, Provider
from agents.retry import RetryPolicy
from agents.secrets import load_env_file
from datasets_io.errors import BongardError, did_you_mean
from datasets_io.plugins import Registry, UnknownName
from datasets_io.workspace import workspace_home

ENTRY_POINT_GROUP = "bongard_agents.agents"
CACHE_FILE = "cache.sqlite"
PROVIDERS: Registry[Provider] = Registry(ENTRY_POINT_GROUP, "provider", Provider)
AgentConfig = Mapping[str, Mapping[str, Any]]
"""Parameters by agent spec, `"*"` for every agent (see `read_agent_config`)."""


class AgentSpecError(BongardError, ValueError):
    """A spec or parameter that names no usable agent; the message lists the valid choices."""


def register_provider(provider: Provider) -> Provider:
    """Make a provider available by name (what the entry points do for packages)."""
    return PROVIDERS.register(provider.name, provider, source=provider.build.__module__)


def provider_names() -> list[str]:
    return sorted(PROVIDERS.names())


def get_provider(name: str) -> Provider:
    try:
        return PROVIDERS.get(name)
    except UnknownName:
        names = provider_names()
        raise AgentSpecError(
            f"unknown provider {name!r}{did_you_mean(name, names)}; providers: {', '.join(names)}"
        ) from None


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


def check_agent_params(
    spec: str,
    params: Mapping[str, Any] | None = None,
    *,
    config: AgentConfig | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> AgentParams:
    """The spec's parameters, checked against its provider's, without building anything.

    Parameters come from `defaults` (a paper's or a judge's decoding, less what the model's family
    refuses: `agents.model_families`), then the config file's `"*"` table, then its table for this
    spec, then `params` (e.g. `-M` options), later ones winning. An unknown key, a bad value or a
    key the model refuses is an `AgentSpecError` of one line naming the key and what it takes.
    """
    return _checked(spec, params, config, defaults)[2]


def check_agent(
    spec: str,
    params: Mapping[str, Any] | None = None,
    *,
    config: AgentConfig | None = None,
    defaults: Mapping[str, Any] | None = None,
    home: Path | None = None,
) -> list[str]:
    """Refuse in one line an agent that could not make a call here (a bad parameter, its provider's
    package not installed, no key), without building it; else each default of `defaults` the model's
    family cannot take or the model was learned to refuse (in the workspace at `home`), not sent,
    with why. A run calls it before it is stored."""
    load_env_file()
    provider, _, _, dropped = _checked(spec, params, config, defaults, workspace_rules(home), home)
    _check_ready(provider)
    return dropped


def dropped_decoding(
    spec: str,
    params: Mapping[str, Any] | None = None,
    *,
    config: AgentConfig | None = None,
    defaults: Mapping[str, Any] | None = None,
    home: Path | None = None,
) -> list[str]:
    """`check_agent` without its readiness: the parameters checked, each default the model's family
    cannot take named, whether or not its package is installed or its key set (a plan's check)."""
    return _checked(spec, params, config, defaults, workspace_rules(home), home)[3]


def _check_ready(provider: Provider) -> None:
    if not provider.installed():
        hint = f"pip install 'bongard-agents[{provider.extra}]'" if provider.extra else "install its package"
        raise AgentSpecError(f"provider {provider.name} is not installed: {hint}")
    if provider.key_set() is False:
        raise AgentSpecError(f"provider {provider.name} needs a key in one of: {', '.join(provider.key_env)}")


def shared_params(specs: Sequence[str], params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """`-M` parameters given once for agents of several providers: each spec gets the keys its
    provider takes; a key that none of them takes is refused (with a did-you-mean), and every
    spec's share is checked as `check_agent_params` does."""
    shares: dict[str, dict[str, Any]] = {}
    for spec in dict.fromkeys(specs):
        known = get_provider(split_spec(spec)[0]).params.model_fields
        shares[spec] = {key: value for key, value in params.items() if key in known}
    for key in params:
        if not any(key in share for share in shares.values()):
            check_agent_params(next(iter(shares)), {key: params[key]})  # raises, naming the key
    for spec, share in shares.items():
        check_agent_params(spec, defaults=share)  # keys and values; what the model takes, by the caller
    return shares


def _checked(
    spec: str,
    params: Mapping[str, Any] | None,
    config: AgentConfig | None,
    defaults: Mapping[str, Any] | None = None,
    rules: LearnedRules | None = None,
    home: Path | None = None,
) -> tuple[Provider, str, AgentParams, list[str]]:
    """The provider, model, checked parameters and decoding notes of `spec`; with `rules`, less what
    the model was learned to refuse (the workspace at `home`, named in the hint to forget it)."""
    provider_name, model = split_spec(spec)
    provider = get_provider(provider_name)
    chosen = {**(config or {}).get("*", {}), **(config or {}).get(spec, {}), **(params or {})}
    learned = rules.for_spec(spec) if rules is not None else []
    try:
        fitted = fit_decoding(provider_name, model, chosen, defaults or {})
        fitted = without_learned(fitted, chosen, learned, home)
    except DecodingRefused as error:
        raise AgentSpecError(str(error)) from None
    try:
        return provider, model, provider.params.model_validate(fitted.params), fitted.notes
    except ValidationError as error:
        problems = "; ".join(_param_problem(item, provider) for item in error.errors())
        raise AgentSpecError(f"{spec}: {problems}") from None


def without_learned(
    fitted: Fitted, chosen: Mapping[str, Any], learned: Sequence[LearnedRule], home: Path | None = None
) -> Fitted:
    """`fitted` less each key the model was learned to refuse: a default left out with a note, a key
    the user set refused in one line (as a key the family table names is)."""
    for rule in learned:
        if chosen.get(rule.key) is not None:
            raise DecodingRefused(
                f"{rule.note()}: drop -M {rule.key}, or `{forget_command(rule.spec, home)}` to try it again"
            )
    dropped = [rule for rule in learned if fitted.params.get(rule.key) is not None]
    if not dropped:
        return fitted
    notes = [f"{rule.key}={fitted.params[rule.key]!r} not sent: {rule.note()}" for rule in dropped]
    gone = {rule.key for rule in dropped}
    return Fitted({k: v for k, v in fitted.params.items() if k not in gone}, [*fitted.notes, *notes])


def _param_problem(item: ErrorDetails, provider: Provider) -> str:
    key = ".".join(map(str, item["loc"]))
    fields = list(provider.params.model_fields)
    if item["type"] == "extra_forbidden":
        return (
            f"unknown parameter {key!r}{did_you_mean(key, fields)}; {provider.name} takes {', '.join(fields)}"
        )
    choices = _literal_values(provider.params.model_fields[key].annotation) if key in fields else []
    if item["type"] == "literal_error" and choices:
        allowed = f"{', '.join(choices[:-1])} or {choices[-1]}" if len(choices) > 1 else choices[0]
        return f"bad agent parameter: {key} takes {allowed}, not {item['input']!r}"
    return f"bad agent parameter: {key}: {item['msg'].removeprefix('Value error, ')}"


def _literal_values(annotation: Any) -> list[str]:
    """The values a `Literal[...]` (or an optional one) allows; none for other types."""
    if get_origin(annotation) is Literal:
        return [str(value) for value in get_args(annotation)]
    return [value for part in get_args(annotation) for value in _literal_values(part)]


def resolve_agent(
    spec: str,
    params: Mapping[str, Any] | None = None,
    *,
    config: AgentConfig | None = None,
    cache: ReplyCache | None = None,
    use_cache: bool = True,
    retry_policy: RetryPolicy | None = None,
    home: Path | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> ManagedAgent:
    """A ready agent for a spec: parameters checked, provider built, limits, cache, retries and price
    attached. Parameters merge as in `check_agent_params`; the defaults left out are the agent's
    `dropped_decoding`."""
    load_env_file()
    rules = workspace_rules(home)
    provider, model, agent_params, dropped = _checked(spec, params, config, defaults, rules, home)
    _check_ready(provider)
    if agent_params.batch and provider.batches is None:
        with_batches = ", ".join(name for name in provider_names() if get_provider(name).batches is not None)
        raise AgentSpecError(f"{spec}: {provider.name} has no batch API (batch mode: {with_batches})")
    try:
        inner = provider.build(model, agent_params)
        endpoint = provider.endpoint(model, agent_params)
    except (ValueError, FileNotFoundError, RuntimeError) as error:
        raise AgentSpecError(f"{spec}: {error}") from None
    if use_cache and agent_params.cache and cache is None:
        cache = ResponseCache(workspace_home(home) / CACHE_FILE)
    return ManagedAgent(
        spec=spec,
        inner=inner,
        inner_factory=lambda fitted: provider.build(model, fitted),
        provider=provider,
        params=agent_params,
        price=billed_price(spec, agent_params),
        response_cache=cache if use_cache and agent_params.cache else None,
        retry_policy=retry_policy or RetryPolicy(),
        endpoint_url=endpoint,
        dropped_decoding=dropped,
        learned_rules=rules,
    )


def billed_price(spec: str, params: AgentParams) -> Pricing | None:
    """What a reply of this agent is billed: `agent_price`, at the batch price in batch mode."""
    price = agent_price(spec, params)
    return batch_price(price) if params.batch else price


def agent_price(spec: str, params: AgentParams) -> Pricing | None:
    """What a reply of this agent costs: its `-M price_input/price_output`, else its known price."""
    if params.price_input is not None and params.price_output is not None:
        return Price(params.price_input, params.price_output)
    return find_price(spec)
