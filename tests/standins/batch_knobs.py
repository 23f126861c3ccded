"""What a test can tell every batch stand-in, and what each records: the faults of its batches and
the request bodies they held."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class BatchKnobs:
    """Mixed in before a protocol class, whose own `__init__` it calls with its defaults.

    `responder`: the text each request of a batch is answered with; `failing`: how many requests of
    the first batch error; `expire`: the first batch expires, answering none; `cancel`: someone
    cancels each batch in progress; `hold`: batches go no further than in progress (hours long),
    except those `released`; `origin`: the server's address, where a reply names an absolute URL."""

    def __init__(
        self, responder: Callable[[Any], str], failing: int = 0, expire: bool = False, cancel: bool = False
    ) -> None:
        super().__init__()
        self.responder = responder
        self.failing = failing
        self.expire = expire
        self.cancel = cancel
        self.hold = False
        self.released: set[str] = set()
        self.origin = ""
        self.batches: dict[str, dict[str, Any]] = {}
        self.files: dict[str, bytes] = {}
        """Files uploaded or written, by id (the protocols with a Files API)."""
        self.bodies: list[dict[str, Any]] = []
        """Every request body a batch held, in the order processed."""
