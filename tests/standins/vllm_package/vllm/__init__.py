"""A stand-in of vLLM's offline API (`vllm.LLM`, `vllm.SamplingParams`) for machines without a GPU.

Put its folder (`tests/standins/vllm_package`) first on a process's `PYTHONPATH` and `import vllm`
finds this instead of vLLM. Each process appends what the adapter asked of the engine API to its
own file, `$VLLM_STANDIN_RECORDS/<pid>.jsonl`: every engine made (model, engine arguments, the
`CUDA_VISIBLE_DEVICES` and Ray node it saw) and every conversation answered. Replies are what the
`descriptive` strategy takes (a panel's description; the two sides' rules), their words drawn
from the request, so each item's answer is its own.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

RECORDS_ENV = "VLLM_STANDIN_RECORDS"


def _record(entry: dict[str, Any]) -> None:
    folder = Path(os.environ[RECORDS_ENV])
    with (folder / f"{os.getpid()}.jsonl").open("a") as file:
        file.write(json.dumps({"pid": os.getpid(), **entry}) + "\n")


def _reply(conversation: list[dict[str, Any]]) -> str:
    digest = hashlib.sha256(json.dumps(conversation, sort_keys=True).encode()).hexdigest()[:8]
    content = conversation[-1]["content"]
    prompt = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
    if "How do the two sides differ" in prompt:
        return f"Left: shapes {digest}\nRight: lines {digest}"
    return f"a picture of {digest}"


class SamplingParams:
    def __init__(self, **settings: Any) -> None:
        self.settings = settings


class LLM:
    def __init__(self, model: str, **engine_args: Any) -> None:
        ray = sys.modules.get("ray")  # inside a Ray actor, the node it runs on
        _record(
            {
                "engine": {"model": model, **engine_args},
                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "node": ray.get_runtime_context().get_node_id() if ray else None,
            }
        )

    def chat(
        self,
        messages: list[list[dict[str, Any]]],
        sampling_params: SamplingParams | list[SamplingParams],
        use_tqdm: bool = True,
    ) -> list[SimpleNamespace]:
        replies = [_reply(conversation) for conversation in messages]
        _record({"replies": replies})
        return [
            SimpleNamespace(
                prompt_token_ids=[1] * 9,
                outputs=[SimpleNamespace(text=text, token_ids=[1] * 5, finish_reason="stop")],
            )
            for text in replies
        ]
