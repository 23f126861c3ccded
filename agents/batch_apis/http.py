"""The batch APIs' own requests: a reply read as JSON, or an error saying what failed; a batch
polled until it ends, through a passing outage of the API; a results file read as JSON lines."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx2

from agents.batching import Batch, BatchError

POLL_MISSES = 20
"""Looks at a batch in a row that may fail (HTTP 429 or 5xx, or no connection) before its wait
gives up: a batch lasts hours, and the API may be away for some minutes of them."""


class BatchUnavailable(Exception):
    """The batch API answered 429 or 5xx: worth asking again later."""


async def checked(sent: Awaitable[httpx2.Response], what: str) -> httpx2.Response:
    """The reply; 429 or 5xx is `BatchUnavailable`, another error a `BatchError` naming `what`."""
    response = await sent
    if response.status_code == 429 or response.status_code >= 500:
        raise BatchUnavailable(f"{what}: HTTP {response.status_code} {response.text[:300]}")
    if response.status_code >= 400:
        raise BatchError(f"{what}: HTTP {response.status_code} {response.text[:300]}")
    return response


async def checked_json(sent: Awaitable[httpx2.Response], what: str) -> dict[str, Any]:
    found: dict[str, Any] = (await checked(sent, what)).json()
    return found


async def jsonl_rows(batch: Batch, url: str, params: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """A results file's lines, each one JSON object (blank lines skipped)."""
    read = batch.client.get(url, params=params, headers=batch.headers)
    text = (await checked(read, "reading the batch's results")).text
    return [json.loads(line) for line in text.splitlines() if line]


async def polled(
    batch: Batch, url: str, ended: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    """The batch's state once `ended` holds for it, read every `poll_s`."""
    misses = 0
    while True:
        try:
            state = await checked_json(batch.client.get(url, headers=batch.headers), what)
            misses = 0
            if ended(state):
                return state
        except (BatchUnavailable, httpx2.TransportError):
            misses += 1
            if misses > POLL_MISSES:
                raise
        await asyncio.sleep(batch.poll_s)
