"""The one place where every call is prepared, limited, retried, cached and accounted.

`ManagedAgent` wraps any LangChain chat model (a provider's, a user's own, a
non-LLM agent) and is itself a chat model. Strategies call `acall`, which
returns an `AgentReply` with parsed output, tokens, cost, latency and whether
the cache served it; `ainvoke` works too for plain LangChain use.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, messages_to_dict
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, Field, PrivateAttr

from agents.breaker import CircuitBreaker, EndpointDown
from agents.cache import ReplyCache, cache_key
from agents.call import AgentReply, CallSpec, Usage, schema_json
from agents.call_events import EVENTS
from agents.images import ImageLimitError, ImagePolicy, count_images, prepare_messages
from agents.langchain_speedups import memoise_block_types
from agents.learned_rules import LEARNABLE, LearnedRule, LearnedRules, refused_key
from agents.limits import Endpoint, Limiter, RateLimits, endpoint_slot
from agents.pricing import Pricing
from agents.prompt_cache import with_cache_breakpoints
from agents.provider import AgentParams, Provider
from agents.retry import AttemptTimeout, RetryPolicy, error_chain, is_timeout, status_code, with_retries
from agents.secrets import redact, redact_value, secret_values
from agents.stops import reply_stop
from agents.strict_schemas import fits_strict
from agents.structured import (
    STOPPED_REPLY_ERRORS,
    OutputSchema,
    ReplyParseError,
    bounded,
    constrained_model,
    message_text,
    parse_message,
    reask_message,
    schema_instructions,
    stopped_reply,
)
from datasets_io.errors import BongardError, DatasetError
from datasets_io.records import OutputMode

memoise_block_types()  # LangChain derives them again for each content block of each call

CALL_KWARG = "call"
"""The keyword under which a non-LLM agent's `_agenerate` receives the `CallSpec`."""
CHARS_PER_TOKEN = 4
TOKENS_PER_IMAGE = 1000


REFUSED_REQUEST = frozenset({400, 413, 422})
"""Statuses that refuse the request itself (a parameter, a value, a size): sent again, unchanged, by
`--retry-errors`, it is refused again."""


