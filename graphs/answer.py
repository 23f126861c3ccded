"""What a strategy returns (the `Answer` record and its parts) and how free-form rules are read."""

from __future__ import annotations

import re

from datasets_io.records import Answer, AnswerParts, CallTrace

__all__ = ["RULE_LINE", "Answer", "AnswerParts", "CallTrace", "parse_rules"]

RULE_LINE = re.compile(
    r"^[\s*#>\-]*(left|right)(?:\s+side)?\s*[*]*\s*[:\-\u2013\u2014]\s*(.+?)\s*$", re.IGNORECASE
)


def parse_rules(text: str) -> tuple[str | None, str | None]:
    """The `Left: ...` and `Right: ...` lines of a free-form answer, where it has them."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = RULE_LINE.match(line)
        if match and match.group(1).lower() not in found:
            found[match.group(1).lower()] = match.group(2).strip(" *")
    return found.get("left"), found.get("right")
