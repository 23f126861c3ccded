"""The contract every text-to-image generator meets, its parameters, and its registry entry.

The Render step of the Bongard-RWR+ pipeline only needs "this positive prompt,
not that negative prompt, this seed, this size -> an image", so a generator is
that one async method; a local diffusion pipeline, an HTTP API and the offline
test generator all fit behind it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from agents.secrets import key_is_set, redact
from datasets_io.errors import BongardError

DEFAULT_SIZE = 512
"""The side of the square images Bongard-RWR+ renders (Sec. 3.1)."""


class GeneratorError(BongardError, RuntimeError):
    """A generator failed to make an image: the message names the generator and the cause.

    The text is scrubbed of secret values here, once, so no generator can leak a
    key a server echoed back.
    """

    def __init__(self, generator: str, problem: str) -> None:
        self.generator = generator
        super().__init__(redact(f"{generator}: {problem}"))


@runtime_checkable
class ImageGenerator(Protocol):
    """Renders one image from a positive and a negative prompt."""

    spec: str
    """The canonical `name:model` this generator was resolved from."""

    async def generate(
        self, positive: str, negative: str, *, seed: int, size: int = DEFAULT_SIZE
    ) -> Image.Image:
        """An RGB image of `size` x `size` showing `positive` and steering away from `negative`."""
        ...


class GeneratorParams(BaseModel):
    """Parameters of one generator (`-M key=value` or a config table).

    A generator reads the fields it understands; keys no field names are kept in
    `model_extra` for third-party generators.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    base_url: str | None = None
    timeout_s: float = Field(default=300.0, gt=0)
    """Per attempt; image models are slower than chat models."""
    steps: int | None = Field(default=None, ge=1)
    guidance: float | None = Field(default=None, ge=0)
    true_cfg: float | None = Field(default=None, ge=1)
    """Strength of the negative prompt where the generator runs true classifier-free guidance."""
    device: str | None = None
    dtype: str | None = None
    cpu_offload: bool = False
    concurrency: int | None = Field(default=None, ge=1)
    requests_per_minute: float | None = Field(default=None, gt=0)
    max_attempts: int = Field(default=8, ge=1)
    max_total_s: float = Field(default=600.0, gt=0)

    def extra(self, key: str, default: Any = None) -> Any:
        return (self.model_extra or {}).get(key, default)


GeneratorFactory = Callable[[str, GeneratorParams], ImageGenerator]
KeyRule = Callable[[GeneratorParams], tuple[str, ...]]


@dataclass(frozen=True)
class GeneratorProvider:
    """A registered generator kind. `build(model, params)` returns a ready `ImageGenerator`."""

    name: str
    summary: str
    build: GeneratorFactory
    requires: tuple[str, ...] = ()
    """Importable modules its extra installs."""
    extra: str | None = None
    key_env: tuple[str, ...] = ()
    """Every environment variable it may read a key from (for listings)."""
    key_rule: KeyRule | None = None
    """The variables, one of which must be set, for given parameters (a local server may need
    none); without a rule every use needs one of `key_env`."""
    default_model: str | None = None
    """The model meant by the name alone (`flux` for `flux:black-forest-labs/FLUX.1-dev`)."""

    def installed(self) -> bool:
        return all(importlib.util.find_spec(module) is not None for module in self.requires)

    def keys_needed(self, params: GeneratorParams) -> tuple[str, ...]:
        return self.key_rule(params) if self.key_rule is not None else self.key_env

    def key_missing(self, params: GeneratorParams) -> bool:
        needed = self.keys_needed(params)
        return bool(needed) and not any(key_is_set(name) for name in needed)