class AgentCallError(BongardError, RuntimeError):
    """A call that failed for good (after retries, or at once for a non-retryable fault).
    `retryable`: whether sending the same request later can succeed (False where the service
    refused the request itself, `REFUSED_REQUEST`)."""

    def __init__(self, message: str, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


@runtime_checkable
class DirectChat(Protocol):
    """A chat model that sends the output schema itself (`agents.providers.openai_wire`): called
    without LangChain's runnable machinery, which cost more CPU per call than the request itself.
    Its reply is parsed here like any other."""

    async def acomplete(
        self,
        messages: Sequence[BaseMessage],
        schema: dict[str, Any] | None = None,
        stop: list[str] | None = None,
    ) -> AIMessage: ...

    def constrains(self, schema: dict[str, Any]) -> bool:
        """Whether `acomplete` can be given `schema` (else the prompt asks for it)."""
        ...


@runtime_checkable
class CallWatch(Protocol):
    """What sees each call the model is about to be paid for, and its reply: the experiment plan's
    rehearsal records the requests it would send; a budget stops a run before it overspends."""

    def before(self, messages: Sequence[BaseMessage], call: CallSpec) -> None:
        """Called before the request goes out; raising stops the call (and the run, if uncaught)."""
        ...

    def after(self, reply: AgentReply) -> None: ...


@dataclass
class _LoopModels:
    chat: BaseChatModel
    direct: DirectChat | None = None
    """The chat model again where it is a `DirectChat`."""
    structured: dict[str, Runnable[Any, Any] | None] = field(default_factory=dict)
    """Chat models bound to constrained output, by the canonical JSON of their schema."""
    inflight: dict[str, asyncio.Future[AgentReply]] = field(default_factory=dict)
    """Deterministic requests on their way, by cache key: an identical one waits instead of calling."""
    first_call: asyncio.Future[None] | None = None
    """The agent's first request, sent alone: what its API refuses is learned once, not by every
    call in flight (see `ManagedAgent.learned_rules`)."""


@dataclass
class _Outcome:
    message: AIMessage
    parsed: dict[str, Any] | None
    parse_error: str | None
    attempts: int


class ManagedAgent(BaseChatModel):
    """A chat model with the toolkit's cross-cutting concerns wrapped around it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    spec: str
    inner: BaseChatModel
    inner_factory: Callable[[Any], BaseChatModel] | None = None
    """Builds a fresh inner model from parameters; SDK clients bind to one event loop, so each new
    loop gets one, and a key the API refused is left out of a model built again without it."""
    provider: Provider
    params: AgentParams = Field(default_factory=AgentParams)
    price: Pricing | None = None
    response_cache: ReplyCache | None = None
    retry_policy: RetryPolicy = Field(default_factory=RetryPolicy)
    endpoint_url: str | None = None
    """The server requests go to (None: the provider's default); see `agents.limits`."""
    limiter: Limiter | None = None
    """Where calls wait for the endpoint's limits; None: this process's (`agents.limits`)."""
    breaker: CircuitBreaker | None = None
    """A run's watch for a dead endpoint (see `agents.breaker`); None: calls fail only one by one."""
    run_concurrency: int | None = None
    """The run's `--concurrency`, in place of the provider's default where the agent sets no
    concurrency of its own: a run's N calls in flight are capped only by a limit the user set."""
    shares_context: bool = False
    """Whether a problem's calls or attempts send the same context again (a multi-turn strategy,
    `--attempts N`): where `prompt_cache` is unset, a provider asked for its cache is asked then."""
    watch: CallWatch | None = None
    """Sees every call before it is paid for and its reply (not the cache's answers)."""
    dropped_decoding: list[str] = Field(default_factory=list)
    """Each default decoding key (a paper's, a judge's) the model's family cannot take, left out,
    with why (`agents.model_families`), or sent against its vendor's advice."""
    learned_rules: LearnedRules | None = None
    """Where a key the API refuses is kept once learned (`agents.learned_rules`); None: a refused
    request fails as any other 400."""
    learned: list[str] = Field(default_factory=list)
    """What this agent learned its API refuses, as the run's provenance records it."""
    _per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopModels] = PrivateAttr(
        default_factory=weakref.WeakKeyDictionary
    )
    _requests: int = PrivateAttr(default=0)
    _first_answered: bool = PrivateAttr(default=False)

    @property
    def _llm_type(self) -> str:
        return f"bongard-managed:{self.provider.name}"

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.provider.name, self.endpoint_url)

    @property
    def rate_limits(self) -> RateLimits:
        """This agent's own limits where it sets them, the run's concurrency or else its provider's
        defaults elsewhere; in batch mode, as many calls in flight as a batch holds."""
        base = self.provider.rate_limits
        batching = self.params.batch_requests if self.params.batch else None
        return RateLimits(
            concurrency=self.params.concurrency or batching or self.run_concurrency or base.concurrency,
            requests_per_minute=self.params.requests_per_minute or base.requests_per_minute,
            tokens_per_minute=self.params.tokens_per_minute or base.tokens_per_minute,
        )

    @property
    def image_policy(self) -> ImagePolicy:
        return ImagePolicy(max_side=self.params.image_max_side or None)

    @property
    def deterministic(self) -> bool:
        return self.provider.deterministic or self.params.deterministic

    async def acall(self, messages: Sequence[BaseMessage], call: CallSpec | None = None) -> AgentReply:
        """Send one request; a reply always comes back unless the call itself failed for good."""
        call = call or CallSpec()
        started = time.monotonic()
        try:
            prepared = self._prepare(messages, call)
        except ImageLimitError as error:
            raise AgentCallError(f"{self.spec}: {error}", retryable=False) from None
        key = self._cache_key(prepared, call)
        if key is None:
            return await self._watched_call(prepared, call, started)
        cached = await self.response_cache.aget(key) if self.response_cache is not None else None
        if cached is not None:
            return self._shared(AgentReply.model_validate({**cached, "agent": self.spec}), started)
        inflight = self._models().inflight
        if key in inflight:  # the same deterministic request is already on its way: wait for it
            return self._shared(await asyncio.shield(inflight[key]), started)
        future: asyncio.Future[AgentReply] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda done: done.cancelled() or done.exception())
        inflight[key] = future
        try:
            reply = await self._watched_call(prepared, call, started)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as error:
            future.set_exception(error)  # the identical calls waiting on it fail the same way
            raise
        finally:
            inflight.pop(key, None)
        future.set_result(reply)
        if self.response_cache is not None and reply.parse_status != "failed" and reply.stop in (None, "cut"):
            await self.response_cache.aput(key, self.spec, reply.model_dump(mode="json", exclude={"agent"}))
        return reply

    async def _watched_call(self, prepared: list[BaseMessage], call: CallSpec, started: float) -> AgentReply:
        if self.watch is None:
            return await self._call_model(prepared, call, started)
        self.watch.before(prepared, call)
        reply = await self._call_model(prepared, call, started)
        self.watch.after(reply)
        return reply

    def _shared(self, reply: AgentReply, started: float) -> AgentReply:
        """A reply obtained without calling the model: from the cache or from an identical call in flight."""
        return reply.model_copy(
            update={
                "cache_hit": True,
                "cost_usd": 0.0,
                "attempts": 0,
                "latency_s": time.monotonic() - started,
            }
        )

    def _prepare(self, messages: Sequence[BaseMessage], call: CallSpec) -> list[BaseMessage]:
        if self.provider.reads_call_metadata:
            return list(messages)
        text_only = self.provider.text_only(self.params) if self.provider.text_only else None
        if text_only is not None and (images := count_images(messages)):
            raise ImageLimitError(f"{text_only} takes no images; this request has {images}")
        return prepare_messages(messages, self.image_policy, self.provider.image_limits, self.provider.name)

    @property
    def marks_cache(self) -> bool:
        """Whether requests mark their shared context for the provider's prompt cache: the agent's
        `prompt_cache`, else whether the run sends a context again."""
        wanted = self.params.prompt_cache if self.params.prompt_cache is not None else self.shares_context
        return self.provider.cache_breakpoints and wanted

    def _cache_key(self, prepared: list[BaseMessage], call: CallSpec) -> str | None:
        if not (self.deterministic and self.params.cache):
            return None
        return cache_key(
            {
                "agent": self.spec,
                "sampling": self.params.sampling(),
                "structured_method": self.provider.structured_method,
                "messages": messages_to_dict(prepared),
                "call": call.fingerprint(),
            }
        )

    async def _call_model(self, prepared: list[BaseMessage], call: CallSpec, started: float) -> AgentReply:
        if self.marks_cache:  # after the response cache's key: a breakpoint does not change the reply
            prepared = with_cache_breakpoints(prepared)
        schema, mode = call.output_schema, self._output_mode(call.output_schema)
        if schema is not None and mode == "prompt":
            prepared = [*prepared, HumanMessage(content=schema_instructions(schema))]
        try:
            first = await self._first_alone(prepared, call)
            outcomes = [first]
            if first.parse_error is not None and self.params.reask_unparsed:
                follow_up = [
                    *prepared,
                    AIMessage(content=message_text(first.message)),
                    reask_message(first.parse_error),
                ]
                outcomes.append(await self._learning(follow_up, call))
        except (EndpointDown, DatasetError):
            raise  # the run's endpoint or the item's input is at fault, not this call: said as it is
        except Exception as error:
            refused = status_code(error) in REFUSED_REQUEST or getattr(error, "retryable", True) is False
            raise AgentCallError(f"{self.spec}: {redact(_described(error))}", retryable=not refused) from None
        last = outcomes[-1]
        stop = reply_stop(last.message)
        usage = sum((_usage(o.message) for o in outcomes), Usage())
        secrets = secret_values()
        return AgentReply(  # redacted: a key the server echoes must not reach the cache or the store
            agent=self.spec,
            text=redact(message_text(last.message), secrets),
            parsed=redact_value(last.parsed, secrets),
            parse_status="not-requested"
            if call.output_schema is None
            else ("failed" if last.parse_error else "ok"),
            parse_error=redact_value(last.parse_error, secrets),
            stop=None if stop is None else stop.kind,
            stop_reason=None if stop is None else redact(stop.reason, secrets),
            output_mode=mode,
            usage=usage,
            cost_usd=self.price.cost(usage) if self.price is not None else None,  # None: unknown
            latency_s=time.monotonic() - started,
            attempts=sum(o.attempts for o in outcomes),
        )

    async def _first_alone(self, messages: list[BaseMessage], call: CallSpec) -> _Outcome:
        """`_learning` for the agent's first request alone, the others waiting for its answer (not
        in batch mode: the first would take a batch of its own, hours before the others')."""
        if self._first_answered or self.learned_rules is None or self.params.batch:
            return await self._learning(messages, call)
        models = self._models()
        if models.first_call is not None:
            await asyncio.shield(models.first_call)
            return await self._learning(messages, call)
        models.first_call = asyncio.get_running_loop().create_future()
        try:
            return await self._learning(messages, call)
        finally:
            self._release_first_call()

    def _release_first_call(self) -> None:
        """Let the calls waiting on the first one go: it was answered, or failed in a way no key
        explains (a server error is retried, and the others need not wait for its retries)."""
        self._first_answered = True
        models = self._per_loop.get(asyncio.get_running_loop())
        if models is not None and models.first_call is not None and not models.first_call.done():
            models.first_call.set_result(None)

    async def _learning(self, messages: list[BaseMessage], call: CallSpec) -> _Outcome:
        """`_attempt`, sent again without each key the API refuses, once per key (`learned_rules`)."""
        while True:
            params = self.params
            try:
                return await self._attempt(messages, call)
            except Exception as error:
                if self.params is not params:
                    continue  # another call learned a refused key meanwhile: sent as it now is
                sent = [key for key in LEARNABLE if getattr(params, key, None) is not None]
                refused = refused_key(error, sent) if self.learned_rules and self.inner_factory else None
                if refused is None:
                    raise
                self._learn(*refused)

    def _learn(self, key: str, reason: str) -> None:
        """Leave `key` out of every later request, here and in the workspace's rules, and say so."""
        assert self.learned_rules is not None and self.inner_factory is not None
        rule = LearnedRule(self.spec, key, time.time(), reason)
        self.learned_rules.add(rule)
        self.learned.append(f"{rule.note()}; sent without it from request {self._requests}")
        self.params = self.params.model_copy(update={key: None})
        self.inner = self.inner_factory(self.params)
        loop = asyncio.get_running_loop()
        for other in [other for other in self._per_loop if other is not loop]:
            del self._per_loop[other]  # built again, without the key, when next used there
        models = self._per_loop[loop]
        models.chat = self.inner
        models.direct = self.inner if isinstance(self.inner, DirectChat) else None
        models.structured.clear()

    async def _attempt(self, messages: list[BaseMessage], call: CallSpec) -> _Outcome:
        attempts = 0

        def count(number: int) -> None:
            nonlocal attempts
            attempts = number
            if number > 1:
                EVENTS.retries += 1

        async def once() -> _Outcome:
            estimate = _estimate_tokens(messages)
            slot = endpoint_slot if self.limiter is None else self.limiter.slot
            async with slot(self.endpoint, self.rate_limits, estimate):
                if self.breaker is not None:
                    self.breaker.check(self.endpoint)
                self._requests += 1
                paced = getattr(self._models().chat, "paced", False)  # it times each attempt itself
                try:
                    # a batch's call waits for its batch (hours, at worst a day): no attempt timeout
                    async with asyncio.timeout(None if paced or self.params.batch else self.params.timeout_s):
                        outcome = await self._invoke(messages, call)
                except Exception as error:
                    if self._retryable(error):
                        self._release_first_call()
                    if self.breaker is not None:
                        self.breaker.failed(self.endpoint, error, self.provider.key_env)
                    if is_timeout(error):
                        EVENTS.timeouts += 1
                        if isinstance(error, AttemptTimeout):
                            raise
                        where = self.endpoint_url or self.provider.name
                        raise AttemptTimeout(where, self.params.timeout_s) from error
                    raise
                if self.breaker is not None:
                    self.breaker.answered(self.endpoint)
                return outcome

        policy = replace(self.retry_policy, max_retry_after_s=self.params.max_retry_after_s)
        if self.params.batch:  # an attempt lasts its batch (hours): the attempts bound it, not a total
            policy = replace(policy, max_total_s=math.inf)
        outcome = await with_retries(once, policy, count, self._retryable)
        outcome.attempts = attempts
        return outcome

    async def _invoke(self, messages: list[BaseMessage], call: CallSpec) -> _Outcome:
        schema = call.output_schema
        direct = None if self.provider.reads_call_metadata else self._models().direct
        constrained = self._structured_runnable(schema) if schema is not None else None
        if direct is not None:
            asked = schema_json(schema) if schema is not None and self._constrains(schema) else None
            message = await direct.acomplete(messages, asked)
            stopped = STOPPED_REPLY_ERRORS.get(message.response_metadata.get("finish_reason") or "")
            if asked is not None and stopped is not None:
                return _Outcome(message, None, stopped, 0)  # as `stopped_reply` says for the SDKs
        elif constrained is not None:
            try:
                message = await constrained.ainvoke(messages)
            except Exception as refused:
                halted = stopped_reply(refused)
                if halted is None:
                    raise
                return _Outcome(halted[0], None, halted[1], 0)
        else:
            kwargs: dict[str, Any] = {CALL_KWARG: call} if self.provider.reads_call_metadata else {}
            message = await self._models().chat.ainvoke(messages, **kwargs)
        assert isinstance(message, AIMessage)
        message = bounded(message, self.params.max_reply_chars)
        if schema is None:
            return _Outcome(message, None, None, 0)
        try:
            return _Outcome(message, parse_message(message, schema), None, 0)
        except ReplyParseError as error:
            return _Outcome(message, None, str(error), 0)

    def _retryable(self, error: BaseException) -> bool:
        """The provider's rule, except that a stopped endpoint is never tried again."""
        return not isinstance(error, EndpointDown) and self.provider.retryable(error)

    def _models(self) -> _LoopModels:
        """The inner model for the running event loop (the given one for the first loop)."""
        loop = asyncio.get_running_loop()
        models = self._per_loop.get(loop)
        if models is None:
            fresh = self.inner_factory is not None and len(self._per_loop) > 0
            chat = self.inner_factory(self.params) if fresh and self.inner_factory is not None else self.inner
            models = self._per_loop[loop] = _LoopModels(chat, chat if isinstance(chat, DirectChat) else None)
        return models

    def _output_mode(self, schema: OutputSchema | None) -> OutputMode | None:
        """How `schema` goes out: in the prompt, constrained, or strict (OpenAI's structured outputs,
        sent strict by the SDK path where the provider asks for it and always by the wire path,
        where the schema fits the strict subset)."""
        if schema is None:
            return None
        if not self._constrains(schema):
            return "prompt"
        strict_sent = self.provider.strict_schemas or self._models().direct is not None
        return "strict" if strict_sent and fits_strict(schema_json(schema)) else "schema"

    def _constrains(self, schema: OutputSchema) -> bool:
        """Whether the backend is asked for `schema` itself (else the prompt asks for it); a non-LLM
        agent reads the schema from the call."""
        if self.provider.reads_call_metadata:
            return True
        if (direct := self._models().direct) is not None:
            return self.provider.structured_method != "prompt" and direct.constrains(schema_json(schema))
        return self._structured_runnable(schema) is not None

    def _structured_runnable(self, schema: OutputSchema) -> Runnable[Any, Any] | None:
        """The chat model bound to the backend's constrained output for `schema`, or None to ask in
        the prompt; its reply is parsed in `_invoke`, not by the integration's parser.

        None for non-LLM agents, for providers set to "prompt", and for schemas
        the integration cannot turn into a constrained request.
        """
        models = self._models()
        if self.provider.reads_call_metadata or self.provider.structured_method == "prompt" or models.direct:
            return None
        key = json.dumps(schema_json(schema), sort_keys=True)
        if key not in models.structured:
            kwargs: dict[str, Any] = {"include_raw": True}
            if self.provider.structured_method is not None:
                kwargs["method"] = self.provider.structured_method
            if self.provider.strict_schemas:
                kwargs["strict"] = fits_strict(schema_json(schema))
            try:
                # A JSON schema, not a class: validation stays here, where a failure is re-asked.
                structured = models.chat.with_structured_output(schema_json(schema), **kwargs)
                runnable = constrained_model(structured)
            except (NotImplementedError, KeyError, ValueError, TypeError):
                runnable = None
            models.structured[key] = runnable
        return models.structured[key]

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = await self.acall(messages, kwargs.get(CALL_KWARG))
        message = AIMessage(
            content=reply.text,
            usage_metadata={
                "input_tokens": reply.usage.input_tokens,
                "output_tokens": reply.usage.output_tokens,
                "total_tokens": reply.usage.total_tokens,
            },
            response_metadata=reply.model_dump(mode="json", exclude={"text"}),
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return asyncio.run(self._agenerate(messages, stop, None, **kwargs))


def _described(error: BaseException) -> str:
    """`Type: message`, and the failure behind it where the SDK's message hides it: a dropped
    connection is more than `Connection error.`. An HTTP status error below (one with a `response`)
    says again what the message says, so only a cause that adds something is named."""
    text = f"{type(error).__name__}: {error}"
    below = (e for e in error_chain(error) if str(e) and str(e) not in text and "response" not in vars(e))
    cause = next(below, None)
    return f"{text} ({type(cause).__name__}: {cause})" if cause is not None else text


def _usage(message: AIMessage) -> Usage:
    """The reply's usage; unknown where it has none, or an empty one (`usage: {}` reads as no token
    in or out, which no request that reached a model has)."""
    usage = message.usage_metadata
    if usage is None or not (usage.get("input_tokens") or usage.get("output_tokens")):
        return Usage(reported=False)
    details = usage.get("input_token_details") or {}
    return Usage(
        input_tokens=usage.get("input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        cache_read_tokens=details.get("cache_read") or 0,
        cache_write_tokens=details.get("cache_creation") or 0,
    )


def _estimate_tokens(messages: Sequence[BaseMessage]) -> int:
    """A rough request size for the tokens-per-minute bucket, before the provider counts."""
    total = 0
    for message in messages:
        blocks = [message.content] if isinstance(message.content, str) else message.content
        for block in blocks:
            if isinstance(block, str):
                total += len(block) // CHARS_PER_TOKEN
            elif block.get("type") == "image":
                total += TOKENS_PER_IMAGE
            else:
                total += len(str(block.get("text", ""))) // CHARS_PER_TOKEN
    return total
