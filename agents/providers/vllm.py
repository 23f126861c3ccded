"""vLLM's OpenAI-compatible server: reached at `-M base_url=...`, or started with `vllm serve`.

Starting needs vLLM installed (extra `vllm`) and, in practice, a GPU. Per-model
serve arguments are `VllmParams`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil

from langchain_core.language_models import BaseChatModel
from pydantic import Field

from agents.limits import RateLimits
from agents.provider import AgentParams, Provider
from agents.providers.openai import OPENAI_IMAGE_LIMITS
from agents.providers.openai_wire import wire_chat_model
from agents.servers import LOOPBACK, LocalServer, shared_server
from datasets_io.workspace import workspace_home

KEY_ENV = "VLLM_API_KEY"
"""The key a server started with `vllm serve --api-key` (or with this variable set, which `vllm serve`
reads too) requires: sent when set, so one variable serves both ends; else any key will do."""
NO_KEY = "not-needed"
STARTUP_TIMEOUT_S = 1800.0
SERVE_FLAGS = {
    "max_model_len": "--max-model-len",
    "tensor_parallel_size": "--tensor-parallel-size",
    "chat_template": "--chat-template",
    "gpu_memory_utilization": "--gpu-memory-utilization",
}


class VllmEngineParams(AgentParams):
    """What vLLM's engine is built with, served or in-process."""

    max_model_len: int | None = Field(default=None, ge=1, description="context length, in tokens")
    tensor_parallel_size: int | None = Field(default=None, ge=1, description="GPUs the model is split across")
    gpu_memory_utilization: float | None = Field(
        default=None, gt=0, le=1, description="share of each GPU's memory the engine may take"
    )
    images_per_prompt: int | None = Field(default=None, ge=0, description="most images one request carries")


class VllmParams(VllmEngineParams):
    chat_template: str | None = Field(default=None, description="a chat template file instead of the model's")


def serve_argv(model: str, params: VllmParams, port: int) -> list[str]:
    executable = shutil.which("vllm") or "vllm"
    argv = [executable, "serve", model, "--host", LOOPBACK, "--port", str(port)]
    for key, flag in SERVE_FLAGS.items():
        if getattr(params, key) is not None:
            argv += [flag, str(getattr(params, key))]
    if params.images_per_prompt is not None:
        argv += ["--limit-mm-per-prompt", json.dumps({"image": params.images_per_prompt})]
    if params.seed is not None:
        argv += ["--seed", str(params.seed)]
    return argv


def base_url(model: str, params: VllmParams) -> str:
    """The server given with `-M base_url=...`, else a `vllm serve` started here on first need."""
    if params.base_url:
        return params.base_url
    if importlib.util.find_spec("vllm") is None:
        raise RuntimeError(
            "vLLM is not installed here: install the `vllm` extra on a GPU machine, "
            "or give -M base_url=URL of a running vLLM server"
        )
    key = ("vllm", model, *(f"{name}={value}" for name, value in sorted(params.own_settings().items())))
    log = workspace_home() / "servers" / f"vllm-{model.replace('/', '_')}.log"
    server = shared_server(
        key,
        lambda: LocalServer(
            "vLLM server",
            lambda port: serve_argv(model, params, port),
            log,
            startup_timeout_s=STARTUP_TIMEOUT_S,
        ),
    )
    return f"{server.url}/v1"


def build(model: str, params: VllmParams) -> BaseChatModel:
    key = os.environ.get(KEY_ENV) or NO_KEY
    return wire_chat_model(model, params, base_url=base_url(model, params), api_key=key)


PROVIDER = Provider(
    name="vllm",
    summary="vLLM: a running server (-M base_url=...) or `vllm serve` started here (GPU)",
    build=build,
    params=VllmParams,
    extra="vllm",
    image_limits=OPENAI_IMAGE_LIMITS,
    rate_limits=RateLimits(concurrency=32),
    endpoint=base_url,
    structured_method="json_schema",
)
