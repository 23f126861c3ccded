"""Anthropic's Message Batches (its batch processing guide): the Messages requests posted to
`/v1/messages/batches`, each as a `custom_id` and its `params`; the batch read until its
`processing_status` is `ended`, then its `results_url` read: one line per request, whose `result`
is `succeeded` (the message), `errored` (the error the endpoint would have sent), `canceled` or
`expired`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.batch_apis.http import checked_json, jsonl_rows, polled
from agents.batching import CANCELLED, Batch, BatchResult

CALL_PATH = "/messages"
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
"""The HTTP status the Messages endpoint answers each error type with (its errors page)."""


@dataclass(frozen=True)
class AnthropicBatches:
    max_bytes: int = 250 * 1024 * 1024
    """The guide's 256 MB a batch, less room for the framing."""

    def route(self, url: str, body: Mapping[str, Any]) -> tuple[str, str] | None:
        return (url[: -len(CALL_PATH)], str(body.get("model", ""))) if url.endswith(CALL_PATH) else None

    async def submit(self, batch: Batch) -> str:
        created = await checked_json(
            batch.client.post(
                f"{batch.base_url}/messages/batches",
                headers=batch.headers,
                json={"requests": [{"custom_id": cid, "params": body} for cid, body in batch.requests]},
            ),
            "creating the message batch",
        )
        return str(created["id"])

    async def collect(self, batch: Batch, batch_id: str) -> tuple[str, dict[str, BatchResult]]:
        state = await polled(
            batch,
            f"{batch.base_url}/messages/batches/{batch_id}",
            lambda state: state["processing_status"] == "ended",
            f"reading message batch {batch_id}",
        )
        results: dict[str, BatchResult] = {}
        for row in await jsonl_rows(batch, state["results_url"]) if state.get("results_url") else []:
            if (result := _result(row["result"])) is not None:
                results[row["custom_id"]] = result
        return (CANCELLED if state.get("cancel_initiated_at") else "ended"), results


def _result(result: Mapping[str, Any]) -> BatchResult | None:
    """A request's outcome as the endpoint would have answered it; None where it was not processed
    (canceled, expired)."""
    if result["type"] == "succeeded":
        return BatchResult(200, result["message"])
    if result["type"] == "errored":
        error = result["error"]
        kind = (error.get("error") or {}).get("type", "api_error")
        return BatchResult(ERROR_STATUS.get(kind, 500), error)
    return None
