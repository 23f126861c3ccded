"""The providers' batch APIs as `agents.batching` speaks them.

OpenAI (the Batch API guide): the requests as a JSONL file uploaded to `/files` (purpose `batch`),
a batch created on it (`/batches`, endpoint `/v1/chat/completions`, window 24h), its status read
until it is `completed`, `failed`, `expired` or `cancelled`, then its output and error files read
back: each line holds a request's `custom_id` and its `response` (status code and body) or `error`.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import httpx2

from agents.batching import Batch, BatchError, BatchResult

OPENAI_DONE = ("completed", "failed", "expired", "cancelled")


@dataclass(frozen=True)
class OpenAIBatches:
    call_path: str = "/chat/completions"
    endpoint: str = "/v1/chat/completions"
    window: str = "24h"

    async def submit(self, batch: Batch) -> str:
        """The batch created on an uploaded file of its requests: its id."""
        lines = "".join(
            json.dumps(
                {"custom_id": cid, "method": "POST", "url": self.endpoint, "body": body}, ensure_ascii=False
            )
            + "\n"
            for cid, body in batch.requests
        )
        uploaded = await _checked(
            batch.client.post(
                f"{batch.base_url}/files",
                headers=batch.headers,
                data={"purpose": "batch"},
                files={"file": ("requests.jsonl", lines.encode(), "application/jsonl")},
            ),
            "uploading the batch's requests",
        )
        created = await _checked(
            batch.client.post(
                f"{batch.base_url}/batches",
                headers=batch.headers,
                json={
                    "input_file_id": uploaded["id"],
                    "endpoint": self.endpoint,
                    "completion_window": self.window,
                },
            ),
            "creating the batch",
        )
        return str(created["id"])

    async def collect(self, batch: Batch, batch_id: str) -> tuple[str, dict[str, BatchResult]]:
        """The batch's final status, once it has one, and each answered request's result."""
        while True:
            state = await _checked(
                batch.client.get(f"{batch.base_url}/batches/{batch_id}", headers=batch.headers),
                f"reading batch {batch_id}",
            )
            if state["status"] in OPENAI_DONE:
                break
            await asyncio.sleep(batch.poll_s)
        if state["status"] == "failed":
            errors = "; ".join(e.get("message", "") for e in (state.get("errors") or {}).get("data", []))
            raise BatchError(f"OpenAI batch {batch_id} failed: {errors or 'no reason given'}")
        results: dict[str, BatchResult] = {}
        for kind in ("output_file_id", "error_file_id"):
            if state.get(kind):
                text = await _text(batch, state[kind])
                for line in filter(None, text.splitlines()):
                    row = json.loads(line)
                    response = row.get("response")
                    if response is not None:
                        results[row["custom_id"]] = BatchResult(
                            int(response["status_code"]), response["body"]
                        )
        return str(state["status"]), results


async def _text(batch: Batch, file_id: str) -> str:
    response = await batch.client.get(f"{batch.base_url}/files/{file_id}/content", headers=batch.headers)
    if response.status_code >= 400:
        raise BatchError(
            f"reading the batch's file {file_id}: HTTP {response.status_code} {response.text[:200]}"
        )
    return str(response.text)


async def _checked(sent: Any, what: str) -> dict[str, Any]:
    response: httpx2.Response = await sent
    if response.status_code >= 400:
        raise BatchError(f"{what}: HTTP {response.status_code} {response.text[:300]}")
    found: dict[str, Any] = response.json()
    return found
