"""Generator specs -> ready image generators: built-ins by name, others through entry points.

Specs: `shapes` (the offline test generator), `openai-images:MODEL`, `flux` or
`flux:MODEL_ID`. A package adds generators under the entry-point group
`bongard_agents.image_generators`, each entry point naming a `GeneratorProvider`.
Built-in modules are imported only when named, so their optional packages stay optional.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from agents.image_generators.base import GeneratorParams, GeneratorProvider, ImageGenerator
from agents.registry import AgentSpecError
from agents.secrets import load_env_file, redact
from datasets_io.errors import describe_validation_error
from datasets_io.plugins import PluginGroup

ENTRY_POINT_GROUP = "bongard_agents.image_generators"
BUILT_IN = {
    "shapes": "agents.image_generators.shapes",
    "openai-images": "agents.image_generators.http_images",
    "flux": "agents.image_generators.flux",
}


class GeneratorSpecError(AgentSpecError):
    """A spec or parameter that names no usable generator; the message says what to do."""


_extra_generators: dict[str, GeneratorProvider] = {}
_plugins = PluginGroup(ENTRY_POINT_GROUP)


def register_generator(provider: GeneratorProvider) -> GeneratorProvider:
    """Make a generator available by name (what the entry points do for packages)."""
    _extra_generators[provider.name] = provider
    return provider


def _register_plugin(name: str, provider: Any) -> None:
    if isinstance(provider, GeneratorProvider):
        _extra_generators.setdefault(provider.name, provider)


def generator_names() -> list[str]:
    _plugins.load_once(_register_plugin)
    return [*BUILT_IN, *(name for name in _extra_generators if name not in BUILT_IN)]


def get_generator_provider(name: str) -> GeneratorProvider:
    _plugins.load_once(_register_plugin)
    if name in _extra_generators:
        return _extra_generators[name]
    if name not in BUILT_IN:
        raise GeneratorSpecError(
            f"unknown image generator {name!r}; generators: {', '.join(generator_names())}"
        )
    provider: GeneratorProvider = importlib.import_module(BUILT_IN[name]).PROVIDER
    return provider


def split_generator_spec(spec: str) -> tuple[GeneratorProvider, str]:
    """`name:model` -> (its provider, model); a name with a default model may stand alone."""
    name, separator, model = spec.partition(":")
    provider = get_generator_provider(name)
    chosen = model if separator else provider.default_model
    if not chosen:
        raise GeneratorSpecError(f"image generator spec {spec!r} needs a model: {name}:MODEL")
    return provider, chosen


def parse_generator_params(values: Mapping[str, Any] | None) -> GeneratorParams:
    try:
        return GeneratorParams.model_validate(dict(values or {}))
    except ValidationError as error:
        raise GeneratorSpecError(
            f"bad image generator parameter: {describe_validation_error(error)}"
        ) from None


def resolve_generator(spec: str, params: Mapping[str, Any] | None = None) -> ImageGenerator:
    """A ready generator for a spec, after checking its packages are installed and its key is set."""
    load_env_file()
    provider, model = split_generator_spec(spec)
    generator_params = parse_generator_params(params)
    if not provider.installed():
        hint = f"pip install 'bongard-agents[{provider.extra}]'" if provider.extra else "install its package"
        needs = ", ".join(provider.requires)
        raise GeneratorSpecError(f"image generator {provider.name} needs {needs}, not installed: {hint}")
    if provider.key_missing(generator_params):
        names = ", ".join(provider.keys_needed(generator_params))
        raise GeneratorSpecError(f"image generator {provider.name} needs a key in one of: {names}")
    try:
        generator = provider.build(model, generator_params)
    except (ValueError, FileNotFoundError, RuntimeError) as error:
        raise GeneratorSpecError(f"{spec}: {redact(str(error))}") from None
    if not isinstance(generator, ImageGenerator):
        raise GeneratorSpecError(
            f"{spec}: {provider.name}.build returned {type(generator).__name__}, no generator"
        )
    return generator
