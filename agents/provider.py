"""What the toolkit knows about a provider: how to build its chat model, what it takes, its limits.

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

from agents.batching import BatchProtocol
from agents.images import ImageLimits
from agents.limits import RateLimits
from agents.retry import MAX_RETRY_AFTER_S, is_retryable
from agents.secrets import key_is_set

SAMPLING_KEYS = ("temperature", "max_tokens", "seed", "top_p")
MAX_REPLY_CHARS = 262_144
"""Above any reply a token limit allows (64k tokens of about 4 characters): only a runaway reply,
megabytes of junk after its answer, is cut."""


class AgentParams(BaseModel):
    """Parameters every agent takes (`-M key=value` on the command line, or a config file).

    A provider that reads more declares a subclass with its own fields; an unknown key is
    refused, so a typo such as `temprature` cannot pass unnoticed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = Field(
        default=None, description="sampling temperature; 0 makes replies repeatable and cached"
    )
    max_tokens: int | None = Field(default=None, ge=1, description="longest reply, in tokens")
    seed: int | None = Field(default=None, description="sampling seed; a seeded request is cached")
    top_p: float | None = Field(default=None, description="nucleus sampling mass")
    timeout_s: float = Field(default=120.0, gt=0, description="seconds one attempt may take")
    max_retry_after_s: float = Field(
        default=MAX_RETRY_AFTER_S,
        ge=0,
        description="longest wait honoured when a server asks to retry later (Retry-After)",
    )
    max_reply_chars: int = Field(
        default=MAX_REPLY_CHARS,
        ge=1,
        description="longest reply kept, in characters; a longer one is cut there and says so",
    )
    base_url: str | None = Field(default=None, description="the server to talk to, instead of the default")
    concurrency: int | None = Field(
        default=None,
        ge=1,
        description="requests in flight at once (default: a run's --concurrency, else the provider's)",
    )
    requests_per_minute: float | None = Field(default=None, gt=0, description="request rate limit")
    tokens_per_minute: float | None = Field(default=None, gt=0, description="token rate limit")
    image_max_side: int | None = Field(
        default=1024,
        ge=0,
        description="longest image side in pixels after downscaling; 0 sends images as they are",
    )
    price_input: float | None = Field(default=None, ge=0, description="USD per million input tokens")
    price_output: float | None = Field(default=None, ge=0, description="USD per million output tokens")
    cache: bool = Field(default=True, description="read and write the response cache")
    batch: bool = Field(
        default=False,
        description="send calls through the provider's batch API, at its batch price: gathered across "
        "items, each resolved when its batch is done (openai, anthropic, gemini)",
    )
    batch_requests: int = Field(default=1000, ge=1, description="requests in one batch at the most")
    batch_wait_s: float = Field(
        default=5.0, ge=0, description="how long a batch's first request waits for others before it goes"
    )
    batch_poll_s: float = Field(
        default=30.0, gt=0, description="seconds between two looks at a batch in progress"
    )
    prompt_cache: bool | None = Field(
        default=None,
        description="mark the shared context (the system prompt, each call's turn and its images) for "
        "the provider's prompt cache, where it is asked for (Anthropic's cache_control); unset: where a "
        "problem's calls or attempts send it again",
    )
    reask_unparsed: bool = Field(
        default=False,
        description="re-ask once when a structured reply does not parse (no paper does: off, a broken "
        "reply is a wrong answer)",
    )

    @property
    def deterministic(self) -> bool:
        """Whether the same request should give the same reply, so it may be cached."""
        return self.temperature == 0 or self.seed is not None

    def own_settings(self) -> dict[str, Any]:
        """The provider's own parameters (a subclass's fields) that differ from their defaults, as JSON."""
        own = set(type(self).model_fields) - set(AgentParams.model_fields)
        return self.model_dump(mode="json", include=own, exclude_defaults=True)

    def request_sampling(self) -> dict[str, Any]:
        """The common sampling keys that are set, as an OpenAI-compatible request names them."""
        return {key: getattr(self, key) for key in SAMPLING_KEYS if getattr(self, key) is not None}

    def sampling(self) -> dict[str, Any]:
        """What decides the reply's content: the part of the parameters a cache key needs.

        The common sampling keys that are set, a re-ask and a reply limit other than the
        default (each changes the reply kept), and the provider's own settings (a model
        file, a context size, a distance).
        """
        chosen = self.request_sampling()
        reask = {"reask_unparsed": True} if self.reask_unparsed else {}
        cut = {"max_reply_chars": self.max_reply_chars} if self.max_reply_chars != MAX_REPLY_CHARS else {}
        return {**chosen, **reask, **cut, **self.own_settings()}


