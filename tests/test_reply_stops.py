"""A refusal, a safety or content block and a cut at the token limit, each in its provider's own
words, come back as what they are (`AgentReply.stop`, with the provider's reason), asked for free
text or for structured output; a reply without usage has unknown tokens and cost, never $0."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from agents.call import AgentReply, CallSpec
from agents.managed import ManagedAgent
from agents.registry import resolve_agent
from agents.stops import reply_stop
from datasets_io.problem import Concept
from datasets_io.records import StopKind
from judges.llm_judge import LLMJudge
from judges.styles import JudgeStyle
from tests.agent_calls import FAST_RETRIES, Rule, ask
from tests.standins.protocols import (
    REFUSAL_TEXT,
    TOKENS_IN,
    TOKENS_OUT,
    AnthropicMessages,
    GeminiGenerateContent,
    OllamaChat,
    OpenAIChat,
)
from tests.standins.server import StandIn, StandInServer

KEY = "standin-key-0123456789abcdef"
ANSWER = '{"left": "circles", "right": "squares"}'


@dataclass(frozen=True)
class Provider:
    spec: str
    """`provider:model`; the stand-in's URL goes in as `base_url`."""
    protocol: type[OpenAIChat | AnthropicMessages | GeminiGenerateContent | OllamaChat]
    key_env: str | None


PROVIDERS = {
    "openai": Provider("openai:gpt-4o-mini", OpenAIChat, "OPENAI_API_KEY"),
    "openai-compatible": Provider("openai-compatible:served-model", OpenAIChat, None),
    "anthropic": Provider("anthropic:claude-sonnet-4-6", AnthropicMessages, "ANTHROPIC_API_KEY"),
    "gemini": Provider("gemini:gemini-2.5-flash", GeminiGenerateContent, "GOOGLE_API_KEY"),
    "ollama": Provider("ollama:llava", OllamaChat, None),
}
REASONS: dict[tuple[str, str], str] = {
    ("openai", "length"): "finish_reason length",
    ("openai", "refusal"): f"refusal: {REFUSAL_TEXT}",
    ("openai", "content_filter"): "finish_reason content_filter",
    ("openai-compatible", "length"): "finish_reason length",
    ("openai-compatible", "refusal"): f"refusal: {REFUSAL_TEXT}",
    ("openai-compatible", "content_filter"): "finish_reason content_filter",
    ("anthropic", "length"): "stop_reason max_tokens",
    ("anthropic", "refusal"): "stop_reason refusal",
    ("gemini", "length"): "finish_reason MAX_TOKENS",
    ("gemini", "SAFETY"): "finish_reason SAFETY",
    ("gemini", "RECITATION"): "finish_reason RECITATION",
    ("gemini", "LANGUAGE"): "finish_reason LANGUAGE",
    ("gemini", "OTHER"): "finish_reason OTHER",
    ("gemini", "MALFORMED_FUNCTION_CALL"): "finish_reason MALFORMED_FUNCTION_CALL",
    ("gemini", "prompt_blocked"): "prompt blocked: SAFETY",
    ("ollama", "length"): "done_reason length",
}
"""Every stop form each stand-in sends (its protocol's `STOPS`), and the reason the reply must carry."""


def test_every_stop_form_of_every_stand_in_is_covered() -> None:
    forms = {(name, form) for name, provider in PROVIDERS.items() for form in provider.protocol.STOPS}
    assert forms == set(REASONS)


@dataclass
class Served:
    provider: Provider
    server: StandInServer

    def agent(self) -> ManagedAgent:
        return resolve_agent(
            self.provider.spec, {"base_url": self.server.url, "cache": False}, retry_policy=FAST_RETRIES
        )


@pytest.fixture
def serve(home: Path, standin: StandIn, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Served]]:
    for variable in ("GEMINI_API_KEY", "OLLAMA_HOST", *(p.key_env for p in PROVIDERS.values() if p.key_env)):
        monkeypatch.delenv(variable, raising=False)

    def start(name: str, **options: Any) -> Served:
        provider = PROVIDERS[name]
        if provider.key_env is not None:
            monkeypatch.setenv(provider.key_env, KEY)
        return Served(provider, standin(provider.protocol(**options), lambda body: ANSWER))

    yield start


@pytest.mark.parametrize(("name", "form"), sorted(REASONS))
def test_a_stopped_reply_says_why_in_the_providers_words(
    serve: Callable[..., Served], name: str, form: str
) -> None:
    served = serve(name)
    served.server.finish_reason = form
    kind: StopKind = served.provider.protocol.STOPS[form]
    for call in (None, CallSpec(task="answer", output_schema=Rule)):
        reply = ask(served.agent(), "Solve.", call=call)
        assert (reply.stop, reply.stop_reason) == (kind, REASONS[name, form]), (call, reply)
        if kind != "cut":  # a refused or blocked reply holds no answer to parse, and is not kept as one
            assert reply.parsed is None
            assert reply.parse_status == ("failed" if call else "not-requested")
    assert len(list(served.server.model_requests())) == 2  # a stop is an answer: never retried


