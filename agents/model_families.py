"""What each model family accepts of the sampling parameters, as its provider documents it.

A paper states a decoding (the cognitive paradigms: temperature 0; Bongard-RWR+: 0.5) and judges
decide at temperature 0, but current models do not all take it: OpenAI's reasoning models refuse
`temperature` and `top_p` (gpt-5.1 and later take them at reasoning effort `none`, their default),
Claude Opus 4.1 and Claude 4.5 and later refuse `temperature` together with `top_p`, Claude Opus 4.7
refuses both, and each reasoning family takes its own reasoning efforts. Such a request fails with a
400 on every call.

So a decoding the toolkit chose (a paper's, a judge's) that a model cannot take is not sent, and
the agent says which keys it left out and why (`Fitted.notes`, recorded with a run); a key the user
set (`-M`, a config table) that the model refuses is refused before anything runs, in one line.
Where a vendor advises against a decoding the paper states (Gemini 3's temperature), the paper's
is sent and the run says so, with the override. A model of no listed family gets every key; what
its API refuses is learned on its first call (`agents.learned_rules`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from datasets_io.errors import BongardError

SAMPLERS = ("temperature", "top_p")
EFFORT = "reasoning_effort"
DATED = r"(-\d{4}-\d{2}-\d{2})?"
"""OpenAI's dated snapshot suffix."""
CLAUDE_DATED = r"(-\d{8})?"


class DecodingRefused(BongardError, ValueError):
    """A sampling parameter the user set that the model's API refuses."""


@dataclass(frozen=True)
class Advice:
    """A value the vendor advises for a key, and why: not enforced, said when a default differs."""

    key: str
    value: Any
    why: str


@dataclass(frozen=True)
class ModelFamily:
    """Models of one provider whose names match `pattern`, and the sampling keys their API refuses."""

    name: str
    providers: tuple[str, ...]
    pattern: str
    """A regular expression the whole model name (without a provider's `@URL`) matches."""
    source: str
    """Where the provider documents the rule (a page, a migration guide, an SDK's own table)."""
    refuses: tuple[str, ...] = ()
    """Keys never to send, whatever their value (unless the effort allows them: `samples_at`)."""
    one_of: tuple[str, ...] = ()
    """Keys of which at most one may be sent."""
    efforts: tuple[str, ...] | None = None
    """The reasoning efforts the API takes (None: not checked here)."""
    default_effort: str | None = None
    """The effort the API uses when none is sent."""
    samples_at: tuple[str, ...] = ()
    """Efforts at which the refused sampling keys are taken after all (gpt-5.1 and later: `none`)."""
    advises: tuple[Advice, ...] = ()
    orders_properties: bool = False
    """Keeps a structured answer's keys in the schema's order only when told (`propertyOrdering`), so
    a reasoning field meant to come before the answer may come after it."""

    def matches(self, provider: str, model: str) -> bool:
        return provider in self.providers and re.fullmatch(self.pattern, model) is not None

    def refused_at(self, effort: str | None) -> tuple[str, ...]:
        """The keys refused when the request's effort (or the API's default) is `effort`."""
        if (effort or self.default_effort) in self.samples_at:
            return tuple(key for key in self.refuses if key not in SAMPLERS)
        return self.refuses

    def rule(self) -> str:
        """The rule in words, for messages and the documentation's table."""
        parts = []
        refused = [key for key in self.refuses if not (self.samples_at and key in SAMPLERS)]
        if refused:
            parts.append(f"takes no {' or '.join(refused)}")
        if self.samples_at:
            parts.append(f"takes {' or '.join(SAMPLERS)} only at {EFFORT} {_words(self.samples_at)}")
        if self.one_of:
            parts.append(f"takes {' or '.join(self.one_of)}, not both")
        if self.efforts is not None:
            parts.append(f"takes {EFFORT} {_words(self.efforts)}")
        parts += [f"advises {advice.key}={advice.value} ({advice.why})" for advice in self.advises]
        if self.orders_properties:
            parts.append("keeps a structured answer's keys in order only as propertyOrdering lists them")
        return "; ".join(parts)


def _words(values: tuple[str, ...]) -> str:
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"


