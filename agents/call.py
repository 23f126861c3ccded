"""What travels with every model call beside its messages, and what comes back.

LLM agents ignore the metadata; non-LLM agents (the offline perception agent,
the similarity classifier) act on it and never parse prompt text.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from datasets_io.problem import Panel
from datasets_io.records import OutputMode, StopKind

TaskKind = Literal[
    "chat",
    "describe",
    "compare",
    "answer",
    "classify",
    "select",
    "judge",
    "probe",
    "hypothesize",
    "generate",
    "ground",
    "propose",
]


class ImageSource(BaseModel):
    """One image a call sends and the panels behind it (twelve for a sheet, one for a panel)."""

    model_config = ConfigDict(frozen=True)

    path: Path
    panels: list[Panel] = Field(default_factory=list)
    layout: Literal["panel", "sheet", "strip"] = "panel"


class CallSpec(BaseModel):
    """The structured side of a call: its task kind, expected output schema and images.

    `images` lists every image in the order it appears in the messages.
    `output_schema` is what the reply must validate against: a pydantic model
    class, or a JSON schema as a dict (as `bongard ask --schema` reads from a file).
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    task: TaskKind = "chat"
    output_schema: type[BaseModel] | dict[str, Any] | None = None
    images: list[ImageSource] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)
    """Free-form task details for non-LLM agents (candidate labels, the side asked about...)."""

    def fingerprint(self) -> dict[str, Any]:
        """A JSON-able summary that identifies the call, for cache keys."""
        return {
            "task": self.task,
            "schema": schema_json(self.output_schema) if self.output_schema is not None else None,
            "images": [
                {"path": str(i.path), "layout": i.layout, "panels": [p.ref for p in i.panels]}
                for i in self.images
            ],
            "extra": self.extra,
        }


def schema_json(schema: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of an output schema, always with a title (OpenAI names schemas by it).
    A model class's is made once (it is asked for on every call): read it, do not change it."""
    data = schema if isinstance(schema, dict) else _model_schema(schema)
    return data if "title" in data else {"title": "reply", **data}


@functools.cache
def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


class Usage(BaseModel):
    input_tokens: int = 0
    """Every input token, cached ones included."""
    output_tokens: int = 0
    """Every output token, reasoning ones included (as the providers count and price them)."""
    cache_read_tokens: int = 0
    """The input tokens read from the provider's prompt cache, priced at their own rate."""
    cache_write_tokens: int = 0
    """The input tokens written to the provider's prompt cache (Anthropic's cache creation), priced
    at their own rate."""
    reported: bool = True
    """False where a reply came without usage: its tokens are unknown, so is its cost."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reported=self.reported and other.reported,
        )


ParseStatus = Literal["not-requested", "ok", "failed"]


class AgentReply(BaseModel):
    """A model's answer to one call, with what it cost and how it was obtained.

    A reply whose structured output could not be parsed, even after one
    re-ask, still comes back: `parse_status` is "failed" and `parse_error` says why. A reply the
    model refused, a filter blocked or the token limit cut says so in `stop` (`agents.stops`).
    `cost_usd` is None when the model's price is unknown (never reported as 0).
    """

    agent: str
    text: str
    parsed: dict[str, Any] | None = None
    parse_status: ParseStatus = "not-requested"
    parse_error: str | None = None
    stop: StopKind | None = None
    stop_reason: str | None = None
    """The provider's words for `stop`."""
    output_mode: OutputMode | None = None
    """How the call's output schema went out (None: the call had none)."""
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    latency_s: float = 0.0
    cache_hit: bool = False
    attempts: int = 1

    @model_validator(mode="before")
    @classmethod
    def _read_truncated(cls, data: Any) -> Any:
        """A reply cached before stops were told apart kept only `truncated`."""
        if isinstance(data, dict) and data.get("truncated") and not data.get("stop"):
            return {**data, "stop": "cut", "stop_reason": "token limit (recorded before reasons were kept)"}
        return data

    @property
    def truncated(self) -> bool:
        return self.stop == "cut"
