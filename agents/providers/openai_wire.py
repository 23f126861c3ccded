"""The OpenAI chat-completions protocol spoken directly: the lean path for the servers we reach by URL.

`openai-compatible`, `vllm` and `llamacpp` talk to servers that are often local and fast, where the
client's own CPU per call sets the pace. Through `ChatOpenAI` and the `openai` SDK a call cost
about 2.2x the SDK alone measured here (`benchmarks.runs --sections speed`), nearly all of it in
building and parsing the request twice over. This chat model posts the body `ChatOpenAI` would post
(`tests/test_openai_wire.py` holds them equal, images and structured output included) on the
endpoint's kept-alive aiohttp session (`agents.wire_sessions`) and reads the reply itself.

Everything around the call stays in `agents.managed`, which uses `acomplete` when a model has it:
an HTTP error status comes back as an `APIStatusError` carrying the response, named as the SDK
names it, so retries, Retry-After, the circuit breaker and the messages a user reads are the same.
The `openai` provider keeps the SDK (`openai:MODEL -M base_url=URL` reaches any such server that
way too), and a user's own LangChain chat model is called through `ainvoke` as before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_function
from pydantic import Field, SecretStr

from agents.provider import AgentParams
from agents.strict_schemas import fits_strict
from agents.wire_sessions import endpoint_session, env_proxy

ROLES = {"system": "system", "human": "user", "ai": "assistant"}
STATUS_NAMES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}
"""The `openai` SDK's names for error statuses (5xx: InternalServerError), so a failure reads alike."""
_response_formats: dict[str, dict[str, Any] | None] = {}


@dataclass(frozen=True)
class ErrorReply:
    """What an error reply said: its status, headers (Retry-After) and body."""

    status_code: int
    headers: Mapping[str, str]
    text: str


class APIStatusError(RuntimeError):
    """A reply with an HTTP error status; `response` carries its status and headers (Retry-After)."""

    def __init__(self, response: ErrorReply) -> None:
        self.response = response
        self.status_code = response.status_code
        super().__init__(f"Error code: {response.status_code} - {_error_detail(response.text)}")


class ReplyCutOff(ConnectionError):
    """The connection closed before the reply's body was complete (a retryable dropped link)."""


_status_errors: dict[str, type[APIStatusError]] = {}


def status_error(response: ErrorReply) -> APIStatusError:
    """The error for an error reply, of a class named by its status."""
    status = response.status_code
    name = "InternalServerError" if status >= 500 else STATUS_NAMES.get(status, "APIStatusError")
    if name not in _status_errors:
        _status_errors[name] = type(name, (APIStatusError,), {"__module__": __name__})
    return _status_errors[name](response)


def _error_detail(text: str) -> str:
    """The server's own message (`{"error": {"message": ...}}`), else its text."""
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:500]
    error = data.get("error", data) if isinstance(data, dict) else data
    message = error.get("message") if isinstance(error, dict) else None
    return str(message if message is not None else error)[:500]


def openai_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Messages in the protocol's form. Text and prepared images (`agents.images`) are converted
    here, directly; anything else (tool calls, names, other blocks) by LangChain's own converter."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        direct = _plain(message)
        converted.append(direct if direct is not None else convert_to_openai_messages(message))
    return converted


def _plain(message: BaseMessage) -> dict[str, Any] | None:
    role = ROLES.get(message.type)
    if role is None or message.additional_kwargs or getattr(message, "tool_calls", None) or message.name:
        return None
    if isinstance(message.content, str):
        return {"role": role, "content": message.content}
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, str):
            parts.append({"type": "text", "text": block})
        elif block.get("type") == "text" and set(block) == {"type", "text"}:
            parts.append(block)
        elif block.get("type") == "image" and set(block) == {"type", "base64", "mime_type"}:
            url = f"data:{block['mime_type']};base64,{block['base64']}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            return None
    return {"role": role, "content": parts}


