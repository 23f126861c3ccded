"""A run's recorded requests sent again by inspect_ai, as an inspect evaluation sends its model calls.

Run as a child process by `benchmarks.runs`: `python -m benchmarks.inspect_replay URL BODIES.jsonl C`.
Each sample holds `CALLS_PER_ITEM` of the recorded requests (a descriptive item's calls) and sends
them one after another through inspect's `openai` provider (`get_model().generate`, so each call
makes inspect's model event, transcript and usage records), `C` samples and connections at once. The
evaluation's log goes to a temporary folder, written as inspect writes it at the end.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, get_model, messages_from_openai
from inspect_ai.solver import Generate, Solver, TaskState, solver

CALLS_PER_ITEM = 13
"""A descriptive item's calls: twelve panel descriptions and the reasoning over them."""


@solver
def replay(bodies: list[dict[str, Any]]) -> Solver:
    """Send the sample's recorded requests (`metadata.first` on, `CALLS_PER_ITEM` of them) in turn."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        first = int(state.metadata["first"])
        for body in bodies[first : first + CALLS_PER_ITEM]:
            messages = await messages_from_openai(body["messages"])
            config = GenerateConfig(temperature=body.get("temperature"), max_tokens=body.get("max_tokens"))
            state.output = await model.generate(messages, config=config)
        return state

    return solve


def main() -> None:
    url, recorded, concurrency = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    bodies = [json.loads(line) for line in recorded.read_text(encoding="utf-8").splitlines()]
    samples = [
        Sample(input="the recorded requests", id=number, metadata={"first": first})
        for number, first in enumerate(range(0, len(bodies), CALLS_PER_ITEM), 1)
    ]
    with tempfile.TemporaryDirectory(prefix="bongard-inspect-replay-") as logs:
        [log] = eval(
            Task(dataset=MemoryDataset(samples), solver=replay(bodies)),
            model="openai/stand-in",
            model_base_url=url,
            model_args={"responses_api": False},  # the run's Chat Completions, which the stand-in serves
            max_samples=concurrency,
            max_connections=concurrency,
            max_retries=0,
            log_dir=logs,
            display="none",
        )
    if log.status != "success":
        raise SystemExit(f"the inspect evaluation ended {log.status}: {log.error}")


if __name__ == "__main__":
    main()
