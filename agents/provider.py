"""What the toolkit knows about a provider: how to build its chat model and its limits.

A provider module stays short: it builds a LangChain chat model from a model
name and parameters. Retries, cache, limits, image preparation and accounting
happen around it in `agents.managed`, the same for every provider.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field

from agents.images import ImageLimits
from agents.limits import RateLimits
from agents.secrets import key_is_set


class AgentParams(BaseModel):
    """Parameters of one agent (`-M key=value` on the command line, or a config file).

    Keys a provider does not know are kept in `model_extra` for it to read
    (for example `mmproj` for llama.cpp or `tensor_parallel_size` for vLLM).
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    temperature: float | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    top_p: float | None = None
    timeout_s: float = Field(default=120.0, gt=0)
    base_url: str | None = None
    concurrency: int | None = Field(default=None, ge=1)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    image_max_side: int | None = Field(default=1024, ge=0)
    """Longest side images are scaled down to; 0 sends them as they are."""
    price_input: float | None = Field(default=None, ge=0)
    price_output: float | None = Field(default=None, ge=0)
    cache: bool = True

    @property
    def deterministic(self) -> bool:
        """Whether the same request should give the same reply, so it may be cached."""
        return self.temperature == 0 or self.seed is not None

    def extra(self, key: str, default: Any = None) -> Any:
        return (self.model_extra or {}).get(key, default)

    def sampling(self) -> dict[str, Any]:
        """What decides the reply's content: the part of the parameters a cache key needs."""
        keys = ("temperature", "max_tokens", "seed", "top_p")
        chosen = {key: getattr(self, key) for key in keys if getattr(self, key) is not None}
        return {**chosen, **{k: v for k, v in (self.model_extra or {}).items()}}


StructuredMethod = Literal["json_schema", "function_calling", "json_mode", "prompt"]
ChatModelFactory = Callable[[str, AgentParams], BaseChatModel]


@dataclass(frozen=True)
class Provider:
    """A registered provider. `build(model, params)` returns its LangChain chat model."""

    name: str
    summary: str
    build: ChatModelFactory
    requires: tuple[str, ...] = ()
    """Importable modules its extra installs."""
    extra: str | None = None
    key_env: tuple[str, ...] = ()
    """Environment variables any one of which holds its key (none: no key needed)."""
    image_limits: ImageLimits = field(default_factory=ImageLimits)
    rate_limits: RateLimits = field(default_factory=RateLimits)
    structured_method: StructuredMethod | None = None
    """How to ask for structured output; None: the integration's own default."""
    reads_call_metadata: bool = False
    """A non-LLM agent: gets the `CallSpec` and the original messages."""
    deterministic: bool = False
    """Replies depend only on the request, whatever the parameters."""
    default_model: str | None = None
    """The model meant by the provider's name alone (`perception` for `perception:classical`)."""

    def installed(self) -> bool:
        return all(importlib.util.find_spec(module) is not None for module in self.requires)

    def key_set(self) -> bool | None:
        """True or False for providers that need a key; None for those that need none."""
        return any(key_is_set(name) for name in self.key_env) if self.key_env else None