OPENAI_REASONING = "OpenAI reasoning guide and API reference (reasoning models: unsupported parameters)"
OPENAI_EFFORTS = "OpenAI API reference, reasoning_effort: the values each model takes"
GPT_5_1 = "OpenAI's GPT-5.1 guide: effort none is the default, and takes temperature and top_p"


def _openai_reasoning(
    name: str, pattern: str, efforts: tuple[str, ...], default: str, source: str
) -> ModelFamily:
    """An OpenAI reasoning family: no temperature or top_p, except at effort none where that is its
    default (gpt-5.1 on); these efforts."""
    return ModelFamily(
        name,
        ("openai",),
        rf"{pattern}{DATED}",
        source,
        refuses=SAMPLERS,
        efforts=efforts,
        default_effort=default,
        samples_at=("none",) if default == "none" else (),
    )


FAMILIES = (
    _openai_reasoning(
        "OpenAI o-series (o1, o3, o4-mini)",
        r"o\d+(-mini|-pro|-preview)?",
        ("low", "medium", "high"),
        "medium",
        f"{OPENAI_REASONING}; {OPENAI_EFFORTS} (o-series: low, medium, high)",
    ),
    _openai_reasoning(
        "OpenAI gpt-5 (gpt-5, gpt-5-mini, gpt-5-nano)",
        r"gpt-5(-mini|-nano)?",
        ("minimal", "low", "medium", "high"),
        "medium",
        f"{OPENAI_REASONING}; {OPENAI_EFFORTS} (gpt-5 adds minimal; none only from gpt-5.1)",
    ),
    _openai_reasoning(
        "OpenAI gpt-5.1",
        r"gpt-5\.1(-mini|-nano)?",
        ("none", "low", "medium", "high"),
        "none",
        f"{GPT_5_1}; {OPENAI_EFFORTS} (gpt-5.1: none, low, medium, high)",
    ),
    _openai_reasoning(
        "OpenAI gpt-5.2 and later",
        r"gpt-5\.([2-9]|\d\d+)(-mini|-nano)?",
        ("none", "low", "medium", "high", "xhigh"),
        "none",
        f"{GPT_5_1}; {OPENAI_EFFORTS} (xhigh from gpt-5.1-codex-max on)",
    ),
    ModelFamily(
        "OpenAI gpt-5 pro and codex models",
        ("openai",),
        rf"gpt-5(\.\d+)?-(pro|codex(-max|-mini)?){DATED}",
        f"{OPENAI_REASONING}; efforts differ per model (gpt-5-pro: high only), so not checked here",
        refuses=SAMPLERS,
    ),
    ModelFamily(
        "OpenAI gpt-5.x chat models (gpt-5.1-chat-latest and later)",
        ("openai",),
        r"gpt-5\.\d+-chat(-latest)?",
        "OpenAI API: the gpt-5.1 and later chat-latest models answer temperature with 400 "
        "unsupported_parameter (reported against the API; LiteLLM and langchain-openai threads)",
        refuses=SAMPLERS,
    ),
    ModelFamily(
        "OpenAI chat models (gpt-4o, gpt-4.1, gpt-5-chat)",
        ("openai",),
        r"(gpt-4.*|gpt-3\.5.*|chatgpt-.*|gpt-5-chat(-latest)?)",
        "OpenAI API reference: reasoning_effort is for reasoning models only",
        refuses=(EFFORT,),
    ),
    ModelFamily(
        "Claude Opus 4.7 and later, Sonnet 5.5, Fable 5",
        ("anthropic",),
        rf"claude-(opus-(4-[7-9]|[5-9](-\d+)?)|sonnet-5-5|fable-5.*){CLAUDE_DATED}",
        "Anthropic migration guide, Migrating to Claude Opus 4.7: temperature, top_p and top_k "
        "removed (400 'temperature is deprecated for this model'); langchain-anthropic 1.7 for Sonnet "
        "5.5 and Fable 5",
        refuses=SAMPLERS,
    ),
    ModelFamily(
        "Claude Opus 4.1, Claude 4.5 and later",
        ("anthropic",),
        rf"claude-(opus-4-1|(opus|sonnet|haiku)-(4-[5-9]|[5-9](-\d+)?)){CLAUDE_DATED}|claude-[5-9].*",
        "Anthropic Messages API: 'temperature and top_p cannot both be specified for this model' "
        "from Opus 4.1 on (Anthropic's model migration notes)",
        one_of=SAMPLERS,
    ),
    ModelFamily(
        "Gemini 3.5 Flash-Lite, 3.6 Flash (fixed sampling)",
        ("gemini",),
        r"gemini-(3\.5-flash-lite|3\.6-flash)(-\d{3})?",
        "Google's Gemini API model notes: custom sampling parameters deprecated from these models on "
        "(langchain-google-genai 4.4 drops them)",
        refuses=SAMPLERS,
    ),
    ModelFamily(
        "Gemini 3",
        ("gemini",),
        r"gemini-3(\.\d+)?(-.*)?",
        "Google's Gemini 3 developer guide: keep temperature at its default 1.0",
        advises=(Advice("temperature", 1.0, "Google: lower values may loop or degrade reasoning"),),
    ),
    ModelFamily(
        "Gemini 2.0 and earlier",
        ("gemini",),
        r"gemini-(1\.\d+|2\.0)(-.*)?",
        "Gemini API, structured output: models before 2.5 keep keys in order as propertyOrdering says",
        orders_properties=True,
    ),
)


