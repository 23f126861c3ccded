"""Structured output: finding, validating and re-asking for JSON that fits a schema.

Where a backend constrains decoding (OpenAI / vLLM / llama.cpp JSON schema,
Gemini response schema, Anthropic forced tool use) its LangChain integration
does it through `with_structured_output`; these helpers serve the rest, and
the one re-ask every backend gets after an invalid reply.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel, ValidationError

from agents.call import schema_json
from datasets_io.errors import BongardError, describe_validation_error

FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
OutputSchema = type[BaseModel] | dict[str, Any]
TRUNCATION_REASONS = {"length", "max_tokens", "MAX_TOKENS", "model_length"}


class ReplyParseError(BongardError, ValueError):
    """A reply that holds no JSON value fitting the schema."""


def extract_json(text: str) -> Any:
    """The first JSON object or array in `text`, inside a code fence or bare."""
    candidates = [match.group(1) for match in FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start, char in enumerate(candidate):
            if char in "{[":
                try:
                    value, _ = decoder.raw_decode(candidate, start)
                except json.JSONDecodeError:
                    continue
                return value
    raise ReplyParseError("the reply contains no JSON object")


def validate_output(data: Any, schema: OutputSchema) -> dict[str, Any]:
    """`data` checked against a pydantic model or a JSON schema, as plain JSON types."""
    if isinstance(schema, dict):
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


def is_truncated(message: AIMessage) -> bool:
    """Whether the provider says the reply stopped at the token limit."""
    metadata = message.response_metadata or {}
    reason = metadata.get("finish_reason") or metadata.get("stop_reason") or metadata.get("done_reason")
    return str(reason) in TRUNCATION_REASONS


CUT_REPLY_ERROR = (
    "the reply was cut at the token limit (max_tokens) before its structured output was complete"
)


def cut_reply(error: BaseException) -> AIMessage | None:
    """The reply inside an SDK's refusal to parse a reply cut at the token limit (the OpenAI SDK's
    `LengthFinishReasonError`, raised by every integration on it), as a truncated message; None
    for any other error."""
    completion = getattr(error, "completion", None)
    if type(error).__name__ != "LengthFinishReasonError" or completion is None:
        return None
    usage = getattr(completion, "usage", None)
    counts = (getattr(usage, "prompt_tokens", 0) or 0, getattr(usage, "completion_tokens", 0) or 0)
    return AIMessage(
        content=completion.choices[0].message.content or "",
        response_metadata={"finish_reason": "length"},
        usage_metadata={"input_tokens": counts[0], "output_tokens": counts[1], "total_tokens": sum(counts)},
    )


def message_text(message: AIMessage) -> str:
    """The reply's text, or its tool-call arguments as JSON when it answered through a tool."""
    text = message.text if isinstance(message.text, str) else str(message.text)
    if not text.strip() and message.tool_calls:
        return json.dumps(message.tool_calls[0]["args"], ensure_ascii=False)
    return text
