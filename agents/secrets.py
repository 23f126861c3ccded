"""API keys come from the environment or a `.env` file and never leave the process.

`redact` is applied to every error text the agents layer produces, so a key an
SDK echoes back cannot reach a log, the cache, the store or the terminal.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dotenv import load_dotenv

SECRET_NAME = re.compile(r"(API_KEY|_TOKEN|_SECRET|_PASSWORD)$")
MIN_SECRET_LENGTH = 6
REDACTED = "[redacted]"


def load_env_file(path: Path | None = None) -> None:
    """Read `.env` (or `path`) into the environment without overriding what is set."""
    load_dotenv(dotenv_path=path or Path(".env"), override=False)


def secret_values() -> list[str]:
    """Values of every environment variable whose name marks it as a secret."""
    values = {
        value
        for name, value in os.environ.items()
        if SECRET_NAME.search(name.upper()) and len(value) >= MIN_SECRET_LENGTH
    }
    return sorted(values, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` with every secret value replaced."""
    for value in secret_values():
        text = text.replace(value, REDACTED)
    return text


def key_is_set(name: str) -> bool:
    return bool(os.environ.get(name))
