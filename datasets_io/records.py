"""The records the results store reads and writes: an answer, the trace of its calls, a verdict.

Every room speaks them: strategies produce `Answer`s, judges `Verdict`s, and the store keeps
each in named columns (the trace once, as one `calls` row per call).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from datasets_io.problem import Side

StopKind = Literal["refused", "blocked", "cut"]
"""Why a reply stopped short of an answer (`agents.stops` reads it from each provider's reply)."""

VerdictLabel = Literal["ok", "wrong", "abstain", "refused"]
VERDICT_LABELS: tuple[VerdictLabel, ...] = ("ok", "wrong", "abstain", "refused")
"""A judge's verdicts: `refused` where its own reply was refused or blocked (never a vote)."""
REFUSAL_STOPS: tuple[StopKind, ...] = ("refused", "blocked")
"""Stops that leave no answer to judge: a refusal, a safety or recitation block (a reply cut off at
its token limit may still hold one)."""
STOP_KINDS: tuple[StopKind, ...] = ("refused", "blocked", "cut")
"""The ways a call can stop short; an item takes its last call's (`results.store.ITEM_STOP`)."""
STOP_WORDS: dict[StopKind, str] = {"refused": "refused", "blocked": "blocked", "cut": "cut off"}
"""How each stop reads as an item's outcome."""
ItemOutcome = Literal[
    "solved", "wrong", "format error", "refused", "blocked", "cut off", "unjudged", "failed"
]
"""What became of an item, in one word (`results.store.ITEM_OUTCOME` decides it): a failure, or
solved; else why not: its last call refused, blocked or cut off, a reply that did not parse, a wrong answer,
or a free-form answer no judging has decided yet."""
STOPPED_OUTCOMES: tuple[ItemOutcome, ...] = ("refused", "blocked", "cut off")


def format_note(outcome: str, parse_status: str | None) -> str | None:
    """What is shown beside a free-form answer's verdict, never as one, when its reply had no
    `Left:`/`Right:` lines: judges decide it as written (an exactly scored reply that did not parse
    has the outcome `format error` instead)."""
    unparsed = parse_status == "failed" and outcome in ("solved", "wrong", "unjudged")
    return "no Left:/Right: lines" if unparsed else None


OutputMode = Literal["prompt", "schema", "strict"]
"""How a call's output schema was asked for: in the prompt only, as the backend's constrained output,
or as OpenAI's strict structured output (the schema inside its strict subset)."""
OUTPUT_MODE_WORDS: dict[OutputMode, str] = {
    "prompt": "schema asked in the prompt",
    "schema": "constrained to the schema",
    "strict": "strict schema",
}


class CallTrace(BaseModel):
    """One model call as it happened: who, with which panels, in which conversation, at what cost."""

    role: str
    agent: str
    task: str
    conversation: str
    """Calls with the same conversation id shared one context window."""
    step: int
    images: list[list[str]] = Field(default_factory=list)
    """For each image sent, the refs of the panels behind it (a sheet carries all of them)."""
    prompt: str
    reply: str
    parsed: dict[str, Any] | None = None
    parse_status: str = "not-requested"
    stop: StopKind | None = None
    """`refused`, `blocked` or `cut` where the reply stopped short (`agents.stops`), else None."""
    stop_reason: str | None = None
    output_mode: OutputMode | None = None
    """How the output schema was asked for; None for a call without one, or stored before modes were."""
    """The provider's words for the stop (`finish_reason content_filter`, `prompt blocked: SAFETY`)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    """Of the input tokens, those the provider read from its prompt cache (billed at its read rate)."""
    cache_write_tokens: int = 0
    """Of the input tokens, those written to the provider's prompt cache (Anthropic's cache creation)."""
    cost_usd: float | None = None
    latency_s: float = 0.0
    cache_hit: bool = False
    attempts: int | None = 1
    """Requests sent for this call: 1, plus one per retry (a 429, a timeout...) and per re-ask; 0
    for a cache hit; None for a call stored before they were counted."""

    @property
    def requests_text(self) -> str:
        """`1 request`, `2 requests (1 retry)`, `0 requests (cached)` or `requests not counted`."""
        if self.attempts is None:
            return "requests not counted"
        retried = self.attempts - 1
        retries = f" ({retried} retr{'y' if retried == 1 else 'ies'})" if retried > 0 else ""
        if self.cache_hit:
            retries = " (cached)"
        return f"{self.attempts} request{'' if self.attempts == 1 else 's'}{retries}"


class AnswerParts(BaseModel):
    """What a strategy's finishing node concludes; `solve` makes it an `Answer`.

    Malformed replies are recorded here, never raised.
    """

    text: str
    left_rule: str | None = None
    right_rule: str | None = None
    sides: dict[str, Side | None] = Field(default_factory=dict)
    """Classification settings: the side given for each test panel ref."""
    label: int | str | None = None
    """Concept selection: the chosen label; ground-truth settings: the verdict."""
    expected: dict[str, Any] = Field(default_factory=dict)
    """What a correct answer holds (true sides, true label, expected verdict), for scoring."""
    correct: bool | None = None
    """For settings scored without a judge; None for free-form answers."""
    parse_status: Literal["ok", "failed", "not-requested"] = "not-requested"
    parse_error: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    """Strategy-specific structured results (rule summaries, descriptions, hypotheses, probes),
    kept so analyses and later runs (`--rules-from`, `--descriptions-from`) can reuse them."""


class Answer(AnswerParts):
    """A strategy's result for one problem, stamped with the strategy and problem by `solve`."""

    strategy: str
    problem: str
    trace: list[CallTrace] = Field(default_factory=list)

    @property
    def cost_usd(self) -> float | None:
        costs = [call.cost_usd for call in self.trace]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


class Verdict(BaseModel):
    """A judge's verdict with its raw text and cost; an abstention never counts as ok."""

    judge: str
    label: VerdictLabel
    raw_text: str = ""
    prompt: str = ""
    """What the judge was asked: its prompt, then any re-ask (empty for a judge that reads no prompt)."""
    reason: str | None = None
    """Why a verdict is an abstention (an unreadable reply), or the score behind a non-LLM verdict."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    cache_hit: bool = False
