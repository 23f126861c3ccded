"""Response shapes of the wire protocols the providers and image generators speak."""

from __future__ import annotations

import base64
import io
import json
import re
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from PIL import Image, ImageColor

from datasets_io.records import StopKind
from tests.standins.openai_body import body_problem
from tests.standins.server import Fault, FaultPolicy, Reply, StandInServer

TOKENS_IN = 11
TOKENS_OUT = 7


def _json(data: Any) -> list[bytes]:
    return [json.dumps(data).encode()]


OPENAI_DATED = r"(-\d{4}-\d{2}-\d{2})?"
OPENAI_EFFORTS = (
    (rf"o\d+(-mini|-pro|-preview)?{OPENAI_DATED}", ("low", "medium", "high")),
    (rf"gpt-5(-mini|-nano)?{OPENAI_DATED}", ("minimal", "low", "medium", "high")),
    (rf"gpt-5\.1(-mini|-nano)?{OPENAI_DATED}", ("none", "low", "medium", "high")),
    (rf"gpt-5\.([2-9]|\d\d+)(-mini|-nano)?{OPENAI_DATED}", ("none", "low", "medium", "high", "xhigh")),
    (rf"gpt-5(\.\d+)?-(pro|codex(-max|-mini)?){OPENAI_DATED}", ()),
)
"""The OpenAI API's reasoning models and the efforts each takes, as its API reference lists them
(empty: not checked here); gpt-5.1 and later default to effort none and take temperature and top_p
there. Written from the providers' pages apart from the toolkit's table, so that a wrong row there
shows here as a 400."""
OPENAI_SAMPLING_AT_NONE = re.compile(rf"gpt-5\.\d+(-mini|-nano)?{OPENAI_DATED}")
OPENAI_CHAT_REASONING = re.compile(r"gpt-5\.\d+-chat(-latest)?")
"""gpt-5.1-chat-latest and later: no temperature or top_p."""
CLAUDE_NO_SAMPLING = re.compile(r"claude-opus-(4-[7-9]|[5-9])")
"""Claude Opus 4.7 and later: temperature, top_p and top_k removed (the migration guide)."""
CLAUDE_ONE_SAMPLER = re.compile(r"claude-(opus-4-1|(opus|sonnet|haiku)-4-[5-9])")
"""Claude Opus 4.1 and the 4.5 models on: the Messages API refuses `temperature` together with `top_p`."""
GEMINI_3 = re.compile(r"gemini-3")


def _openai_error(message: str, param: str, code: str) -> Reply:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return Reply(_json({"error": error}), status=400)


def _openai_reasoning_refusal(model: str, body: Any) -> Reply | None:
    """What the OpenAI API refuses of a reasoning model's request: the old `max_tokens`, an effort
    the model does not take, and `temperature` / `top_p` except at effort none where it takes them."""
    efforts = next((taken for pattern, taken in OPENAI_EFFORTS if re.fullmatch(pattern, model)), None)
    if efforts is None:
        return None
    effort = body.get("reasoning_effort")
    if effort is not None and efforts and effort not in efforts:
        listed = ", ".join(f"'{value}'" for value in efforts)
        message = (
            f"Unsupported value: '{effort}' is not supported with the '{model}' model. "
            f"Supported values are: {listed}."
        )
        return _openai_error(message, "reasoning_effort", "unsupported_value")
    samples = OPENAI_SAMPLING_AT_NONE.fullmatch(model) is not None and effort in (None, "none")
    for key in ("max_tokens",) if samples else ("temperature", "top_p", "max_tokens"):
        if key in body:
            message = f"Unsupported parameter: '{key}' is not supported with this model."
            return _openai_error(message, key, "unsupported_parameter")
    return None


def _strict_schema_error(schema: Any, path: str = "root") -> str | None:
    """What OpenAI's strict structured outputs refuse in a schema: an object that does not require
    every property or does not set additionalProperties to false."""
    if isinstance(schema, list):
        return next((e for i, s in enumerate(schema) if (e := _strict_schema_error(s, f"{path}[{i}]"))), None)
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object":
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            return f"In context={path}, 'additionalProperties' is required to be supplied and to be false."
        if set(schema.get("required", [])) != set(properties):
            return f"In context={path}, 'required' is required to include every key in properties."
    children = [*schema.get("properties", {}).values(), *schema.get("$defs", {}).values()]
    children += [schema[key] for key in ("items", "anyOf") if key in schema]
    return _strict_schema_error(children, path)


