"""A loopback port that refuses every connection for as long as a test needs it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def refused_port() -> Iterator[int]:
    """A port bound and never listened on: a connection to it is refused, and no other process can
    take it meanwhile (a port closed at once was taken by a Ray process of the run itself, which
    then answered the "dead" endpoint in gRPC)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]
