"""A request too long for the context a local server gives it, refused before it is sent.

Ollama cuts a longer prompt silently; llama.cpp answers it with HTTP 400 after the request was
queued behind others. Either way the same request fails again the same way, so it is refused at
once, with the setting that would hold it, and never offered to `--retry-errors`.
"""

from __future__ import annotations


class ContextTooSmall(ValueError):
    """A request longer than the server's context for one request. Sent again it is as long."""

    retryable = False
