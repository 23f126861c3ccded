"""Gemini's Batch Mode (its Batch API guide, inlined requests): the generateContent requests posted
to `/v1beta/models/MODEL:batchGenerateContent`, each with its key in `metadata`; the operation it
returns (`batches/ID`) read until it is `done`; then its inlined responses, in request order, each
holding the key and the `response` or the `error` (a google.rpc Status)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.batch_apis.http import checked_json, polled
from agents.batching import CANCELLED, Batch, BatchError, BatchResult

CALL = re.compile(r"(?P<root>.*)/v1(?:beta|alpha)?/models/(?P<model>[^/:]+):generateContent")
BATCH_VERSION = "v1beta"
"""The API version that serves Batch Mode, whichever one the SDK's direct calls go to."""
HTTP_OF_RPC = {3: 400, 4: 504, 5: 404, 7: 403, 8: 429, 9: 400, 11: 400, 13: 500, 14: 503, 16: 401}
"""google.rpc codes as HTTP statuses (the Gemini API's troubleshooting page pairs them)."""
ENDED = {
    "BATCH_STATE_SUCCEEDED": "succeeded",
    "BATCH_STATE_FAILED": "failed",
    "BATCH_STATE_CANCELLED": CANCELLED,
    "BATCH_STATE_EXPIRED": "expired",
}


@dataclass(frozen=True)
class GeminiBatches:
    max_bytes: int = 19 * 1024 * 1024
    """The guide's 20 MB for a batch of inlined requests, less room for the framing."""

    def route(self, url: str, body: Mapping[str, Any]) -> tuple[str, str] | None:
        call = CALL.fullmatch(url)
        return None if call is None else (f"{call['root']}/{BATCH_VERSION}", call["model"])

    async def submit(self, batch: Batch) -> str:
        requests = [{"request": body, "metadata": {"key": cid}} for cid, body in batch.requests]
        created = await checked_json(
            batch.client.post(
                f"{batch.base_url}/models/{batch.model}:batchGenerateContent",
                headers=batch.headers,
                json={
                    "batch": {
                        "displayName": f"bongard-{batch.requests[0][0][:12]}",
                        "inputConfig": {"requests": {"requests": requests}},
                    }
                },
            ),
            "creating the batch",
        )
        return str(created["name"])

    async def collect(self, batch: Batch, batch_id: str) -> tuple[str, dict[str, BatchResult]]:
        operation = await polled(
            batch, f"{batch.base_url}/{batch_id}", lambda op: bool(op.get("done")), f"reading {batch_id}"
        )
        state = (operation.get("metadata") or {}).get("state", "")
        if "error" in operation or state == "BATCH_STATE_FAILED":
            why = (operation.get("error") or {}).get("message", "no reason given")
            raise BatchError(f"Gemini batch {batch_id} failed: {why}")
        output = operation.get("response") or (operation.get("metadata") or {}).get("output") or {}
        rows = (output.get("inlinedResponses") or {}).get("inlinedResponses", [])
        keys = [cid for cid, _ in batch.requests]
        results: dict[str, BatchResult] = {}
        for number, row in enumerate(rows):
            key = (row.get("metadata") or {}).get("key") or (keys[number] if number < len(keys) else None)
            if key is not None:
                results[key] = _result(row)
        return ENDED.get(state, state.lower()), results


def _result(row: Mapping[str, Any]) -> BatchResult:
    if "response" in row:
        return BatchResult(200, row["response"])
    error = row.get("error") or {}
    status = HTTP_OF_RPC.get(int(error.get("code", 13)), 500)
    return BatchResult(
        status, {"error": {"code": status, "message": error.get("message", ""), "status": "ERROR"}}
    )
