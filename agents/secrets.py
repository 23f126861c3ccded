"""API keys come from the environment or a `.env` file and never leave the process.

`redact` is applied to every error text the agents layer produces and to every reply before it is
kept, so a key an SDK or a server echoes back, as it is or base64-encoded (in a `Basic` header, a
token, a data URL), cannot reach a log, the cache, the store or the terminal.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from dotenv import load_dotenv

SECRET_NAME = re.compile(r"(API_KEY|_TOKEN|_SECRET|_PASSWORD)$")
MIN_SECRET_LENGTH = 6
REDACTED = "[redacted]"
T = TypeVar("T")


def load_env_file(path: Path | None = None) -> None:
    """Read `.env` (or `path`) into the environment without overriding what is set."""
    load_dotenv(dotenv_path=path or Path(".env"), override=False)


def secret_values() -> list[str]:
    """Values of every environment variable whose name marks it as a secret (read now: a key set
    during a run counts from then on)."""
    values = {
        value
        for name in _secret_names(tuple(os.environ))
        if len(value := os.environ.get(name, "")) >= MIN_SECRET_LENGTH
    }
    return sorted(values, key=len, reverse=True)


@lru_cache(maxsize=8)
def _secret_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """The names that mark a secret among the environment's (matched once per set of names, not on
    every call: every reply and error text is redacted)."""
    return tuple(name for name in names if SECRET_NAME.search(name.upper()))


@lru_cache(maxsize=64)
def secret_forms(value: str) -> tuple[str, ...]:
    """`value` and the runs of base64 characters that encode it inside any longer base64 text.

    Base64 turns 3 bytes into 4 characters, so a secret starting at byte offset 0, 1 or 2 of the
    encoded data reads differently; each offset has a core of characters that depend on the
    secret's bytes alone (the first and last character may mix in its neighbours). Standard and
    URL-safe alphabets both.
    """
    raw = value.encode()
    forms = {value}
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
        first = -(-8 * offset // 6)  # the first character made of the secret's bits only
        last = 8 * (offset + len(raw)) // 6  # one past the last such character
        core = encoded[first:last]
        forms |= {core, core.replace("+", "-").replace("/", "_")}
    return tuple(sorted(forms, key=len, reverse=True))


def redact(text: str, secrets: Sequence[str] | None = None) -> str:
    """`text` with every secret value, plain or base64-encoded, replaced; `secrets`: the
    `secret_values` read once for several texts (each read walks the whole environment)."""
    for value in secret_values() if secrets is None else secrets:
        for form in secret_forms(value):
            text = text.replace(form, REDACTED)
    return text


def redact_value(value: T, secrets: Sequence[str] | None = None) -> T:
    """A JSON-like value (a parsed reply) with `redact` applied to every string in it."""
    found = secret_values() if secrets is None else secrets
    if isinstance(value, str):
        return redact(value, found)  # type: ignore[return-value]
    if isinstance(value, list):
        return [redact_value(item, found) for item in value]  # type: ignore[return-value]
    if isinstance(value, dict):
        return {key: redact_value(item, found) for key, item in value.items()}  # type: ignore[return-value]
    return value


def key_is_set(name: str) -> bool:
    return bool(os.environ.get(name))
