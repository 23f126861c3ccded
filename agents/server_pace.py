"""How fast a local llama.cpp server reads prompts and writes replies, and the time an attempt gets.

A fixed timeout fits no CPU server: SmolLM2-135M wrote 14 tokens/s on one core and 0.75 under load
with every core, and a 120 s timeout then cut every call, which was sent again and cut again. So the
server is timed when it starts (a short completion) and again by every reply (llama.cpp's
`timings`), and each attempt is given the time its prompt and its reply limit take at the latest
speeds, three times over and at least a minute. `-M timeout_s=N` fixes the time instead.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MARGIN = 3.0
"""How many times the expected time an attempt gets: speeds move with the machine's load."""
MIN_ATTEMPT_S = 60.0
PROBE_TOKENS = 32
PROBE_PROMPT = " ".join(["A panel shows a small black triangle above a large white circle."] * 16)
"""About 200 tokens: enough to time the reading, as a run's prompts are read."""
MIN_READ = 64
MIN_WRITTEN = 16
"""Fewer tokens than these in a reply time nothing reliably: the earlier speed is kept."""


@dataclass(frozen=True)
class Pace:
    """Tokens per second a server reads (its prompt) and writes (its reply)."""

    reading: float
    writing: float

    def attempt_s(self, prompt_tokens: int, reply_tokens: int) -> float:
        """The time an attempt with this prompt and reply limit is given."""
        expected = prompt_tokens / self.reading + reply_tokens / self.writing
        return max(MIN_ATTEMPT_S, MARGIN * expected)

    def text(self) -> str:
        return f"{self.reading:.0f} tokens/s reading, {self.writing:.1f} tokens/s writing"


PACES: dict[str, Pace] = {}
"""The latest pace of each server this process runs, by its root URL."""
PROBED: set[str] = set()


def timed(root: str, timings: Mapping[str, Any]) -> None:
    """Take a reply's `timings` as the server's pace, each speed only where enough tokens timed it."""
    earlier = PACES.get(root)
    reading = _rate(timings, "prompt", MIN_READ) or (earlier.reading if earlier else None)
    writing = _rate(timings, "predicted", MIN_WRITTEN) or (earlier.writing if earlier else None)
    if reading and writing:
        PACES[root] = Pace(reading, writing)


def _rate(timings: Mapping[str, Any], part: str, enough: int) -> float | None:
    count, rate = timings.get(f"{part}_n"), timings.get(f"{part}_per_second")
    if isinstance(count, int | float) and isinstance(rate, int | float) and count >= enough and rate > 0:
        return float(rate)
    return None


def probe_once(root: str, timeout_s: float) -> None:
    """Time a server that just started with one short completion (its reply's `timings`); a server
    that does not answer in time is left untimed, and its attempts get the fixed timeout."""
    if root in PROBED:
        return
    PROBED.add(root)
    body = {"prompt": PROBE_PROMPT, "n_predict": PROBE_TOKENS, "ignore_eos": True, "cache_prompt": False}
    request = urllib.request.Request(
        f"{root}/completion", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            timed(root, json.loads(response.read()).get("timings") or {})
    except (OSError, ValueError):
        return
