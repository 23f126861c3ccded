"""Lines an agent that is no language model adds to a reply for agents that read call metadata.

The perception agent ends a description with a `perception-features:` line of about fifty numbers
per panel, so that a later perception call, given the earlier replies as notes, knows the panels.
A language model reading the same description gains nothing from them, and a small local model's
context fills with them (a descriptive prompt of twelve descriptions passed 8,192 tokens): every
prompt a model reads is filled without these lines, and the notes keep them.
"""

from __future__ import annotations

FEATURES_MARK = "perception-features:"
"""The start of the perception agent's line of measured features."""


def for_prompt(text: str) -> str:
    """`text` without its machine notes: what a language model reads of it."""
    if FEATURES_MARK not in text:
        return text
    return "\n".join(line for line in text.splitlines() if not line.startswith(FEATURES_MARK))


def notes_of(text: str) -> str:
    """The machine notes of `text` alone (empty when it has none): what a structured reply's parse
    drops and a later call of the agent that wrote them reads."""
    if FEATURES_MARK not in text:
        return ""
    return "\n".join(line for line in text.splitlines() if line.startswith(FEATURES_MARK))
