"""OpenAI's Batch API as a stand-in: the Files API takes the JSONL of requests (multipart, purpose
`batch`), `/batches` creates a batch on it, each read of `/batches/{id}` moves it on (validating,
in_progress, finalizing, completed), and its output and error files hold one line per request.

It refuses what the Batch API guide says it refuses: a file of requests to more than one model, more
than 50,000 requests, a file over 200 MB, an endpoint other than the file's; each request's body is
answered by `OpenAIChat` (so the SDK's body checks hold here too). `failing`: how many requests of
the first batch are answered with an error line instead; `expire`: the first batch ends `expired`,
answering none; `cancel`: someone cancels it in progress (cancelling, then cancelled, answering none).
"""

from __future__ import annotations

import json
from typing import Any

from tests.standins.batch_knobs import BatchKnobs
from tests.standins.protocols import OpenAIChat
from tests.standins.server import Reply

MAX_REQUESTS = 50_000
MAX_FILE_BYTES = 200 * 1024 * 1024
STEPS = ("validating", "in_progress", "finalizing", "completed")


def _json(value: Any, status: int = 200) -> Reply:
    return Reply([json.dumps(value).encode()], status=status)


class OpenAIBatchAPI(BatchKnobs, OpenAIChat):
    def handles(self, method: str, path: str) -> bool:
        route = path.split("?")[0]
        if method == "POST":
            return route.endswith(("/chat/completions", "/files", "/batches"))
        return method == "GET" and ("/batches/" in route or route.endswith("/content"))

    def reply(self, path: str, body: Any, text: str, finish: str) -> Reply:
        route = path.split("?")[0]
        if route.endswith("/chat/completions"):
            return super().reply(path, body, text, finish)
        if route.endswith("/files"):
            return self._upload(body)
        if route.endswith("/batches"):
            return self._create(body)
        if route.endswith("/content"):
            file_id = route.rsplit("/", 2)[-2]
            if file_id not in self.files:
                return _json({"error": {"message": f"No such File object: {file_id}"}}, 404)
            return Reply([self.files[file_id]], content_type="application/jsonl")
        return self._advance(route.rsplit("/", 1)[-1])

    def _upload(self, body: Any) -> Reply:
        parts = body.get("multipart", {}) if isinstance(body, dict) else {}
        if parts.get("purpose") != b"batch" or "file" not in parts:
            return _json({"error": {"message": "a file and purpose=batch are required"}}, 400)
        if len(parts["file"]) > MAX_FILE_BYTES:
            return _json({"error": {"message": "File is too large: the limit is 200 MB"}}, 400)
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = parts["file"]
        return _json({"id": file_id, "object": "file", "purpose": "batch", "bytes": len(parts["file"])})

    def _create(self, body: Any) -> Reply:
        file_id, endpoint = body.get("input_file_id"), body.get("endpoint")
        if file_id not in self.files:
            return _json({"error": {"message": f"No such File object: {file_id}"}}, 404)
        if body.get("completion_window") != "24h":
            return _json({"error": {"message": "completion_window must be 24h"}}, 400)
        lines = [json.loads(line) for line in self.files[file_id].decode().splitlines() if line]
        errors = []
        if len(lines) > MAX_REQUESTS:
            errors.append(f"The batch holds {len(lines)} requests; at most {MAX_REQUESTS} are allowed.")
        if len({line["body"].get("model") for line in lines}) > 1:
            errors.append("Each batch input file can only include requests to a single model.")
        if any(line.get("url") != endpoint for line in lines):
            errors.append(f"Every request's url must be the batch's endpoint, {endpoint}.")
        batch_id = f"batch_{len(self.batches) + 1}"
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": endpoint, "input_file_id": file_id,
            "completion_window": "24h", "status": "validating", "lines": lines, "errors": errors,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
        }  # fmt: skip
        return _json(self._shown(self.batches[batch_id]))

    def _advance(self, batch_id: str) -> Reply:
        batch = self.batches.get(batch_id)
        if batch is None:
            return _json({"error": {"message": f"No such batch: {batch_id}"}}, 404)
        if batch["status"] == "validating" and batch["errors"]:
            batch["status"] = "failed"
        elif batch["status"] == "in_progress" and self.cancel:
            batch["status"] = "cancelling"
        elif batch["status"] == "cancelling":
            batch["status"] = "cancelled"
        elif batch["status"] in STEPS[:-1] and not (
            self.hold and batch["status"] == "in_progress" and batch_id not in self.released
        ):
            batch["status"] = STEPS[STEPS.index(batch["status"]) + 1]
            if batch["status"] == "completed":
                self._finish(batch)
        return _json(self._shown(batch))

    def _finish(self, batch: dict[str, Any]) -> None:
        if self.expire and batch["id"] == "batch_1":
            batch["status"] = "expired"
            return
        out, failed = [], []
        for number, line in enumerate(batch["lines"]):
            self.bodies.append(line["body"])
            if batch["id"] == "batch_1" and number < self.failing:
                error = {"message": "injected failure", "type": "server_error"}
                failed.append({"id": f"batch_req_{number}", "custom_id": line["custom_id"], "response": None,
                               "error": error})  # fmt: skip
                continue
            reply = super().reply("/v1/chat/completions", line["body"], self.responder(line["body"]), "stop")
            response = {"status_code": reply.status, "request_id": f"req_{number}",
                        "body": json.loads(b"".join(reply.chunks))}  # fmt: skip
            out.append({"id": f"batch_req_{number}", "custom_id": line["custom_id"], "response": response,
                        "error": None})  # fmt: skip
        for kind, rows in (("output_file_id", out), ("error_file_id", failed)):
            if rows:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = "".join(json.dumps(row) + "\n" for row in rows).encode()
                batch[kind] = file_id
        batch["request_counts"] = {"total": len(batch["lines"]), "completed": len(out), "failed": len(failed)}

    @staticmethod
    def _shown(batch: dict[str, Any]) -> dict[str, Any]:
        shown = {key: value for key, value in batch.items() if key not in ("lines", "errors")}
        if batch["errors"] and batch["status"] == "failed":
            shown["errors"] = {
                "object": "list",
                "data": [{"code": "invalid_request", "message": e} for e in batch["errors"]],
            }
        return shown
