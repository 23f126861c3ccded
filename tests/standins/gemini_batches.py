"""Gemini's Batch Mode as a stand-in: `POST /v1beta/models/MODEL:batchGenerateContent` takes the
inlined requests and answers an operation (`batches/ID`); each read of `/v1beta/batches/ID` moves
it on (BATCH_STATE_PENDING, RUNNING, SUCCEEDED) and, once done, holds the inlined responses in
request order, each with the request's metadata and its `response` or `error`.

It refuses what the guide says it refuses: a batch without requests or a display name, inlined
requests over 20 MB in all. Each request is answered by `GeminiGenerateContent` for the batch's
model, so its refusals come back as errored responses. `failing`, `expire` (the first batch),
`cancel` and `hold` as in the other batch stand-ins.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.standins.batch_knobs import BatchKnobs
from tests.standins.protocols import GeminiGenerateContent
from tests.standins.server import Reply

MAX_INLINED_BYTES = 20 * 1024 * 1024
CREATE = re.compile(r"/v1beta/models/(?P<model>[^/:]+):batchGenerateContent")
READ = re.compile(r"/v1beta/(?P<name>batches/[^/:]+)")
STEPS = ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING", "BATCH_STATE_SUCCEEDED")
KIND = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"
OUTPUT_KIND = f"{KIND}Output"


def _json(value: Any, status: int = 200) -> Reply:
    return Reply([json.dumps(value).encode()], status=status)


def _refused(message: str) -> Reply:
    return _json({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}, 400)


class GeminiBatchAPI(BatchKnobs, GeminiGenerateContent):
    def handles(self, method: str, path: str) -> bool:
        route = path.split("?")[0]
        if method == "POST":
            return super().handles(method, path) or CREATE.fullmatch(route) is not None
        return method == "GET" and READ.fullmatch(route) is not None

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        route = path.split("?")[0]
        if (create := CREATE.fullmatch(route)) is not None:
            return self._create(create["model"], body)
        if (read := READ.fullmatch(route)) is not None:
            if read["name"] not in self.batches:
                return _json({"error": {"code": 404, "message": f"{read['name']} not found",
                                        "status": "NOT_FOUND"}}, 404)  # fmt: skip
            return _json(self._advance(self.batches[read["name"]]))
        return super().reply(path, body, text, finish)

    def _create(self, model: str, body: Any) -> Reply:
        batch = (body or {}).get("batch") or {}
        requests = ((batch.get("inputConfig") or {}).get("requests") or {}).get("requests")
        if not batch.get("displayName"):
            return _refused("batch.display_name is required")
        if not requests:
            return _refused("batch.input_config: no requests")
        if len(json.dumps(requests).encode()) > MAX_INLINED_BYTES:
            return _refused("Inlined requests exceed the 20 MB limit; use a file of requests")
        name = f"batches/{len(self.batches) + 1:04d}"
        self.batches[name] = {"name": name, "model": model, "requests": requests, "state": STEPS[0],
                              "displayName": batch["displayName"]}  # fmt: skip
        return _json(self._shown(self.batches[name]))

    def _advance(self, batch: dict[str, Any]) -> dict[str, Any]:
        state = batch["state"]
        held = self.hold and state == "BATCH_STATE_RUNNING" and batch["name"] not in self.released
        if state in STEPS[:-1] and not held:
            batch["state"] = STEPS[STEPS.index(state) + 1]
            if self.cancel and batch["state"] == "BATCH_STATE_RUNNING":
                batch["state"] = "BATCH_STATE_CANCELLED"
            elif self.expire and batch["state"] == STEPS[-1] and batch["name"] == "batches/0001":
                batch["state"] = "BATCH_STATE_EXPIRED"
            elif batch["state"] == STEPS[-1]:
                batch["responses"] = [self._outcome(batch, n, r) for n, r in enumerate(batch["requests"])]
        return self._shown(batch)

    def _outcome(self, batch: dict[str, Any], number: int, request: dict[str, Any]) -> dict[str, Any]:
        body = request["request"]
        self.bodies.append(body)
        answered: dict[str, Any] = {"metadata": request.get("metadata", {})}
        if batch["name"] == "batches/0001" and number < self.failing:
            return answered | {"error": {"code": 13, "message": "injected failure"}}
        reply = super().reply(f"/v1beta/models/{batch['model']}:generateContent", body,
                              self.responder(body), "stop")  # fmt: skip
        answer = json.loads(b"".join(reply.chunks))
        if reply.status != 200:
            return answered | {"error": {"code": 3, "message": answer["error"]["message"]}}
        return answered | {"response": answer}

    @staticmethod
    def _shown(batch: dict[str, Any]) -> dict[str, Any]:
        ended = batch["state"] not in STEPS[:-1]
        metadata = {"@type": KIND, "model": f"models/{batch['model']}", "displayName": batch["displayName"],
                    "state": batch["state"], "name": batch["name"]}  # fmt: skip
        shown: dict[str, Any] = {"name": batch["name"], "metadata": metadata}
        if ended:
            shown["done"] = True
            if "responses" in batch:
                shown["response"] = {
                    "@type": OUTPUT_KIND,
                    "inlinedResponses": {"inlinedResponses": batch["responses"]},
                }
        return shown