StructuredMethod = Literal["json_schema", "function_calling", "json_mode", "prompt"]
ChatModelFactory = Callable[[str, Any], BaseChatModel]
"""`build(model, params)`, `params` an instance of the provider's `params` class."""
EndpointRule = Callable[[str, Any], str | None]
"""`endpoint(model, params)`: the URL requests go to, once the model is built."""


def configured_base_url(model: str, params: AgentParams) -> str | None:
    """The endpoint of most providers: `-M base_url=...`, or None for the provider's default."""
    return params.base_url


@dataclass(frozen=True)
class GpuEngine:
    """An engine in the agent's own process, one per process and model, on the GPUs the process
    was given: a Ray worker asks Ray for `gpus(params)` and loads its engine before its first item,
    keeping it for the run."""

    gpus: Callable[[Any], int]
    """`gpus(params)`: the GPUs one engine takes (vLLM: its tensor parallelism)."""
    load: Callable[[Any], None]
    """`load(chat_model)`: make the process's engine for a chat model `build` returned, now."""


@dataclass(frozen=True)
class Provider:
    """A registered provider. `build(model, params)` returns its LangChain chat model."""

    name: str
    summary: str
    build: ChatModelFactory
    params: type[AgentParams] = AgentParams
    """The parameters it takes: `AgentParams` or a subclass adding the provider's own."""
    requires: tuple[str, ...] = ()
    """Importable modules its extra installs."""
    extra: str | None = None
    key_env: tuple[str, ...] = ()
    """Environment variables any one of which holds its key (none: no key needed)."""
    image_limits: ImageLimits = field(default_factory=ImageLimits)
    rate_limits: RateLimits = field(default_factory=RateLimits)
    """Defaults for agents that set no limits of their own."""
    endpoint: EndpointRule = configured_base_url
    """Which server an agent talks to: agents at one endpoint with the same limits share a gate."""
    retryable: Callable[[BaseException], bool] = is_retryable
    """Which failures are worth another attempt (default: rate limits, 5xx, timeouts, dropped links)."""
    structured_method: StructuredMethod | None = None
    """How to ask for structured output; None: the integration's own default."""
    strict_schemas: bool = False
    """OpenAI's structured outputs: `strict: true` for a schema inside the strict subset."""
    reads_call_metadata: bool = False
    """A non-LLM agent: gets the `CallSpec` and the original messages."""
    batches: BatchProtocol | None = None
    """Its batch API (`agents.batch_apis`); None: it has none, and `-M batch=true` is refused."""
    cache_breakpoints: bool = False
    """Its prompt cache is asked for with breakpoints in the request (Anthropic's `cache_control`,
    `agents.prompt_cache`); False: it caches repeated prefixes unasked, or has no cache."""
    deterministic: bool = False
    """Replies depend only on the request, whatever the parameters."""
    default_model: str | None = None
    """The model meant by the provider's name alone (`perception` for `perception:classical`)."""
    text_only: Callable[[Any], str | None] | None = None
    """`text_only(params)`: why the model reads no images (a request with one is refused at once,
    not retried against a server error), or None where it reads them; None: every model does."""
    needs_images: str | None = None
    """Why the agent cannot answer a call that shows no image (it measures images and reads no
    text); None: it reads text. A strategy's text-only roles refuse it before the run."""
    gpu_engine: GpuEngine | None = None
    """The model runs in the agent's own process, on GPUs (vLLM's offline engine); None: it runs
    elsewhere (an API, a server) or needs no GPU."""

    def installed(self) -> bool:
        return all(importlib.util.find_spec(module) is not None for module in self.requires)

    def engine_gpus(self, params: AgentParams) -> int:
        """The GPUs an agent with these parameters takes in its own process (0: none)."""
        return 0 if self.gpu_engine is None else self.gpu_engine.gpus(params)

    def key_set(self) -> bool | None:
        """True or False for providers that need a key; None for those that need none."""
        return any(key_is_set(name) for name in self.key_env) if self.key_env else None