@pytest.mark.parametrize("name", list(PROVIDERS))
def test_a_reply_that_ends_normally_has_no_stop(serve: Callable[..., Served], name: str) -> None:
    reply = ask(serve(name).agent(), "Solve.", call=CallSpec(task="answer", output_schema=Rule))
    assert (reply.stop, reply.stop_reason, reply.parse_status) == (None, None, "ok")


@pytest.mark.parametrize("name", ["openai", "openai-compatible", "gemini"])
def test_a_reply_without_usage_has_unknown_tokens_and_cost(serve: Callable[..., Served], name: str) -> None:
    reply = ask(serve(name, usage=False).agent(), "Solve.")
    assert reply.usage.reported is False
    assert reply.cost_usd is None  # openai:gpt-4o-mini and gemini-2.5-flash have published prices


@pytest.mark.parametrize("name", ["openai", "openai-compatible"])
def test_an_empty_usage_is_unknown_never_free(serve: Callable[..., Served], name: str) -> None:
    """`usage: {}` (some gateways send it) reads as no token in or out: unknown, on every path."""
    reply = ask(serve(name, empty_usage=True).agent(), "Solve.")
    assert (reply.usage.reported, reply.cost_usd) == (False, None)


def test_a_blocked_gemini_prompt_keeps_the_prompt_tokens_it_is_billed_for(
    serve: Callable[..., Served],
) -> None:
    served = serve("gemini")
    served.server.finish_reason = "prompt_blocked"
    reply = ask(served.agent(), "Solve.")
    assert (reply.stop, reply.usage.reported, reply.usage.input_tokens) == ("blocked", True, TOKENS_IN)
    assert reply.cost_usd is not None and reply.cost_usd > 0


def test_every_gemini_finish_reason_but_stop_is_named_in_the_replys_stop() -> None:
    from google.genai.types import FinishReason

    normal = {"STOP", "FINISH_REASON_UNSPECIFIED"}
    for reason in FinishReason:
        stop = reply_stop(AIMessage("", response_metadata={"finish_reason": reason.name}))
        assert (stop is None) == (reason.name in normal), reason.name
        assert stop is None or stop.reason == f"finish_reason {reason.name}"


def test_anthropic_cache_writes_are_priced_at_their_published_rate(serve: Callable[..., Served]) -> None:
    from genai_prices import Usage as PricedUsage
    from genai_prices import calc_price

    reply = ask(serve("anthropic", cache_write=2000).agent(), "Solve.")
    assert reply.usage.cache_write_tokens == 2000
    written = calc_price(
        PricedUsage(input_tokens=reply.usage.input_tokens, cache_write_tokens=2000, output_tokens=TOKENS_OUT),
        "claude-sonnet-4-6",
        provider_id="anthropic",
    )
    as_input = calc_price(
        PricedUsage(input_tokens=reply.usage.input_tokens, output_tokens=TOKENS_OUT),
        "claude-sonnet-4-6",
        provider_id="anthropic",
    )
    assert reply.cost_usd == pytest.approx(float(written.total_price))
    assert reply.cost_usd > float(as_input.total_price)  # a cache write costs more than a plain input token


def test_a_priced_reply_with_usage_has_a_cost(serve: Callable[..., Served]) -> None:
    assert ask(serve("openai").agent(), "Solve.").cost_usd > 0


@pytest.mark.parametrize(
    ("name", "form", "style"), [("anthropic", "refusal", "strict"), ("gemini", "SAFETY", "rubric")]
)
def test_a_judge_whose_reply_is_refused_or_blocked_refuses_at_once_saying_why(
    serve: Callable[..., Served], name: str, form: str, style: JudgeStyle
) -> None:
    served = serve(name)
    served.server.finish_reason = form
    judge = LLMJudge(served.agent(), style=style)
    verdict = asyncio.run(judge.judge(Concept(left="circles", right="squares"), "Left: circles"))
    assert (verdict.label, verdict.reason) == (
        "refused",
        f"the judge's reply was {PROVIDERS[name].protocol.STOPS[form]}: {REASONS[name, form]}",
    )
    assert len(list(served.server.model_requests())) == 1  # not re-asked: a filter would block that too


def test_a_reply_cached_before_stops_were_kept_reads_as_cut() -> None:
    cached = AgentReply.model_validate({"agent": "a", "text": "half a", "truncated": True})
    assert (cached.stop, cached.truncated) == ("cut", True)
