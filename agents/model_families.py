"""What each model family accepts of the sampling parameters, as its provider documents it.

A paper states a decoding (the cognitive paradigms: temperature 0; Bongard-RWR+: 0.5) and judges
decide at temperature 0, but current models do not all take it: OpenAI's reasoning models (o1,
o3, o4-mini, the gpt-5 family) refuse `temperature` and `top_p`, and Claude models from 4.5 on
refuse `temperature` together with `top_p`. Such a request fails with a 400 on every call.

So a decoding the toolkit chose (a paper's, a judge's) that a model cannot take is not sent, and
the agent says which keys it left out and why (`Fitted.dropped`, recorded with a run); a key the
user set (`-M`, a config table) that the model refuses is refused before anything runs, in one
line. A model of no listed family gets every key, as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from datasets_io.errors import BongardError


class DecodingRefused(BongardError, ValueError):
    """A sampling parameter the user set that the model's API refuses."""


@dataclass(frozen=True)
class ModelFamily:
    """Models of one provider whose names match `pattern`, and the sampling keys their API refuses."""

    name: str
    providers: tuple[str, ...]
    pattern: str
    """A regular expression the whole model name (without a provider's `@URL`) matches."""
    refuses: tuple[str, ...] = ()
    """Keys never to send, whatever their value."""
    one_of: tuple[str, ...] = ()
    """Keys of which at most one may be sent."""
    orders_properties: bool = False
    """Keeps a structured answer's keys in the schema's order only when told (`propertyOrdering`), so
    a reasoning field meant to come before the answer may come after it."""
    source: str = ""
    """Where the provider documents the rule."""

    def matches(self, provider: str, model: str) -> bool:
        return provider in self.providers and re.fullmatch(self.pattern, model) is not None

    def rule(self) -> str:
        """The rule in words, for messages and the documentation's table."""
        parts = []
        if self.refuses:
            parts.append(f"takes no {' or '.join(self.refuses)}")
        if self.one_of:
            parts.append(f"takes {' or '.join(self.one_of)}, not both")
        if self.orders_properties:
            parts.append("keeps a structured answer's keys in order only as propertyOrdering lists them")
        return "; ".join(parts)


FAMILIES = (
    ModelFamily(
        "OpenAI reasoning models (o1, o3, o4-mini, gpt-5)",
        ("openai",),
        r"(o\d+(-mini|-pro|-preview)?|gpt-5(\.\d+)?(-mini|-nano|-pro|-codex)?)(-\d{4}-\d{2}-\d{2})?",
        refuses=("temperature", "top_p"),
        source="OpenAI API reference, reasoning models: unsupported parameters",
    ),
    ModelFamily(
        "OpenAI chat models (gpt-4o, gpt-4.1, gpt-5-chat)",
        ("openai",),
        r".*",
        refuses=("reasoning_effort",),
        source="OpenAI API reference: reasoning_effort is for reasoning models only",
    ),
    ModelFamily(
        "Claude 4.5 and later",
        ("anthropic",),
        r"claude-(opus|sonnet|haiku)-(4-[5-9]|4\.[5-9]|[5-9](-\d+)?)(-\d{8})?|claude-[5-9].*",
        one_of=("temperature", "top_p"),
        source="Anthropic Messages API: temperature and top_p cannot both be set for these models",
    ),
    ModelFamily(
        "Gemini 2.0 and earlier",
        ("gemini",),
        r"gemini-(1\.\d+|2\.0)(-.*)?",
        orders_properties=True,
        source="Gemini API, structured output: models before 2.5 keep keys in order as propertyOrdering says",
    ),
)


def family_of(provider: str, model: str) -> ModelFamily | None:
    return next((family for family in FAMILIES if family.matches(provider, model)), None)


@dataclass(frozen=True)
class Fitted:
    """The parameters to send, and each default left out with why."""

    params: dict[str, Any]
    dropped: list[str] = field(default_factory=list)


def fit_decoding(provider: str, model: str, chosen: Mapping[str, Any], defaults: Mapping[str, Any]) -> Fitted:
    """`defaults` (a paper's or a judge's decoding) under `chosen` (what the user set), less what
    the model's family refuses. A chosen key it refuses is a `DecodingRefused` naming the key."""
    family = family_of(provider, model)
    merged = {**defaults, **chosen}
    if family is None:
        return Fitted(merged)
    spec = f"{provider}:{model}"
    refused = [key for key in family.refuses if chosen.get(key) is not None]
    if refused:
        raise DecodingRefused(f"{spec} {family.rule()} ({family.name}): drop -M {' and -M '.join(refused)}")
    both = [key for key in family.one_of if chosen.get(key) is not None]
    if len(both) > 1:
        raise DecodingRefused(
            f"{spec} {family.rule()} ({family.name}): keep one of -M {' or -M '.join(both)}"
        )
    dropped = [key for key in family.refuses if merged.get(key) is not None]
    set_keys = [key for key in family.one_of if merged.get(key) is not None]
    if len(set_keys) > 1:
        keep = both[0] if both else set_keys[0]
        dropped += [key for key in set_keys if key != keep]
    notes = [f"{key}={merged[key]!r} not sent: {spec} {family.rule()} ({family.name})" for key in dropped]
    return Fitted({key: value for key, value in merged.items() if key not in dropped}, notes)
