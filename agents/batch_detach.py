"""`bongard run --detach`: a run in batch mode stops once every call it has in flight waits on a
batch kept in the workspace's ledger, and its process exits; `bongard run --resume RUN` collects
what those batches answered and goes on.

A call waiting on a kept batch is parked: submitted and recorded (`agents.batch_ledger`) by this
process, or found in a batch an earlier one kept. The run detaches when the calls inside the batching
transports are all parked, and still are `settle_s` later (an item between two rounds, building its
next call, is not left behind by a passing moment). A call whose batch is not kept (a call of no
run) is never parked, so no batch is abandoned unkept.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

SETTLE_S = 2.0


@dataclass
class DetachWatch:
    on_detach: Callable[[], object]
    """Called once, when the run may stop: it cancels the run."""
    settle_s: float = SETTLE_S
    inside: int = 0
    """Calls inside a batching transport, waiting for their result."""
    parked: int = 0
    """Of them, those waiting on a batch the ledger keeps."""
    detached: bool = False
    _timer: asyncio.TimerHandle | None = field(default=None, repr=False)

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """A call inside a transport, for as long as it waits."""
        self.inside += 1
        try:
            yield
        finally:
            self.inside -= 1
            self._check()

    @contextlib.contextmanager
    def waiting_on_kept(self, calls: int = 1) -> Iterator[None]:
        """`calls` waiting on a kept batch, for as long as it is not back."""
        self.parked += calls
        self._check()
        try:
            yield
        finally:
            self.parked -= calls

    def _all_parked(self) -> bool:
        return self.inside > 0 and self.parked >= self.inside

    def _check(self) -> None:
        if self._all_parked() and self._timer is None and not self.detached:
            self._timer = asyncio.get_running_loop().call_later(self.settle_s, self._settled)

    def _settled(self) -> None:
        self._timer = None
        if self.detached:
            return
        if self._all_parked():
            self.detached = True
            self.on_detach()
        else:
            self._check()


DETACH: ContextVar[DetachWatch | None] = ContextVar("batch_detach", default=None)
"""Set for a run started with `--detach`; read by the batching transports."""
