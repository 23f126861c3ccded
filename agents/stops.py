"""Why a reply stopped short of an answer: the model refused, a safety or content filter blocked
it, or it was cut at the token limit.

Each provider says so its own way: OpenAI a `refusal` field and the `content_filter` finish
reason, Anthropic the `refusal` stop reason, Gemini a blocked prompt (`promptFeedback.blockReason`)
or a SAFETY / RECITATION / BLOCKLIST... finish reason (every one of its finish reasons is named
here: a test holds the list to google-genai's), all of them their own word for the token limit.
Read here into one `ReplyStop`, kept with the call and counted apart from wrong answers and format
errors, so a blank or unparseable reply says what it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage

from datasets_io.records import StopKind

TOKEN_LIMIT_REASONS = frozenset(
    {"length", "max_tokens", "MAX_TOKENS", "model_length", "model_context_window_exceeded"}
)
"""The token limit as OpenAI and OpenAI-compatible servers, Anthropic, Gemini and Ollama say it."""
BLOCKING_REASONS = frozenset(
    {
        "content_filter",  # OpenAI (and Azure OpenAI)
        "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",  # Gemini's FinishReason
        "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
    }
)  # fmt: skip
SERVICE_STOPS = frozenset(
    {"LANGUAGE", "OTHER", "IMAGE_OTHER", "NO_IMAGE", "MODEL_ARMOR", "ESCALATION", "PUP_LIMITED_DISABLED"}
)
"""Gemini's other reasons for ending a reply the model did not finish, none of them its answer: an
unsupported language, an unnamed cause, its own guards; read as blocked."""
UNFINISHED_REASONS = frozenset(
    {
        "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS",
        "MISSING_THOUGHT_SIGNATURE", "MALFORMED_RESPONSE", "CONTINUATION",
    }
)  # fmt: skip
"""Gemini's reasons for a reply that ended malformed or unfinished (a structured answer's function
call it could not form...): read as cut, since what it wrote may still be judged."""
REFUSAL_REASONS = frozenset({"refusal"})
"""Anthropic's stop reason when its classifiers stop a reply (Claude 4 and later)."""
CUT_CHARS = "bongard_cut_from_chars"
"""Response metadata of a reply cut at the agent's reply limit: how long it was."""
REASON_CHARS = 200


@dataclass(frozen=True)
class ReplyStop:
    kind: StopKind
    reason: str
    """The provider's own words: `finish_reason content_filter`, `refusal: I can't help with that`."""


def reply_stop(message: AIMessage) -> ReplyStop | None:
    """Why the reply stopped short, as its provider says; None for a reply that ended normally."""
    metadata = message.response_metadata or {}
    refusal = message.additional_kwargs.get("refusal") or metadata.get("refusal")
    if refusal:
        return ReplyStop("refused", f"refusal: {str(refusal)[:REASON_CHARS]}")
    blocked_prompt = _enum_name((metadata.get("prompt_feedback") or {}).get("block_reason"))
    if blocked_prompt:
        return ReplyStop("blocked", f"prompt blocked: {blocked_prompt}")
    field, reason = _finish(metadata)
    said = f"{field} {reason}"
    if reason in REFUSAL_REASONS:
        return ReplyStop("refused", said)
    if reason in BLOCKING_REASONS | SERVICE_STOPS:
        return ReplyStop("blocked", said)
    if reason in TOKEN_LIMIT_REASONS | UNFINISHED_REASONS:
        return ReplyStop("cut", said)
    if CUT_CHARS in metadata:
        return ReplyStop("cut", f"reply of {metadata[CUT_CHARS]} characters cut at max_reply_chars")
    return None


def _finish(metadata: dict[str, Any]) -> tuple[str, str]:
    for field in ("finish_reason", "stop_reason", "done_reason"):
        if metadata.get(field):
            return field, _enum_name(metadata[field])
    return "finish_reason", ""


def _enum_name(value: Any) -> str:
    """An SDK enum's name (`BlockedReason.SAFETY` -> `SAFETY`), a string as it is; "" for none
    (Gemini's 0, BLOCKED_REASON_UNSPECIFIED, means not blocked)."""
    if value is None or value == 0:
        return ""
    name = getattr(value, "name", None) or str(getattr(value, "value", value))
    return "" if name.endswith("UNSPECIFIED") else str(name)