def _openai_refusal(body: Any, refuses: Mapping[str, Collection[str]]) -> Reply | None:
    """The 400 the OpenAI API answers a request carrying what it refuses: a strict response format
    whose schema is outside the strict subset, what a reasoning model refuses, a chat model's
    `reasoning_effort`; `refuses`: keys each further model refuses (a model no table knows yet)."""
    asked = (body.get("response_format") or {}).get("json_schema") or {}
    if asked.get("strict") and (problem := _strict_schema_error(asked.get("schema"))):
        message = f"Invalid schema for response_format '{asked.get('name')}': {problem}"
        error = {"message": message, "type": "invalid_request_error", "param": "response_format"}
        return Reply(_json({"error": error}), status=400)
    model = str(body.get("model", ""))
    if (refused := _openai_reasoning_refusal(model, body)) is not None:
        return refused
    if model in refuses:
        keys = refuses[model]
    elif OPENAI_CHAT_REASONING.fullmatch(model):
        keys = ("temperature", "top_p")
    elif any(re.fullmatch(pattern, model) for pattern, _ in OPENAI_EFFORTS):
        keys = ()
    else:
        keys = ("reasoning_effort",)
    for key in keys:
        if key in body:
            message = f"Unsupported parameter: '{key}' is not supported with this model."
            return _openai_error(message, key, "unsupported_parameter")
    return None


MB = 1024 * 1024


def _blocks(body: Any, key: str = "messages", inner: str = "content") -> list[dict[str, Any]]:
    """Every content block of a chat body (a message's string content has none)."""
    return [
        block
        for message in body.get(key) or []
        if isinstance(message.get(inner), list)
        for block in message[inner]
        if isinstance(block, dict)
    ]


def _openai_body_refusal(body: Any) -> Reply | None:
    if (problem := body_problem(body)) is None:
        return None
    return Reply(_json({"error": {"message": problem, "type": "invalid_request_error"}}), status=400)


def _openai_image_refusal(body: Any) -> Reply | None:
    """OpenAI's vision limits: 500 images a request, a payload of 50 MB."""
    urls = [b["image_url"]["url"] for b in _blocks(body) if b.get("type") == "image_url"]
    problem = (
        f"Too many images in request: {len(urls)} > 500."
        if len(urls) > 500
        else f"Request payload exceeds 50 MB: {size} bytes."
        if (size := len(json.dumps(body))) > 50 * MB
        else None
    )
    if problem is None:
        return None
    return Reply(_json({"error": {"message": problem, "type": "invalid_request_error"}}), status=400)


def _anthropic_image_error(body: Any) -> str | None:
    """The Messages API's image limits: 100 a request, 5 MB each in base64, 8000 px a side, and
    2000 px a side in a request of more than 20."""
    images = [b["source"]["data"] for b in _blocks(body) if b.get("type") == "image"]
    if len(images) > 100:
        return f"messages: Too many images in request: {len(images)} > 100"
    limit = 2000 if len(images) > 20 else 8000
    for number, data in enumerate(images):
        if len(data) > 5 * MB:
            return f"image {number}: image exceeds 5 MB maximum: {len(data)} bytes > {5 * MB} bytes"
        with Image.open(io.BytesIO(base64.b64decode(data))) as image:
            if max(image.size) > limit:
                return (
                    f"image {number}: At least one of the image dimensions exceed max allowed size: "
                    f"{limit} pixels"
                )
    return None


GEMINI_SCHEMA_FIELDS = frozenset((
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
    "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf",
    "propertyOrdering", "default", "items", "minimum", "maximum",
))  # fmt: skip
"""The fields of the API's `Schema` message, what `responseSchema` may hold (its OpenAPI subset);
`responseJsonSchema` takes JSON Schema as it is."""


