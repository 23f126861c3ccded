"""Gemini's Batch Mode (its Batch API guide): the generateContent requests posted to
`/v1beta/models/MODEL:batchGenerateContent`, the operation it returns (`batches/ID`) read until it is
`done`, then each request's `response` or `error` (a google.rpc Status) read back by its key.

Up to 20 MB the requests are inlined, each with its key in `metadata`, and the responses come back
inlined, in request order. A larger batch is uploaded as a JSONL file of `{"key", "request"}` lines
through the Files API's resumable upload, and its responses come back as a file of the same keys."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.batch_apis.http import checked, checked_json, jsonl_rows, polled
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
    max_bytes: int = 1900 * 1024 * 1024
    """The Files API's 2 GB a file, less room for the framing."""
    inline_bytes: int = 19 * 1024 * 1024
    """The guide's 20 MB for inlined requests, less room for the framing: a larger batch goes as a file."""

    def route(self, url: str, body: Mapping[str, Any]) -> tuple[str, str] | None:
        call = CALL.fullmatch(url)
        return None if call is None else (f"{call['root']}/{BATCH_VERSION}", call["model"])

    async def submit(self, batch: Batch) -> str:
        name = f"bongard-{batch.requests[0][0][:12]}"
        size = sum(len(json.dumps(body, ensure_ascii=False).encode()) for _, body in batch.requests)
        if size <= self.inline_bytes:
            requests = [{"request": body, "metadata": {"key": cid}} for cid, body in batch.requests]
            source: dict[str, Any] = {"requests": {"requests": requests}}
        else:
            source = {"fileName": await _uploaded(batch, name)}
        created = await checked_json(
            batch.client.post(
                f"{batch.base_url}/models/{batch.model}:batchGenerateContent",
                headers=batch.headers,
                json={"batch": {"displayName": name, "inputConfig": source}},
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
        results: dict[str, BatchResult] = {}
        if output.get("responsesFile"):
            url = f"{_root(batch)}/download/{BATCH_VERSION}/{output['responsesFile']}:download"
            for row in await jsonl_rows(batch, url, {"alt": "media"}):
                results[str(row["key"])] = _result(row)
            return ENDED.get(state, state.lower()), results
        rows = (output.get("inlinedResponses") or {}).get("inlinedResponses", [])
        keys = [cid for cid, _ in batch.requests]
        for number, row in enumerate(rows):
            key = (row.get("metadata") or {}).get("key") or (keys[number] if number < len(keys) else None)
            if key is not None:
                results[key] = _result(row)
        return ENDED.get(state, state.lower()), results


def _root(batch: Batch) -> str:
    return batch.base_url.removesuffix(f"/{BATCH_VERSION}")


async def _uploaded(batch: Batch, name: str) -> str:
    """The batch's requests as a JSONL file, uploaded by the Files API's resumable protocol (a start
    that answers the upload's URL, then the bytes, finalized): the file's name."""
    lines = "".join(
        json.dumps({"key": cid, "request": body}, ensure_ascii=False) + "\n" for cid, body in batch.requests
    ).encode()
    started = await checked(
        batch.client.post(
            f"{_root(batch)}/upload/{BATCH_VERSION}/files",
            headers={
                **batch.headers,
                "X-Goog-Upload-Protocol": "resumable",
                "X-Goog-Upload-Command": "start",
                "X-Goog-Upload-Header-Content-Length": str(len(lines)),
                "X-Goog-Upload-Header-Content-Type": "application/jsonl",
            },
            json={"file": {"display_name": name}},
        ),
        "starting the upload of the batch's requests",
    )
    finished = await checked_json(
        batch.client.post(
            started.headers["x-goog-upload-url"],
            headers={
                **batch.headers,
                "X-Goog-Upload-Offset": "0",
                "X-Goog-Upload-Command": "upload, finalize",
            },
            content=lines,
        ),
        "uploading the batch's requests",
    )
    return str(finished["file"]["name"])


def _result(row: Mapping[str, Any]) -> BatchResult:
    if "response" in row:
        return BatchResult(200, row["response"])
    error = row.get("error") or {}
    status = HTTP_OF_RPC.get(int(error.get("code", 13)), 500)
    return BatchResult(
        status, {"error": {"code": status, "message": error.get("message", ""), "status": "ERROR"}}
    )