def markdown_row(family: ModelFamily) -> str:
    """The family's row of docs/agents.md's table (a test keeps the page equal to the table)."""
    cells = (family.name, f"`{family.providers[0]}`", f"`{family.pattern}`", family.rule(), family.source)
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def family_of(provider: str, model: str) -> ModelFamily | None:
    return next((family for family in FAMILIES if family.matches(provider, model)), None)


@dataclass(frozen=True)
class Fitted:
    """The parameters to send, and a note for each default left out or sent against advice."""

    params: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def fit_decoding(provider: str, model: str, chosen: Mapping[str, Any], defaults: Mapping[str, Any]) -> Fitted:
    """`defaults` (a paper's or a judge's decoding) under `chosen` (what the user set), less what
    the model's family refuses. A chosen key or effort it refuses is a `DecodingRefused` naming it."""
    family = family_of(provider, model)
    merged = {**defaults, **chosen}
    if family is None:
        return Fitted(merged)
    spec = f"{provider}:{model}"
    where = f"{spec} {family.rule()} ({family.name})"
    effort = chosen.get(EFFORT)
    if effort is not None and family.efforts is not None and effort not in family.efforts:
        raise DecodingRefused(f"{where}: not {EFFORT}={effort}")
    refuses = family.refused_at(effort)
    refused = [key for key in refuses if chosen.get(key) is not None]
    if refused:
        raise DecodingRefused(f"{where}: drop -M {' and -M '.join(refused)}")
    both = [key for key in family.one_of if chosen.get(key) is not None]
    if len(both) > 1:
        raise DecodingRefused(f"{where}: keep one of -M {' or -M '.join(both)}")
    dropped = [key for key in refuses if merged.get(key) is not None]
    set_keys = [key for key in family.one_of if merged.get(key) is not None]
    if len(set_keys) > 1:
        keep = both[0] if both else set_keys[0]
        dropped += [key for key in set_keys if key != keep]
    notes = [f"{key}={merged[key]!r} not sent: {where}" for key in dropped]
    params = {key: value for key, value in merged.items() if key not in dropped}
    sampled = [key for key in SAMPLERS if key in family.refuses and params.get(key) is not None]
    if sampled and effort is None and family.default_effort in family.samples_at:
        # named, though it is the API's default: the SDK keeps a sampling key only when it sees it
        params[EFFORT] = family.default_effort
        notes.append(f"{EFFORT}={family.default_effort} sent (the API's default) with {sampled[0]}: {where}")
    for advice in family.advises:
        if advice.key not in chosen and params.get(advice.key) not in (None, advice.value):
            notes.append(
                f"{advice.key}={params[advice.key]!r} sent as the protocol states; {spec} ({family.name}): "
                f"{advice.why}; -M {advice.key}={advice.value} follows the vendor ({family.source})"
            )
    return Fitted(params, notes)