def _gemini_schema_error(schema: Any, path: str = "generation_config.response_schema") -> str | None:
    """The API's answer to a `responseSchema` naming a field its `Schema` message lacks."""
    if isinstance(schema, list):
        return next((e for s in schema if (e := _gemini_schema_error(s, path))), None)
    if not isinstance(schema, dict):
        return None
    if unknown := sorted(set(schema) - GEMINI_SCHEMA_FIELDS):
        return f"Invalid JSON payload received. Unknown name \"{unknown[0]}\" at '{path}': Cannot find field."
    children = [*schema.get("properties", {}).values(), *schema.get("anyOf", [])]
    children += [schema["items"]] if "items" in schema else []
    return _gemini_schema_error(children, path)


def _gemini_request_error(body: Any) -> str | None:
    """The Gemini API's limits: 3,600 images a prompt, a request of at most 20 MB; a `responseSchema`
    outside its `Schema` message."""
    if problem := _gemini_schema_error((body.get("generationConfig") or {}).get("responseSchema")):
        return problem
    images = [part for part in _blocks(body, "contents", "parts") if "inlineData" in part]
    if len(images) > 3600:
        return f"Too many images: {len(images)} > 3600."
    if (size := len(json.dumps(body))) > 20 * MB:
        return f"Request payload size exceeds the limit: {20 * MB} bytes (got {size})."
    return None


REFUSAL_TEXT = "I'm sorry, I can't help with that."
"""What a stand-in's refusal says (OpenAI's `refusal` field)."""


class OpenAIChat:
    """POST /v1/chat/completions (OpenAI, vLLM, llama.cpp, any OpenAI-compatible server); a
    reasoning model's request with a sampling parameter is refused as the OpenAI API refuses it.

    Finish forms (`StandInServer.finish_reason`): `stop`, `length`; `refusal` (the message's
    `refusal` field, no content, as structured outputs refuse); `content_filter` (no content).
    `usage=False`: replies without usage, as some OpenAI-compatible servers send them; `empty_usage`:
    replies whose usage is `{}`, as some gateways send it; `counts`: usage
    counted from the request and the reply (`tests.standins.token_counts`), not fixed;
    `cached_tokens`: input tokens each reply says OpenAI's automatic prompt cache served
    (`prompt_tokens_details`). Every body is checked against the openai SDK's own request types
    (`tests/standins/openai_body.py`): a key the API does not know, or a part of the wrong shape, is
    refused with its 400."""

    STOPS: ClassVar[Mapping[str, StopKind]] = {
        "length": "cut",
        "refusal": "refused",
        "content_filter": "blocked",
    }

    def __init__(
        self,
        usage: bool = True,
        counts: Callable[[Any, str], tuple[int, int]] | None = None,
        refuses: Mapping[str, Collection[str]] | None = None,
        empty_usage: bool = False,
        cached_tokens: int = 0,
    ) -> None:
        self.usage = usage
        self.counts = counts
        self.refuses = refuses or {}
        self.empty_usage = empty_usage
        self.cached_tokens = cached_tokens

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.endswith("/chat/completions")

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        refused = (
            _openai_body_refusal(body) or _openai_refusal(body, self.refuses) or _openai_image_refusal(body)
        )
        if refused is not None:
            return refused
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        if finish in ("refusal", "content_filter"):
            message["content"] = None
        if finish == "refusal":
            message["refusal"] = REFUSAL_TEXT
        tokens_in, tokens_out = (TOKENS_IN, TOKENS_OUT) if self.counts is None else self.counts(body, text)
        usage: dict[str, Any] = {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        }
        if self.cached_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": min(self.cached_tokens, tokens_in)}
        return Reply(
            _json(
                {
                    "id": "chatcmpl-standin",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "standin"),
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "stop" if finish == "refusal" else finish,
                        }
                    ],
                }
                | ({"usage": {} if self.empty_usage else usage} if self.usage else {})
            )
        )


def _anthropic_tokens(block: Any) -> int:
    """A content block's tokens: an image's width x height / 750 (Anthropic's vision guide), else a
    token per 4 characters of its JSON."""
    source = block.get("source") if isinstance(block, dict) and block.get("type") == "image" else None
    if isinstance(source, dict) and source.get("type") == "base64":
        with Image.open(io.BytesIO(base64.b64decode(source["data"]))) as image:
            return image.width * image.height // 750
    return len(json.dumps(block)) // 4


