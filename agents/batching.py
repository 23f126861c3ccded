"""Batch mode: a model's calls gathered into the provider's batch API, at its batch price, with no
strategy changed.

The provider's own SDK builds each request as in direct mode; an HTTP transport under it takes the
request that would have gone to the model's endpoint, queues its body, and answers the SDK with the
result once the batch holding it is done, as if the endpoint had replied. So a batch request's body
is, field for field, the body direct mode sends. Requests are gathered per endpoint and model until
`batch_requests` are waiting or `batch_wait_s` has passed since the first; a multi-turn strategy's next
round is asked once the round's batch is back, so each round is one batch across the items in flight.

The provider's batch protocol (`BatchProtocol`) submits, polls and reads the results; other requests
(the batch API's own) go through the endpoint's pool unchanged. Within a run, each batch's id and
its requests' custom ids are kept before the wait (`agents.batch_ledger`): a resumed run takes the
results of the batches a killed one left, and sends none of their requests again; with
`--detach` the run stops once each of its calls waits on a kept batch (`agents.batch_detach`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import weakref
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import httpx2

from agents.batch_detach import DETACH, DetachWatch
from agents.batch_ledger import BATCH_SCOPE, BatchLedger, BatchScope, ledger_at
from agents.call_events import EVENTS
from datasets_io.errors import BongardError


class BatchError(BongardError):
    """A batch the provider refused, failed, let expire or cancelled: said with its id."""


@dataclass(frozen=True)
class BatchResult:
    """One request's outcome in a batch: the reply the endpoint would have sent (status, body)."""

    status: int
    body: dict[str, Any]


@dataclass(frozen=True)
class BatchSettings:
    """An agent's `batch_requests`, `batch_wait_s` and `batch_poll_s` (`AgentParams` holds the
    defaults)."""

    size: int
    """Requests gathered into one batch at most."""
    wait_s: float
    """How long the first request of a batch waits for others before the batch goes."""
    poll_s: float
    """Seconds between two looks at a batch in progress."""


@runtime_checkable
class BatchProtocol(Hashable, Protocol):
    """A provider's batch API: submit requests, then wait for their results."""

    @property
    def max_bytes(self) -> int:
        """The most request bytes one batch may hold (the provider's limit, less room for framing)."""
        ...

    def route(self, url: str, body: Mapping[str, Any]) -> tuple[str, str] | None:
        """For a request to the model's endpoint: (base URL of the batch API, model); None for any
        other request, which goes out unchanged."""
        ...

    async def submit(self, batch: Batch) -> str:
        """Send the batch's requests: the provider's id of the batch."""
        ...

    async def collect(self, batch: Batch, batch_id: str) -> tuple[str, dict[str, BatchResult]]:
        """Wait for a batch to end: its final status, and each answered request's result by its
        custom id (`batch.requests` may be empty: a batch kept from an earlier process)."""
        ...


@dataclass(frozen=True)
class Batch:
    """Requests to send as one batch, and how to reach the provider's batch API."""

    client: httpx2.AsyncClient
    base_url: str
    """Where the batched path lives (`https://api.openai.com/v1`)."""
    model: str
    """The model every request of the batch is for."""
    headers: Mapping[str, str]
    """The intercepted requests' credentials and API version, sent with the batch API's requests."""
    requests: Sequence[tuple[str, dict[str, Any]]]
    """(custom id, body) of each request."""
    poll_s: float


def custom_id(body: Mapping[str, Any], occurrence: int, scope: BatchScope | None = None) -> str:
    """A request's id in its batch: a hash of the item it belongs to and its body, and how many
    identical requests of that item came before it, so the same call has the same id when its run is
    resumed, and no other run's call has it."""
    named = json.dumps([scope.item if scope else None, body], sort_keys=True, ensure_ascii=False)
    return f"{hashlib.sha256(named.encode()).hexdigest()[:32]}-{occurrence}"


