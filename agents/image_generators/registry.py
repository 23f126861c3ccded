"""Generator specs -> ready image generators: built-ins by name, others through entry points.

Specs: `shapes` (the offline test generator), `openai-images:MODEL`, `flux` or
`flux:MODEL_ID`. Every generator, built-in or not, arrives through the entry-point group
`bongard_agents.image_generators`, each entry point naming a `GeneratorProvider`; a module
is imported only when its generator is named, so its optional packages stay optional.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from agents.image_generators.base import GeneratorParams, GeneratorProvider, ImageGenerator
from agents.registry import AgentSpecError
from agents.secrets import load_env_file, redact
from datasets_io.errors import describe_validation_error, did_you_mean
from datasets_io.plugins import Registry, UnknownName

ENTRY_POINT_GROUP = "bongard_agents.image_generators"
GENERATORS: Registry[GeneratorProvider] = Registry(ENTRY_POINT_GROUP, "image generator", GeneratorProvider)


class GeneratorSpecError(AgentSpecError):
    """A spec or parameter that names no usable generator; the message says what to do."""


def register_generator(provider: GeneratorProvider) -> GeneratorProvider:
    """Make a generator available by name (what the entry points do for packages)."""
    return GENERATORS.register(provider.name, provider, source=provider.build.__module__)


def generator_names() -> list[str]:
    return sorted(GENERATORS.names())


def get_generator_provider(name: str) -> GeneratorProvider:
    try:
        return GENERATORS.get(name)
    except UnknownName:
        names = generator_names()
        raise GeneratorSpecError(
            f"unknown image generator {name!r}{did_you_mean(name, names)}; generators: {', '.join(names)}"
        ) from None


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
