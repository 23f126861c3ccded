"""Anthropic's Message Batches as a stand-in: `POST /v1/messages/batches` takes the requests (a
`custom_id` and `params` each), each read of `/v1/messages/batches/{id}` moves the batch on
(in_progress, then ended), and `results_url` holds one line per request, in no promised order.

It refuses what the batch guide says it refuses: no requests, more than 100,000, over 256 MB, a
custom id outside `^[a-zA-Z0-9_-]{1,64}$` or used twice; a request asking to stream is errored.
Each request's params are answered by `AnthropicMessages`, so the Messages API's own refusals come
back as errored results. `failing`: how many requests of the first batch error (api_error);
`expire`: the first batch ends with every request expired; `cancel`: someone cancels it in progress;
`hold`: it goes no further than in_progress.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.standins.batch_knobs import BatchKnobs
from tests.standins.protocols import AnthropicMessages
from tests.standins.server import Reply

MAX_REQUESTS = 100_000
MAX_BYTES = 256 * 1024 * 1024
CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
BATCHES = "/v1/messages/batches"


def _json(value: Any, status: int = 200) -> Reply:
    return Reply([json.dumps(value).encode()], status=status)


def _refused(message: str) -> Reply:
    return _json({"type": "error", "error": {"type": "invalid_request_error", "message": message}}, 400)


class AnthropicBatchAPI(BatchKnobs, AnthropicMessages):
    def handles(self, method: str, path: str) -> bool:
        route = path.split("?")[0]
        if method == "POST":
            return route.endswith(("/v1/messages", BATCHES))
        return method == "GET" and f"{BATCHES}/" in route

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        route = path.split("?")[0]
        if route.endswith("/v1/messages"):
            return super().reply(path, body, text, finish)
        if route.endswith(BATCHES):
            return self._create(body)
        batch_id = route.split(f"{BATCHES}/", 1)[1].removesuffix("/results")
        if batch_id not in self.batches:
            return _json({"type": "error", "error": {"type": "not_found_error", "message": batch_id}}, 404)
        if route.endswith("/results"):
            return self._results(self.batches[batch_id])
        return _json(self._advance(self.batches[batch_id]))

    def _create(self, body: Any) -> Reply:
        requests = body.get("requests") if isinstance(body, dict) else None
        if not requests:
            return _refused("requests: at least one request is required")
        if len(requests) > MAX_REQUESTS:
            return _refused(f"requests: at most {MAX_REQUESTS} requests are allowed in a batch")
        if len(json.dumps(body).encode()) > MAX_BYTES:
            return _refused("the batch exceeds the 256 MB limit")
        ids = [request.get("custom_id", "") for request in requests]
        if bad := [cid for cid in ids if not CUSTOM_ID.fullmatch(cid)]:
            return _refused(f"custom_id {bad[0]!r} must match ^[a-zA-Z0-9_-]{{1,64}}$")
        if len(set(ids)) != len(ids):
            return _refused("custom_id must be unique within a batch")
        batch_id = f"msgbatch_{len(self.batches) + 1:04d}"
        self.batches[batch_id] = {
            "id": batch_id, "type": "message_batch", "processing_status": "in_progress",
            "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0, "canceled": 0,
                               "expired": 0},
            "ended_at": None, "created_at": "2026-11-29T00:00:00Z", "expires_at": "2026-11-30T00:00:00Z",
            "cancel_initiated_at": None, "archived_at": None, "results_url": None, "requests": requests,
        }  # fmt: skip
        return _json(self._shown(self.batches[batch_id]))

    def _advance(self, batch: dict[str, Any]) -> dict[str, Any]:
        held = self.hold and batch["id"] not in self.released
        if batch["processing_status"] == "in_progress" and not held:
            if self.cancel:
                batch["cancel_initiated_at"] = "2026-11-29T00:00:01Z"
            batch["lines"] = [self._outcome(batch, n, r) for n, r in enumerate(batch["requests"])]
            counts = {kind: 0 for kind in ("processing", "succeeded", "errored", "canceled", "expired")}
            for line in batch["lines"]:
                counts[line["result"]["type"]] += 1
            batch.update(
                processing_status="ended", request_counts=counts, ended_at="2026-11-29T00:00:02Z",
                results_url=f"{self.origin}{BATCHES}/{batch['id']}/results",
            )  # fmt: skip
        return self._shown(batch)

    def _outcome(self, batch: dict[str, Any], number: int, request: dict[str, Any]) -> dict[str, Any]:
        cid, params = request["custom_id"], request["params"]
        if self.cancel or (self.expire and batch["id"] == "msgbatch_0001"):
            return {"custom_id": cid, "result": {"type": "canceled" if self.cancel else "expired"}}
        self.bodies.append(params)
        if batch["id"] == "msgbatch_0001" and number < self.failing:
            error = {"type": "error", "error": {"type": "api_error", "message": "injected failure"}}
            return {"custom_id": cid, "result": {"type": "errored", "error": error}}
        if params.get("stream"):
            refused = {"type": "invalid_request_error", "message": "stream: batch requests cannot stream"}
            error = {"type": "error", "error": refused}
            return {"custom_id": cid, "result": {"type": "errored", "error": error}}
        reply = super().reply("/v1/messages", params, self.responder(params), "stop")
        answer = json.loads(b"".join(reply.chunks))
        if reply.status != 200:
            return {"custom_id": cid, "result": {"type": "errored", "error": answer}}
        return {"custom_id": cid, "result": {"type": "succeeded", "message": answer}}

    def _results(self, batch: dict[str, Any]) -> Reply:
        if batch["processing_status"] != "ended":
            return _refused(f"batch {batch['id']} has not ended; its results are not ready")
        lines = list(reversed(batch["lines"]))  # results come in no promised order
        return Reply([b"".join(json.dumps(line).encode() + b"\n" for line in lines)],
                     content_type="application/binary")  # fmt: skip

    @staticmethod
    def _shown(batch: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in batch.items() if key not in ("requests", "lines")}