class AnthropicMessages:
    """POST /v1/messages; a forced tool is answered with a tool_use block holding the JSON; a Claude
    4.5+ request with both `temperature` and `top_p` is refused as the Messages API refuses it.

    Finish forms: `stop`, `length` (stop_reason max_tokens), `refusal` (stop_reason refusal, no
    content: Claude's classifiers stopped the reply). `cache_write`: input tokens each reply says it
    wrote to the prompt cache (`cache_creation_input_tokens`, counted in the input as the SDK counts
    them). `prompt_cache`: a prompt cache as Anthropic's prompt-caching guide describes it: the
    request up to each block marked `cache_control` is written (the marks themselves aside); the
    longest prefix written before, at any block boundary up to the last mark, is read
    (`cache_read_input_tokens`), the rest up to the last mark written, at a token a 4 bytes of JSON;
    prefixes under 1,024 tokens are not cached, and more than 4 marks are refused."""

    STOPS: ClassVar[Mapping[str, StopKind]] = {"length": "cut", "refusal": "refused"}
    MAX_BREAKPOINTS = 4
    MIN_CACHED_TOKENS = 1024

    def __init__(self, cache_write: int = 0, prompt_cache: bool = False) -> None:
        self.cache_write = cache_write
        self.prompt_cache = prompt_cache
        self.cached: set[str] = set()
        """The prefixes written to the cache so far."""

    def cache_usage(self, body: Any) -> tuple[int, int] | str:
        """(tokens read, tokens written) for a request, or why the API refuses its marks."""
        blocks: list[Any] = []
        system = body.get("system")
        blocks += (
            system if isinstance(system, list) else ([{"type": "text", "text": system}] if system else [])
        )
        for message in body.get("messages", []):
            content = message["content"]
            blocks += content if isinstance(content, list) else [{"type": "text", "text": content}]
        marks = [i for i, block in enumerate(blocks) if isinstance(block, dict) and "cache_control" in block]
        if len(marks) > self.MAX_BREAKPOINTS:
            most = self.MAX_BREAKPOINTS
            return f"A maximum of {most} blocks with cache_control may be provided. Found {len(marks)}."
        plain = [
            {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block
            for block in blocks
        ]
        tokens = [_anthropic_tokens(block) for block in plain]
        last = max(marks, default=-1)
        prefixes = [
            (json.dumps(plain[: i + 1], sort_keys=True), sum(tokens[: i + 1]), i) for i in range(last + 1)
        ]
        # a hit is looked for at every block boundary up to the last mark, as the guide says
        read = max((size for prefix, size, _ in prefixes if prefix in self.cached), default=0)
        written = [(p, size) for p, size, i in prefixes if i in marks and size >= self.MIN_CACHED_TOKENS]
        self.cached.update(p for p, _ in written)
        total = max((size for _, size in written), default=0)
        return read, max(total - read, 0)

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.endswith("/v1/messages")

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        model = str(body.get("model", ""))
        removed = [key for key in ("temperature", "top_p", "top_k") if key in body]
        if CLAUDE_NO_SAMPLING.match(model) and removed:
            message = f"`{removed[0]}` is deprecated for this model."
            error = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
            return Reply(_json(error), status=400)
        if CLAUDE_ONE_SAMPLER.match(model) and {"temperature", "top_p"} <= set(body):
            message = (
                "`temperature` and `top_p` cannot both be specified for this model. Please use only one."
            )
            error = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
            return Reply(_json(error), status=400)
        if (problem := _anthropic_image_error(body)) is not None:
            error = {"type": "error", "error": {"type": "invalid_request_error", "message": problem}}
            return Reply(_json(error), status=400)
        read, written = 0, self.cache_write
        if self.prompt_cache:
            usage = self.cache_usage(body)
            if isinstance(usage, str):
                error = {"type": "error", "error": {"type": "invalid_request_error", "message": usage}}
                return Reply(_json(error), status=400)
            read, written = usage
        choice = body.get("tool_choice") or {}
        content: list[dict[str, Any]] = []
        if finish == "refusal":
            stop = "refusal"
        elif choice.get("type") == "tool":
            content = [
                {"type": "tool_use", "id": "toolu_standin", "name": choice["name"], "input": json.loads(text)}
            ]
            stop = "max_tokens" if finish == "length" else "tool_use"
        else:
            content = [{"type": "text", "text": text}]
            stop = "max_tokens" if finish == "length" else "end_turn"
        return Reply(
            _json(
                {
                    "id": "msg_standin",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model"),
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": TOKENS_IN,
                        "output_tokens": TOKENS_OUT,
                        "cache_creation_input_tokens": written,
                        "cache_read_input_tokens": read,
                    },
                }
            )
        )


