"""Structured output: finding, validating and re-asking for JSON that fits a schema.

Where a backend constrains decoding (OpenAI / vLLM / llama.cpp JSON schema,
Gemini response schema, Anthropic forced tool use) its LangChain integration
sets the request up through `with_structured_output`; every reply, constrained
or not, is read here, in time linear in its length, after being cut to the
agent's reply limit. LangChain's own JSON parser is not used: it repairs
partial JSON in quadratic time (68 s for a 128 KiB reply of JSON and junk) in a
worker thread that no timeout stops.
"""

from __future__ import annotations

import json
import re
from itertools import islice
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ValidationError

from agents.call import schema_json
from agents.stops import CUT_CHARS
from datasets_io.errors import BongardError, describe_validation_error

FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
JSON_OPENING = re.compile(r"[{\[]")
OPENINGS_TRIED = 8
"""Openings (`{` or `[`) tried per candidate text: a reply's JSON starts at one of its first few
(after a word in brackets, say), and each try may read to the end, so a bound keeps the parse linear."""
OutputSchema = type[BaseModel] | dict[str, Any]


class ReplyParseError(BongardError, ValueError):
    """A reply that holds no JSON value fitting the schema."""


def extract_json(text: str) -> Any:
    """The first complete JSON object or array in `text`, inside a code fence or bare; whatever
    follows it is ignored."""
    candidates = [match.group(1) for match in FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for opening in islice(JSON_OPENING.finditer(candidate), OPENINGS_TRIED):
            try:
                value, _ = decoder.raw_decode(candidate, opening.start())
            except (json.JSONDecodeError, RecursionError):  # RecursionError: nested past the stack
                continue
            return value
    raise ReplyParseError("the reply contains no JSON object")


def validate_output(data: Any, schema: OutputSchema) -> dict[str, Any]:
    """`data` checked against a pydantic model or a JSON schema, as plain JSON types."""
    if isinstance(schema, dict):
        import jsonschema  # only for JSON-schema outputs: 25 ms of start-up a pydantic schema spares

        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
        if error is not None:
            where = ".".join(map(str, error.absolute_path)) or "reply"
            raise ReplyParseError(f"{where}: {error.message}")
        if not isinstance(data, dict):
            raise ReplyParseError("the reply is not a JSON object")
        return data
    try:
        return schema.model_validate(data).model_dump(mode="json")
    except ValidationError as error:
        raise ReplyParseError(describe_validation_error(error)) from None


def parse_reply(text: str, schema: OutputSchema) -> dict[str, Any]:
    """The reply's JSON validated against `schema`, as plain JSON types."""
    return validate_output(extract_json(text), schema)


def parse_message(message: AIMessage, schema: OutputSchema) -> dict[str, Any]:
    """A reply's structured output validated: the arguments of its first tool call when it answered
    through a tool (as forced tool use does), else the first JSON value in its text."""
    if message.tool_calls:
        return validate_output(message.tool_calls[0]["args"], schema)
    return parse_reply(message_text(message), schema)


def schema_instructions(schema: OutputSchema) -> str:
    """What a prompt adds when the backend cannot constrain its output itself."""
    return (
        "Reply with one JSON object and nothing else. It must validate against this JSON schema:\n"
        + json.dumps(schema_json(schema), ensure_ascii=False)
    )


def reask_message(error: str) -> HumanMessage:
    """The one follow-up turn sent after an invalid structured reply."""
    return HumanMessage(
        content=(
            "Your previous reply could not be used: "
            f"{error}. Send the complete answer again as one JSON object that fits the schema, "
            "with no other text."
        )
    )


def bounded(message: AIMessage, limit: int) -> AIMessage:
    """The reply cut to its first `limit` characters, ending with a line that says so; the reply
    itself when it fits. Whatever comes after is stored, cached, parsed and judged at this size."""
    text = message_text(message)
    if len(text) <= limit:
        return message
    note = f"\n[reply cut: its first {limit} of {len(text)} characters kept (max_reply_chars)]"
    return AIMessage(
        content=text[:limit] + note,
        tool_calls=message.tool_calls,
        response_metadata={**message.response_metadata, CUT_CHARS: len(text)},
        usage_metadata=message.usage_metadata,
    )


def constrained_model(structured: Runnable[Any, Any]) -> Runnable[Any, Any] | None:
    """The chat model bound to constrained decoding inside `with_structured_output(..., include_raw=True)`,
    which every LangChain integration builds as `{"raw": bound model} | parser`; None when it is
    built some other way. Calling it alone leaves the parse to `parse_message`."""
    steps = getattr(getattr(structured, "first", None), "steps__", None)
    raw = steps.get("raw") if isinstance(steps, dict) else None
    return raw if isinstance(raw, Runnable) else None


CUT_REPLY_ERROR = (
    "the reply was cut at the token limit (max_tokens) before its structured output was complete"
)
FILTERED_REPLY_ERROR = "the reply was stopped by the provider's content filter"
STOPPED_REPLY_ERRORS = {"length": CUT_REPLY_ERROR, "content_filter": FILTERED_REPLY_ERROR}
"""Why a structured reply that stopped short has no structured output, by its finish reason."""
SDK_STOPS = {"LengthFinishReasonError": "length", "ContentFilterFinishReasonError": "content_filter"}
"""The OpenAI SDK's refusals to parse a structured reply that stopped short (raised by every
integration built on it), by the finish reason behind each."""


def stopped_reply(error: BaseException) -> tuple[AIMessage, str] | None:
    """The reply inside an SDK's refusal to parse a structured reply cut at the token limit or
    stopped by the content filter, as a message with that finish reason (its usage unknown when the
    SDK kept none), and why it has no structured output; None for any other error."""
    stop = SDK_STOPS.get(type(error).__name__)
    completion = getattr(error, "completion", None)
    if stop is None or completion is None:
        return None
    usage = getattr(completion, "usage", None)
    counts = (getattr(usage, "prompt_tokens", 0) or 0, getattr(usage, "completion_tokens", 0) or 0)
    message = AIMessage(
        content=completion.choices[0].message.content or "",
        response_metadata={"finish_reason": stop},
        usage_metadata=None
        if usage is None
        else {"input_tokens": counts[0], "output_tokens": counts[1], "total_tokens": sum(counts)},
    )
    return message, STOPPED_REPLY_ERRORS[stop]


def message_text(message: AIMessage) -> str:
    """The reply's text, or its tool-call arguments as JSON when it answered through a tool."""
    text = message.text if isinstance(message.text, str) else str(message.text)
    if not text.strip() and message.tool_calls:
        return json.dumps(message.tool_calls[0]["args"], ensure_ascii=False)
    return text