def response_format(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The `response_format` asking for JSON of `schema`, as `ChatOpenAI` builds it: strict where the
    schema fits the strict subset (`agents.strict_schemas`); None for a schema it cannot turn into
    one (no `properties`...), which the prompt then asks for."""
    key = json.dumps(schema, sort_keys=True)
    if key not in _response_formats:
        try:
            function = convert_to_openai_function(schema, strict=fits_strict(schema))
            function["schema"] = function.pop("parameters")
        except (KeyError, ValueError, TypeError):
            _response_formats[key] = None
        else:
            _response_formats[key] = {"type": "json_schema", "json_schema": function}
    return _response_formats[key]


class WireChatModel(BaseChatModel):
    """A chat model posting OpenAI chat-completions requests on the endpoint's shared pool."""

    model: str
    base_url: str
    api_key: SecretStr
    sampling: dict[str, Any] = Field(default_factory=dict)
    """The body's sampling fields, as the server reads them (`max_tokens`, `temperature`...)."""
    timeout_s: float | None = 120.0
    """Seconds a request may take; None: the caller bounds each attempt (a paced local server)."""

    @property
    def _llm_type(self) -> str:
        return "openai-wire"

    def constrains(self, schema: dict[str, Any]) -> bool:
        """Whether the server can be asked for `schema` itself (else the prompt asks for it)."""
        return response_format(schema) is not None

    async def acomplete(
        self,
        messages: Sequence[BaseMessage],
        schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
    ) -> AIMessage:
        """One request; with `schema`, constrained to JSON of that schema (the reply is not parsed here)."""
        body: dict[str, Any] = {"model": self.model, "stream": False, "messages": openai_messages(messages)}
        body.update(self.sampling)
        if stop:
            body["stop"] = stop
        if schema is not None:
            if (asked := response_format(schema)) is None:
                raise ValueError(
                    f"schema {schema.get('title')!r} cannot be a response format: ask in the prompt"
                )
            body["response_format"] = asked
        session, (proxy, proxy_auth) = await endpoint_session(self.base_url), env_proxy(self.base_url)
        async with session.post(
            f"{self.base_url.rstrip('/')}/chat/completions",
            data=json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(),
            headers={
                "authorization": f"Bearer {self.api_key.get_secret_value()}",
                "content-type": "application/json",
            },
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            proxy=proxy,
            proxy_auth=proxy_auth,
        ) as response:
            try:
                content = await response.read()
            except aiohttp.ClientPayloadError as error:  # its cause's message says how much came
                why = getattr(error.__cause__, "message", None) or str(error)
                raise ReplyCutOff(f"the connection closed before the reply was complete: {why}") from None
            if response.status >= 400:
                text = content.decode("utf-8", errors="replace")
                raise status_error(ErrorReply(response.status, response.headers, text))
        return _message(json.loads(content))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=await self.acomplete(messages, stop=stop))])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise NotImplementedError(
            "openai-wire models are asynchronous: use ainvoke (the toolkit always does)"
        )


def _message(data: dict[str, Any]) -> AIMessage:
    """The reply as LangChain's message, with the usage, finish reason and refusal the toolkit reads;
    a reply without usage has none (its tokens and cost unknown, never 0)."""
    try:
        choice = data["choices"][0]
        content = choice["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ValueError(f"the server's reply has no choices[0].message: {str(data)[:300]}") from None
    usage = data.get("usage")
    counts = (usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0) if usage else (0, 0)
    metadata = {"finish_reason": choice.get("finish_reason"), "model_name": data.get("model")}
    if isinstance(timings := data.get("timings"), dict):  # llama.cpp's: how fast it read and wrote
        metadata["timings"] = timings
    return AIMessage(
        content=content,
        response_metadata=metadata
        | ({"refusal": refusal} if (refusal := choice["message"].get("refusal")) else {}),
        usage_metadata={"input_tokens": counts[0], "output_tokens": counts[1], "total_tokens": sum(counts)}
        if usage
        else None,
    )


def wire_chat_model(model: str, params: AgentParams, *, base_url: str, api_key: str) -> WireChatModel:
    """The lean model for a server, the reply limit sent as `max_tokens`.

    Every OpenAI-compatible server reads `max_tokens` (vLLM, llama.cpp, lmdeploy, TGI, SGLang,
    LM Studio), and the papers' code sends it; `max_completion_tokens`, OpenAI's newer name for
    the same limit, is ignored by a server that knows only the older one (issue 33), so the reply
    would run to the server's own limit. OpenAI's API itself goes through `ChatOpenAI`.
    """
    return WireChatModel(
        model=model,
        base_url=base_url,
        api_key=SecretStr(api_key),
        sampling=params.request_sampling(),
        timeout_s=params.timeout_s,
    )
