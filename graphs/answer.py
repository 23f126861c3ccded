"""What a strategy returns: the answer, its parsed parts, and the trace of every model call."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from datasets_io.problem import Side

RULE_LINE = re.compile(
    r"^[\s*#>\-]*(left|right)(?:\s+side)?\s*[*]*\s*[:\-\u2013\u2014]\s*(.+?)\s*$", re.IGNORECASE
)


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
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    cache_hit: bool = False


class Answer(BaseModel):
    """A strategy's result for one problem. Malformed replies are recorded here, never raised."""

    strategy: str
    problem: str
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
    trace: list[CallTrace] = Field(default_factory=list)

    @property
    def cost_usd(self) -> float | None:
        costs = [call.cost_usd for call in self.trace]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def parse_rules(text: str) -> tuple[str | None, str | None]:
    """The `Left: ...` and `Right: ...` lines of a free-form answer, where it has them."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = RULE_LINE.match(line)
        if match and match.group(1).lower() not in found:
            found[match.group(1).lower()] = match.group(2).strip(" *")
    return found.get("left"), found.get("right")
