"""Runaway structured replies: valid JSON followed by junk, read the old way and the new, side by side.

Run from the repository root: `python -m benchmarks.replies [--sizes 16,32,64,128]`. The old way
is LangChain's `JsonOutputParser`, which `with_structured_output` ran on every constrained reply
(partial-JSON repair, quadratic in the reply); the new is `agents.structured.parse_reply` (the first
complete JSON value, linear). The last column is a whole managed call through a stand-in
OpenAI-protocol server on 127.0.0.1 with the new parse (the stand-in's threads counted too). CPU
time of this process, so other load on the machine changes it less than wall time; the ratio is
the figure to read.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import tempfile
import time
from collections.abc import Callable

from langchain_core.messages import HumanMessage
from langchain_core.output_parsers import JsonOutputParser
from pydantic import BaseModel

from agents.call import CallSpec
from agents.registry import resolve_agent
from agents.structured import parse_reply
from tests.standins.protocols import OpenAIChat
from tests.standins.server import StandInServer

KIB = 1024


class Rule(BaseModel):
    left: str
    right: str


def runaway(size: int) -> str:
    """A reply of `size` characters: a valid answer, then junk."""
    text = json.dumps({"left": "circles", "right": "triangles"}) + " and so on"
    return text + " junk" * ((size - len(text)) // 5)


def reply_with(text: str, body: object) -> str:
    return text


def cpu_seconds(work: Callable[..., object], *args: object) -> float:
    started = time.process_time()
    work(*args)
    return time.process_time() - started


def managed_call(url: str) -> None:
    agent = resolve_agent(f"openai-compatible:m@{url}/v1", {"cache": False})
    reply = asyncio.run(agent.acall([HumanMessage(content="Solve.")], CallSpec(output_schema=Rule)))
    assert reply.parsed == {"left": "circles", "right": "triangles"}, reply.parse_error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="16,32,64,128", help="reply sizes in KiB, comma-separated")
    args = parser.parse_args()
    os.environ.setdefault("BONGARD_HOME", tempfile.mkdtemp(prefix="bongard-bench-"))
    print(f"{'reply':>8}  {'LangChain parser':>16}  {'parse_reply':>11}  {'ratio':>9}  {'managed call':>12}")
    with StandInServer(OpenAIChat(), functools.partial(reply_with, runaway(KIB))) as server:
        managed_call(server.url)  # warm up: imports and the first client
        for size in (int(kib) * KIB for kib in args.sizes.split(",")):
            text = runaway(size)
            server.responder = functools.partial(reply_with, text)
            old = cpu_seconds(JsonOutputParser().parse, text)
            new = cpu_seconds(parse_reply, text, Rule)
            call = cpu_seconds(managed_call, server.url)
            print(
                f"{size // KIB:>5} KiB  {old:>14.3f} s  {new * 1000:>8.3f} ms  {old / max(new, 1e-9):>8.0f}x"
                f"  {call * 1000:>9.1f} ms"
            )


if __name__ == "__main__":
    main()
