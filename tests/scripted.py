"""A scripted agent that records every request and replies as each test scripts it: for call-structure tests.

It is a LangChain chat model registered as a non-LLM provider, so it receives
each call's `CallSpec` (task kind, schema, the panels behind every image) and
the messages exactly as the strategy built them, images still as paths.

A test feeds it `replies`: a function of the request, a queue consumed in order,
or functions (or fixed replies) keyed by the schema class they answer. A reply is
a string, a dict or a pydantic instance (sent as JSON). Without a scripted reply,
a call with an output schema gets a valid instance of that schema built by
polyfactory, seeded by the request so it is the same on every run; a call without
one gets a short text by task kind.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from polyfactory.factories.base import BaseFactory
from polyfactory.factories.pydantic_factory import ModelFactory
from pydantic import BaseModel, ConfigDict

from agents.call import CallSpec
from agents.managed import ManagedAgent
from agents.provider import AgentParams, Provider


@dataclass
class Request:
    messages: list[BaseMessage]
    call: CallSpec

    @property
    def images(self) -> list[list[str]]:
        return [[panel.ref for panel in image.panels] for image in self.call.images]

    def text(self) -> str:
        """The text of the last message, as the agent reads it."""
        content = self.messages[-1].content
        if isinstance(content, str):
            return content
        return "\n".join(str(b["text"]) for b in content if isinstance(b, dict) and b.get("type") == "text")

    def image_paths(self) -> list[str]:
        return [
            str(block["path"])
            for message in self.messages
            for block in (message.content if isinstance(message.content, list) else [])
            if isinstance(block, dict) and block.get("type") == "image"
        ]

    def summary(self) -> str:
        """The request in one line, for failure messages."""
        schema = self.call.output_schema
        if isinstance(schema, dict):
            name = str(schema.get("title", "a JSON schema"))
        else:
            name = "none" if schema is None else schema.__name__
        return f"a {self.call.task!r} call (schema {name}, images {self.images}, extra {self.call.extra})"


class ScriptError(AssertionError):
    """A request the script has no reply for: a test failure (the agent layer reports it with the agent)."""


Reply: TypeAlias = str | Mapping[str, Any] | BaseModel
"""One scripted reply: text as is, a dict or a pydantic instance as JSON."""
ReplyFunction: TypeAlias = Callable[[Request], Reply]
SchemaReplies: TypeAlias = dict[type[BaseModel], Reply | ReplyFunction]
"""Replies keyed by the schema class they answer: a fixed reply or a function of the request."""
Replies: TypeAlias = ReplyFunction | Sequence[Reply] | Mapping[type[BaseModel], Reply | ReplyFunction]
"""A function of the request, a queue consumed in order, or replies keyed by schema class."""


def default_text(request: Request) -> str:
    """The reply to a call without an output schema: a short text by task kind."""
    task = request.call.task
    if task == "describe":
        return f"described {request.images[-1]}"
    if task == "compare":
        return f"compared {request.images[-2:]}"
    if task == "answer":
        return "Left: scripted left rule\nRight: scripted right rule"
    return "scripted reply"


_factories: dict[type[BaseModel], type[BaseFactory[Any]]] = {}
_factory_lock = threading.Lock()  # the factories share one Faker: seed and build one reply at a time


def request_seed(request: Request) -> int:
    """A seed that depends on what was asked (task, schema, panels, details), not on when."""
    call = request.call
    schema = call.output_schema
    name = schema.__name__ if isinstance(schema, type) else None
    key = json.dumps([call.task, name, request.images, call.extra], sort_keys=True, default=str)
    return zlib.crc32(key.encode())


def schema_instance(schema: type[BaseModel], seed: int) -> BaseModel:
    """A valid instance of `schema`, the same for the same seed."""
    with _factory_lock:
        factory = _factories.get(schema)
        if factory is None:
            factory = _factories[schema] = ModelFactory.create_factory(schema)
        factory.seed_random(seed)
        built: BaseModel = factory.build()
        return built


def default_reply(request: Request) -> str:
    """A valid instance of the requested schema; for a call without a schema, a short text by task kind."""
    schema = request.call.output_schema
    if schema is None:
        return default_text(request)
    if isinstance(schema, dict):
        raise ScriptError(f"no default reply to a JSON-schema dict: script {request.summary()}")
    return schema_instance(schema, request_seed(request)).model_dump_json()


def as_text(reply: Reply) -> str:
    if isinstance(reply, str):
        return reply
    if isinstance(reply, BaseModel):
        return reply.model_dump_json()
    return json.dumps(dict(reply))


def by_schema(replies: Mapping[type[BaseModel], Reply | ReplyFunction]) -> ReplyFunction:
    """Replies keyed by the schema class they answer; every other call gets the default reply."""

    def reply(request: Request) -> Reply:
        schema = request.call.output_schema
        given = replies.get(schema) if isinstance(schema, type) else None
        if given is None:
            return default_reply(request)
        return given(request) if callable(given) else given

    return reply


class Script:
    """What one scripted agent answers, request by request (safe for calls made in parallel)."""

    def __init__(self, agent: str, replies: Replies | None = None) -> None:
        self.agent = agent
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._reply: ReplyFunction
        if replies is None:
            self._reply = default_reply
        elif isinstance(replies, Mapping):
            self._reply = by_schema(replies)
        elif isinstance(replies, str):
            raise TypeError("replies: a function, a list of replies, or replies keyed by schema class")
        elif isinstance(replies, Sequence):
            self._queue.extend(replies)
            self._reply = self._next_queued
        else:
            self._reply = replies

    def _next_queued(self, request: Request) -> Reply:
        with self._lock:
            if not self._queue:
                raise ScriptError(f"{self.agent} has no scripted reply left for {request.summary()}")
            return self._queue.popleft()

    def __call__(self, request: Request) -> str:
        return as_text(self._reply(request))


class RequestLog(list[Request]):
    """The requests a scripted model received (a class of its own, so pydantic keeps the reference)."""


class ScriptedChatModel(BaseChatModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    requests: RequestLog
    script: Script = Script("scripted")

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        request = Request(list(messages), kwargs["call"])
        self.requests.append(request)
        text = self.script(request)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


@dataclass
class ScriptedAgent:
    """A managed scripted agent, what it answers, and the requests it received."""

    spec: str = "scripted:recorder"
    replies: Replies | None = None
    requests: RequestLog = field(default_factory=RequestLog)
    script: Script = field(init=False)

    def __post_init__(self) -> None:
        self.script = Script(self.spec, self.replies)

    def managed(self, params: AgentParams | None = None) -> ManagedAgent:
        model = ScriptedChatModel(requests=self.requests, script=self.script)
        provider = Provider(
            name="scripted", summary="records requests", build=lambda m, p: model, reads_call_metadata=True
        )
        return ManagedAgent(spec=self.spec, inner=model, provider=provider, params=params or AgentParams())
