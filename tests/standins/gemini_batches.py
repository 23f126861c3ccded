"""Gemini's Batch Mode as a stand-in: `POST /v1beta/models/MODEL:batchGenerateContent` takes the
inlined requests, or the name of an uploaded file of them, and answers an operation (`batches/ID`);
each read of `/v1beta/batches/ID` moves it on (BATCH_STATE_PENDING, RUNNING, SUCCEEDED) and, once
done, holds the inlined responses in request order, each with the request's metadata and its
`response` or `error`, or names a responses file of the same keys.

Files go up by the resumable protocol: `POST /upload/v1beta/files` starts an upload and answers its
URL in `x-goog-upload-url`; the bytes posted there make the file. A file is read back at
`/download/v1beta/files/ID:download?alt=media`.

It refuses what the guide says it refuses: a batch without requests or a display name, inlined
requests over 20 MB in all, a file it does not hold. Each request is answered by
`GeminiGenerateContent` for the batch's model, so its refusals come back as errored responses.
`failing`, `expire` (the first batch), `cancel` and `hold` as in the other batch stand-ins.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tests.standins.batch_knobs import BatchKnobs
from tests.standins.protocols import GeminiGenerateContent
from tests.standins.server import Reply

MAX_INLINED_BYTES = 20 * 1024 * 1024
CREATE = re.compile(r"/v1beta/models/(?P<model>[^/:]+):batchGenerateContent")
READ = re.compile(r"/v1beta/(?P<name>batches/[^/:]+)")
UPLOAD = "/upload/v1beta/files"
DOWNLOAD = re.compile(r"/download/v1beta/(?P<name>files/[^/:]+):download")
STEPS = ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING", "BATCH_STATE_SUCCEEDED")
KIND = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch"
OUTPUT_KIND = f"{KIND}Output"


def _json(value: Any, status: int = 200) -> Reply:
    return Reply([json.dumps(value).encode()], status=status)


def _refused(message: str) -> Reply:
    return _json({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}, 400)


class GeminiBatchAPI(BatchKnobs, GeminiGenerateContent):
    def __init__(
        self, responder: Callable[[Any], str], failing: int = 0, expire: bool = False, cancel: bool = False
    ) -> None:
        super().__init__(responder, failing, expire, cancel)
        self.uploads: set[str] = set()
        """Uploads started and not yet finished."""

    def handles(self, method: str, path: str) -> bool:
        route = path.split("?")[0]
        if method == "POST":
            return super().handles(method, path) or CREATE.fullmatch(route) is not None or route == UPLOAD
        return method == "GET" and any(p.fullmatch(route) for p in (READ, DOWNLOAD))

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        route, _, query = path.partition("?")
        if route == UPLOAD:
            return self._upload(query, body)
        if (download := DOWNLOAD.fullmatch(route)) is not None:
            if download["name"] not in self.files or query != "alt=media":
                return _json({"error": {"code": 404, "message": f"{download['name']} not found",
                                        "status": "NOT_FOUND"}}, 404)  # fmt: skip
            return Reply([self.files[download["name"]]], content_type="application/jsonl")
        if (create := CREATE.fullmatch(route)) is not None:
            return self._create(create["model"], body)
        if (read := READ.fullmatch(route)) is not None:
            if read["name"] not in self.batches:
                return _json({"error": {"code": 404, "message": f"{read['name']} not found",
                                        "status": "NOT_FOUND"}}, 404)  # fmt: skip
            return _json(self._advance(self.batches[read["name"]]))
        return super().reply(path, body, text, finish)

    def _upload(self, query: str, body: Any) -> Reply:
        """The start of an upload (its URL answered), or its bytes (the file made)."""
        if not query:
            upload = f"upload-{len(self.uploads) + 1}"
            self.uploads.add(upload)
            return Reply([b"{}"], headers={"x-goog-upload-url": f"{self.origin}{UPLOAD}?upload_id={upload}"})
        upload = query.removeprefix("upload_id=")
        if upload not in self.uploads or not isinstance(body, dict) or "raw" not in body:
            return _refused(f"no upload {upload} was started, or it carried no bytes")
        self.uploads.discard(upload)
        name = f"files/{len(self.files) + 1:04d}"
        self.files[name] = body["raw"]
        return _json({"file": {"name": name, "mimeType": "application/jsonl", "sizeBytes": len(body["raw"])}})

    def _create(self, model: str, body: Any) -> Reply:
        batch = (body or {}).get("batch") or {}
        source = batch.get("inputConfig") or {}
        if (file_name := source.get("fileName")) is not None:
            if file_name not in self.files:
                return _refused(f"{file_name} not found")
            lines = [json.loads(line) for line in self.files[file_name].decode().splitlines() if line]
            source = {"requests": {"requests": [{"request": r["request"], "metadata": {"key": r["key"]}}
                                                for r in lines]}}  # fmt: skip
        requests = (source.get("requests") or {}).get("requests")
        if not batch.get("displayName"):
            return _refused("batch.display_name is required")
        if not requests:
            return _refused("batch.input_config: no requests")
        if len(json.dumps(requests).encode()) > MAX_INLINED_BYTES:
            return _refused("Inlined requests exceed the 20 MB limit; use a file of requests")
        name = f"batches/{len(self.batches) + 1:04d}"
        self.batches[name] = {"name": name, "model": model, "requests": requests, "state": STEPS[0],
                              "displayName": batch["displayName"], "from_file": file_name}  # fmt: skip
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
                if (
                    batch["from_file"] is not None
                ):  # a file's responses go to a file, keyed as its requests were
                    batch["responses_file"] = f"files/{len(self.files) + 1:04d}"
                    self.files[batch["responses_file"]] = b"".join(
                        json.dumps(
                            {
                                "key": row["metadata"]["key"],
                                **{k: v for k, v in row.items() if k != "metadata"},
                            }
                        ).encode()
                        + b"\n"
                        for row in batch["responses"]
                    )
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
            if "responses_file" in batch:
                shown["response"] = {"@type": OUTPUT_KIND, "responsesFile": batch["responses_file"]}
            elif "responses" in batch:
                shown["response"] = {
                    "@type": OUTPUT_KIND,
                    "inlinedResponses": {"inlinedResponses": batch["responses"]},
                }
        return shown
