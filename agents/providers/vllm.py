"""vLLM's OpenAI-compatible server: reached at `-M base_url=...`, or started with `vllm serve`.

Starting needs vLLM installed (extra `vllm`) and, in practice, a GPU. Per-model
serve arguments: `-M max_model_len=8192`, `-M images_per_prompt=12`,
`-M tensor_parallel_size=2`, `-M chat_template=PATH`.
"""

from __future__ import annotations

import importlib.util
import json
import shutil

from langchain_core.language_models import BaseChatModel

from agents.limits import RateLimits
from agents.provider import AgentParams, Provider
from agents.providers.openai import OPENAI_IMAGE_LIMITS, openai_chat_model
from agents.servers import LOOPBACK, LocalServer, shared_server
from datasets_io.workspace import workspace_home

STARTUP_TIMEOUT_S = 1800.0
SERVE_FLAGS = {
    "max_model_len": "--max-model-len",
    "tensor_parallel_size": "--tensor-parallel-size",
    "chat_template": "--chat-template",
    "gpu_memory_utilization": "--gpu-memory-utilization",
}


def serve_argv(model: str, params: AgentParams, port: int) -> list[str]:
    executable = shutil.which("vllm") or "vllm"
    argv = [executable, "serve", model, "--host", LOOPBACK, "--port", str(port)]
    for key, flag in SERVE_FLAGS.items():
        if params.extra(key) is not None:
            argv += [flag, str(params.extra(key))]
    if params.extra("images_per_prompt") is not None:
        argv += ["--limit-mm-per-prompt", json.dumps({"image": int(params.extra("images_per_prompt"))})]
    if params.seed is not None:
        argv += ["--seed", str(params.seed)]
    return argv


def build(model: str, params: AgentParams) -> BaseChatModel:
    if params.base_url:
        return openai_chat_model(model, params, api_key="not-needed")
    if importlib.util.find_spec("vllm") is None:
        raise RuntimeError(
            "vLLM is not installed here: install the `vllm` extra on a GPU machine, "
            "or give -M base_url=URL of a running vLLM server"
        )
    key = ("vllm", model, *(f"{k}={v}" for k, v in sorted((params.model_extra or {}).items())))
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
    return openai_chat_model(model, params, base_url=f"{server.url}/v1", api_key="not-needed")


PROVIDER = Provider(
    name="vllm",
    summary="vLLM: a running server (-M base_url=...) or `vllm serve` started here (GPU)",
    build=build,
    requires=("langchain_openai",),
    extra="vllm",
    image_limits=OPENAI_IMAGE_LIMITS,
    rate_limits=RateLimits(concurrency=32),
    structured_method="json_schema",
)
