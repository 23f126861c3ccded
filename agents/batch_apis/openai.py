"""OpenAI's Batch API (its Batch API guide): the requests as a JSONL file uploaded to `/files`
(purpose `batch`), a batch created on it (`/batches`, endpoint `/v1/chat/completions`, window 24h),
its status read until it is `completed`, `failed`, `expired` or `cancelled`, then its output and
error files read back: each line holds a request's `custom_id` and its `response` (status code and
body) or `error`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.batch_apis.http import checked_json, jsonl_rows, polled
from agents.batching import Batch, BatchError, BatchResult

OPENAI_DONE = ("completed", "failed", "expired", "cancelled")
CALL_PATH = "/chat/completions"


@dataclass(frozen=True)
class OpenAIBatches:
    endpoint: str = "/v1/chat/completions"
    window: str = "24h"
    max_bytes: int = 190 * 1024 * 1024
    """The guide's 200 MB a file, less room for each line's framing."""

    def route(self, url: str, body: Mapping[str, Any]) -> tuple[str, str] | None:
        return (url[: -len(CALL_PATH)], str(body.get("model", ""))) if url.endswith(CALL_PATH) else None

    async def submit(self, batch: Batch) -> str:
        """The batch created on an uploaded file of its requests: its id."""
        lines = "".join(
            json.dumps(
                {"custom_id": cid, "method": "POST", "url": self.endpoint, "body": body}, ensure_ascii=False
            )
            + "\n"
            for cid, body in batch.requests
        )
        uploaded = await checked_json(
            batch.client.post(
                f"{batch.base_url}/files",
                headers=batch.headers,
                data={"purpose": "batch"},
                files={"file": ("requests.jsonl", lines.encode(), "application/jsonl")},
            ),
            "uploading the batch's requests",
        )
        created = await checked_json(
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
        state = await polled(
            batch,
            f"{batch.base_url}/batches/{batch_id}",
            lambda state: state["status"] in OPENAI_DONE,
            f"reading batch {batch_id}",
        )
        if state["status"] == "failed":
            errors = "; ".join(e.get("message", "") for e in (state.get("errors") or {}).get("data", []))
            raise BatchError(f"OpenAI batch {batch_id} failed: {errors or 'no reason given'}")
        results: dict[str, BatchResult] = {}
        files = [state[kind] for kind in ("output_file_id", "error_file_id") if state.get(kind)]
        for file_id in files:
            for row in await jsonl_rows(batch, f"{batch.base_url}/files/{file_id}/content"):
                if (response := row.get("response")) is not None:
                    results[row["custom_id"]] = BatchResult(int(response["status_code"]), response["body"])
        return str(state["status"]), results