GEMINI_API_VERSIONS = "(?:v1|v1beta|v1alpha)"
"""The versions of the Gemini API that serve generateContent: google-genai 3.x posts to v1, 1.x-2.x
to v1beta; any other path is a 404 there, and so here."""


class GeminiGenerateContent:
    """POST /{v1,v1beta,v1alpha}/models/MODEL:generateContent.

    Finish forms: `stop`, `length` (MAX_TOKENS); `SAFETY`, `RECITATION`, `LANGUAGE`, `OTHER` and
    `MALFORMED_FUNCTION_CALL` (a candidate without content, ended for that reason); `prompt_blocked`
    (no candidate at all: the prompt was blocked, `promptFeedback.blockReason` SAFETY, usage for the
    prompt only). `usage=False`: no usageMetadata; `cached_tokens`: prompt tokens each reply says
    Gemini's implicit cache served (`cachedContentTokenCount`)."""

    STOPS: ClassVar[Mapping[str, StopKind]] = {
        "length": "cut",
        "SAFETY": "blocked",
        "RECITATION": "blocked",
        "LANGUAGE": "blocked",
        "OTHER": "blocked",
        "MALFORMED_FUNCTION_CALL": "cut",
        "prompt_blocked": "blocked",
    }
    EMPTY_FINISHES = ("SAFETY", "RECITATION", "LANGUAGE", "OTHER", "MALFORMED_FUNCTION_CALL")

    def __init__(self, usage: bool = True, cached_tokens: int = 0) -> None:
        self.usage = usage
        self.cached_tokens = cached_tokens
        self.warnings: list[str] = []
        """What Google's Gemini 3 guide warns of, for each request that does it: a temperature below
        1.0 (it may loop or degrade). The API answers such a request; a test reads the warnings."""

    def handles(self, method: str, path: str) -> bool:
        pattern = rf"/{GEMINI_API_VERSIONS}/models/[^/:]+:generateContent"
        return method == "POST" and re.fullmatch(pattern, urlsplit(path).path) is not None

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        if (problem := _gemini_request_error(body)) is not None:
            error = {"code": 400, "message": problem, "status": "INVALID_ARGUMENT"}
            return Reply(_json({"error": error}), status=400)
        temperature = (body.get("generationConfig") or {}).get("temperature")
        if GEMINI_3.search(path) and temperature is not None and temperature < 1:
            self.warnings.append(f"{urlsplit(path).path}: temperature {temperature} below Gemini 3's 1.0")
        usage = {
            "promptTokenCount": TOKENS_IN,
            "candidatesTokenCount": 0 if finish == "prompt_blocked" else TOKENS_OUT,
            "totalTokenCount": TOKENS_IN + (0 if finish == "prompt_blocked" else TOKENS_OUT),
        } | ({"cachedContentTokenCount": min(self.cached_tokens, TOKENS_IN)} if self.cached_tokens else {})
        candidate: dict[str, Any] = {
            "content": {"parts": [{"text": text}], "role": "model"},
            "finishReason": "MAX_TOKENS"
            if finish == "length"
            else finish
            if finish in self.EMPTY_FINISHES
            else "STOP",
            "index": 0,
        }
        if finish in self.EMPTY_FINISHES:
            del candidate["content"]
        reply: dict[str, Any] = {"modelVersion": "standin"}
        if finish == "prompt_blocked":
            reply["promptFeedback"] = {"blockReason": "SAFETY"}
        else:
            reply["candidates"] = [candidate]
        if self.usage:
            reply["usageMetadata"] = usage
        return Reply(_json(reply))


