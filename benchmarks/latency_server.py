"""A stand-in OpenAI-protocol model server with a fixed latency, in its own process.

Run: `python -m benchmarks.latency_server --latency-ms 100 --log answered.tsv [--record bodies.jsonl]`;
it prints its URL, then serves until its stdin closes. Being its own process,
it takes no interpreter time from the run it serves (`benchmarks.runs` reports
its CPU beside the client's). Every answered request is appended to the log as
`<sha256 of the body>\t<unix time answered>`, which the benchmarks read to
count model calls and repeated calls; with `--record`, its JSON body too, one
a line, so the same requests can be replayed by other clients. A request whose
image list is empty gets a `Left: ...` / `Right: ...` answer, one with images a
description, and one asking for structured output the least instance of its
schema (`tests.standins.schema_replies`): enough for every strategy to finish.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.standins.protocols import OpenAIChat
from tests.standins.schema_replies import minimal_reply, output_schema
from tests.standins.server import StandInServer


def has_image(body: Any) -> bool:
    return any(
        isinstance(part, dict) and part.get("type") == "image_url"
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for part in message["content"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency-ms", type=float, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--record", type=Path, help="append every request's JSON body here, one a line")
    args = parser.parse_args()
    lock = threading.Lock()
    log = args.log.open("a", encoding="utf-8", buffering=1)
    record = args.record.open("a", encoding="utf-8") if args.record else None

    with StandInServer(OpenAIChat()) as server:

        def respond(body: Any) -> str:
            text = json.dumps(body, sort_keys=True)
            with lock:
                log.write(f"{hashlib.sha256(text.encode()).hexdigest()}\t{time.time()}\n")
                if record is not None:
                    record.write(json.dumps(body) + "\n")
                    record.flush()
                server.requests.clear()  # the log is the record: the server's list would grow with the run
            if output_schema(body) is not None:
                return minimal_reply(body)
            return "a figure made of one line" if has_image(body) else "Left: one line\nRight: two lines"

        server.responder = respond
        server.latency_s = args.latency_ms / 1000
        print(server.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