CREDENTIALS = (
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "anthropic-version",
    "anthropic-beta",
    "openai-organization",
    "openai-project",
)
"""The request headers a batch API takes again from the calls it batches."""
BATCH_CONCURRENCY = 1000
"""Problems in flight in batch mode, at least: a batch gathers the calls of the problems in flight."""
CANCELLED = "cancelled"
"""A batch's final status when someone cancelled it (each protocol says it so)."""
GONE = 410
"""The status a cancelled batch's calls fail with: neither retried within the run nor taken as a
refused request, so the item is one `--retry-errors` sends again."""


Waiting = tuple[str, dict[str, Any], "asyncio.Future[BatchResult]", "BatchLedger | None"]
"""A queued request: its custom id, body, the future its call awaits, and its run's ledger."""


@dataclass
class BatchQueue:
    """The requests waiting for one endpoint's next batch (a batch holds one model: a queue per
    endpoint and model)."""

    protocol: BatchProtocol
    client: httpx2.AsyncClient
    settings: BatchSettings
    waiting: dict[tuple[str, str], list[Waiting]] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    _bytes: dict[tuple[str, str], int] = field(default_factory=dict)
    _timers: dict[tuple[str, str], asyncio.TimerHandle] = field(default_factory=dict)
    _collecting: dict[str, asyncio.Future[dict[str, BatchResult]]] = field(default_factory=dict)

    async def submit(
        self, base_url: str, model: str, body: dict[str, Any], headers: Mapping[str, str]
    ) -> BatchResult:
        watch = DETACH.get()
        with watch.call() if watch is not None else contextlib.nullcontext():
            return await self._submitted(base_url, model, body, headers, watch)

    async def _submitted(
        self,
        base_url: str,
        model: str,
        body: dict[str, Any],
        headers: Mapping[str, str],
        watch: DetachWatch | None,
    ) -> BatchResult:
        self.headers.update({k: v for k, v in headers.items() if k.lower() in CREDENTIALS})
        scope = BATCH_SCOPE.get()
        digest = custom_id(body, 0, scope).rsplit("-", 1)[0]
        occurrence = self.seen.get(digest, 0)
        self.seen[digest] = occurrence + 1
        cid = custom_id(body, occurrence, scope)
        ledger = ledger_at(scope.ledger) if scope is not None else None
        if ledger is not None and (kept := ledger.batch_of(cid, base_url)) is not None:
            with watch.waiting_on_kept() if watch is not None else contextlib.nullcontext():
                found = (await self._kept(base_url, model, kept, ledger)).get(cid)
            if found is not None:  # answered by a batch an earlier process submitted: not sent again
                return found
        future: asyncio.Future[BatchResult] = asyncio.get_running_loop().create_future()
        key = (base_url, model)
        size = len(json.dumps(body, ensure_ascii=False).encode())
        if self.waiting.get(key) and self._bytes.get(key, 0) + size > self.protocol.max_bytes:
            self._flush(key)  # the provider's size limit: this request starts the next batch
        waiting = self.waiting.setdefault(key, [])
        waiting.append((cid, body, future, ledger))
        self._bytes[key] = self._bytes.get(key, 0) + size
        if len(waiting) >= self.settings.size:
            self._flush(key)
        elif key not in self._timers:
            self._timers[key] = asyncio.get_running_loop().call_later(self.settings.wait_s, self._flush, key)
        return await future

    async def _kept(
        self, base_url: str, model: str, batch_id: str, ledger: BatchLedger
    ) -> dict[str, BatchResult]:
        """The results of a batch kept in the ledger, collected once however many calls ask."""
        if batch_id not in self._collecting:
            batch = Batch(self.client, base_url, model, dict(self.headers), [], self.settings.poll_s)
            self._collecting[batch_id] = asyncio.ensure_future(self._collected(batch, batch_id, ledger))
        return await asyncio.shield(self._collecting[batch_id])

    async def _collected(
        self, batch: Batch, batch_id: str, ledger: BatchLedger | None
    ) -> dict[str, BatchResult]:
        try:
            status, results = await self.protocol.collect(batch, batch_id)
        except BatchError:
            status, results = "failed", {}
        if ledger is not None:
            ledger.ended(batch_id, status)
        return results

    def _flush(self, key: tuple[str, str]) -> None:
        if (timer := self._timers.pop(key, None)) is not None:
            timer.cancel()
        self._bytes.pop(key, None)
        taken = self.waiting.pop(key, [])
        if taken:
            asyncio.get_running_loop().create_task(self._run(*key, taken))

    async def _run(self, base_url: str, model: str, taken: list[Waiting]) -> None:
        EVENTS.batches += 1
        EVENTS.batched += len(taken)
        requests = [(cid, body) for cid, body, _, _ in taken]
        batch = Batch(self.client, base_url, model, dict(self.headers), requests, self.settings.poll_s)
        ledgers = {ledger for _, _, _, ledger in taken if ledger is not None}
        missing = _error_result(503, "the batch returned no result for this request (errored or expired)")
        watch = DETACH.get()
        kept_calls = sum(ledger is not None for _, _, _, ledger in taken)
        try:
            batch_id = await self.protocol.submit(batch)
            for ledger in ledgers:
                ledger.record(batch_id, base_url, [cid for cid, _, _, kept in taken if kept is ledger])
            with watch.waiting_on_kept(kept_calls) if watch is not None else contextlib.nullcontext():
                status, results = await self.protocol.collect(batch, batch_id)
            for ledger in ledgers:
                ledger.ended(batch_id, status)
            if status == CANCELLED:  # someone cancelled it: its calls fail saying so, not sent again now
                missing = _error_result(GONE, f"batch {batch_id} was cancelled")
        except BatchError as refused:  # the batch as a whole: each call fails with why, not retried
            results = {cid: _error_result(400, str(refused)) for cid, _, _, _ in taken}
        except Exception as error:  # the batch API unreachable: each call fails, and is retried
            results = {cid: _error_result(503, f"the batch API failed: {error}") for cid, _, _, _ in taken}
        EVENTS.batches_done += 1
        EVENTS.batched_done += len(taken)
        for cid, _, future, _ in taken:
            if not future.done():  # a request the batch left unanswered is retried: in a later batch
                future.set_result(results.get(cid, missing))