class OllamaChat:
    """POST /api/chat, streamed as NDJSON unless the request says `"stream": false`. Finish forms:
    `stop`, `length` (Ollama has no refusal or filter of its own)."""

    STOPS: ClassVar[Mapping[str, StopKind]] = {"length": "cut"}

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path == "/api/chat"

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        now = "2026-11-22T00:00:00Z"
        model = body.get("model")
        final = {
            "model": model,
            "created_at": now,
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": finish,
            "prompt_eval_count": TOKENS_IN,
            "eval_count": TOKENS_OUT,
        }
        if body.get("stream") is False:
            final["message"] = {"role": "assistant", "content": text}
            return Reply(_json(final))
        pieces = [text[i : i + 8] for i in range(0, len(text), 8)] or [""]
        lines = [
            json.dumps(
                {
                    "model": model,
                    "created_at": now,
                    "message": {"role": "assistant", "content": piece},
                    "done": False,
                }
            )
            for piece in pieces
        ]
        lines.append(json.dumps(final))
        return Reply([("\n".join(lines) + "\n").encode()], content_type="application/x-ndjson")


class OpenAIImages:
    """POST /v1/images/generations: one PNG of the requested size, as `b64_json`.

    The responder's text names the image's colour (`"#3366cc"`, `"red"`); any
    other text gives grey, so a test can tell which reply it decoded.
    """

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.endswith("/images/generations")

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        width, height = (int(side) for side in str(body.get("size", "256x256")).split("x"))
        try:
            colour = ImageColor.getrgb(text)
        except ValueError:
            colour = (128, 128, 128)
        encoded = io.BytesIO()
        Image.new("RGB", (width, height), colour).save(encoded, format="PNG")
        return Reply(
            _json(
                {
                    "created": int(time.time()),
                    "data": [{"b64_json": base64.b64encode(encoded.getvalue()).decode()}],
                }
            )
        )


class RawFileHost:
    """A download mirror: GET /HOST/PATH answers a file of a local folder, as `https://HOST/PATH`
    answers it upstream (GitHub's raw file host, OSF, Zenodo); `folders` maps each served
    `HOST/PATH` prefix to its folder (or to one file served at exactly that path), and anything
    else is a 404. A query string is ignored.
    `corrupt` names files (relative to their folder) served with their first byte changed; `cut`
    files whose body stops halfway (`cuts` is the server's fault policy for them, the connection
    closing as a dropped download's does)."""

    def __init__(self, folders: dict[str, Path]) -> None:
        self.folders = {
            "/" + prefix.partition("?")[0].strip("/") + "/": root for prefix, root in folders.items()
        }
        self.corrupt: set[str] = set()
        self.cut: set[str] = set()
        self.web_pages: set[str] = set()
        """Files answered with a web page instead (`text/html`, status 200), as Google Drive answers a
        file past its download quota."""
        self.web_page_type = "text/html; charset=utf-8"
        self.unsized: set[str] = set()
        """Files served with no Content-Length, their end told by the connection closing."""

    def _file(self, path: str) -> tuple[str, Path] | None:
        path = path.partition("?")[0]
        for prefix, root in self.folders.items():
            if root.is_file() and path.rstrip("/") + "/" == prefix:
                return root.name, root  # a URL naming a file by its folder (OSF's `.../ID/?zip=`)
            relative = path.removeprefix(prefix) if path.startswith(prefix) else None
            if relative and (root / relative).is_file():
                return relative, root / relative
        return None

    def _relative(self, path: str) -> str | None:
        found = self._file(path)
        return found[0] if found else None

    def handles(self, method: str, path: str) -> bool:
        return method == "GET" and self._file(path) is not None

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        found = self._file(path)
        assert found is not None
        relative, file = found
        if relative in self.web_pages:
            page = b"<!DOCTYPE html><html><title>Quota exceeded</title><p>Too many downloads.</p></html>"
            return Reply([page], content_type=self.web_page_type)
        data = file.read_bytes()
        if relative in self.corrupt:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        return Reply([data], content_type="application/octet-stream", sized=relative not in self.unsized)

    def cuts(self, server: StandInServer) -> FaultPolicy:
        return lambda index: (
            Fault(drop="mid-reply") if self._relative(server.requests[index].path) in self.cut else None
        )