def _error_result(status: int, message: str) -> BatchResult:
    """An error reply as the endpoint shapes one: a 503 is retried (in a later batch), a 400 is not."""
    return BatchResult(status, {"error": {"message": message, "type": "batch_error"}})


class BatchingTransport(httpx2.AsyncBaseTransport):
    """Under an SDK: a request to the batched path is queued and answered from its batch's result;
    any other request goes to `inner`. A queue per event loop (its futures belong to one)."""

    def __init__(
        self, inner: httpx2.AsyncBaseTransport, protocol: BatchProtocol, settings: BatchSettings
    ) -> None:
        self.inner = inner
        self.protocol = protocol
        self.settings = settings
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BatchQueue] = (
            weakref.WeakKeyDictionary()
        )

    def queue(self) -> BatchQueue:
        loop = asyncio.get_running_loop()
        if loop not in self._queues:
            client = httpx2.AsyncClient(
                transport=self.inner, timeout=httpx2.Timeout(300.0), follow_redirects=True
            )
            self._queues[loop] = BatchQueue(self.protocol, client, self.settings)
        return self._queues[loop]

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST" or "json" not in request.headers.get("content-type", ""):
            return await self.inner.handle_async_request(request)
        body = json.loads(await request.aread())
        route = self.protocol.route(str(request.url.copy_with(query=None)), body)
        if route is None:
            return await self.inner.handle_async_request(request)
        result = await self.queue().submit(*route, body, request.headers)
        return httpx2.Response(result.status, json=result.body, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()
