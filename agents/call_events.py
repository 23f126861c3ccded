"""How many requests of this process were sent again, and how many of those ran out of time.

A progress line that counts only finished calls sits still while a slow local server times out
and every request is retried (`starting 0/5` for three minutes, with no word of why): the agents
note each retry and each timed-out attempt here, and the progress line shows them as they happen.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CallEvents:
    retries: int = 0
    """Attempts after a request's first, for any reason (a rate limit, a server error, a timeout)."""
    timeouts: int = 0
    """Attempts that ran out of time (`-M timeout_s`)."""
    batches: int = 0
    """Batches submitted to a provider's batch API (`agents.batching`)."""
    batches_done: int = 0
    batched: int = 0
    """Requests in the batches submitted."""
    batched_done: int = 0

    def reset(self) -> None:
        """Count afresh: for one pass of a run (a process may make several: a grid's cells)."""
        self.retries = self.timeouts = self.batches = self.batches_done = self.batched = self.batched_done = 0

    def words(self) -> str:
        """`3 retried (2 timed out)`, and in batch mode `batches: 1 done, 1 in progress (40 of 60
        requests back)`, for the progress line; empty while neither happened."""
        parts = []
        if self.retries or self.timeouts:
            timed_out = f" ({self.timeouts} timed out)" if self.timeouts else ""
            parts.append(f"{self.retries} retried{timed_out}")
        if self.batches:
            waiting = self.batches - self.batches_done
            parts.append(
                f"batches: {self.batches_done} done, {waiting} in progress "
                f"({self.batched_done} of {self.batched} requests back)"
            )
        return "; ".join(parts)

    def line(self) -> str:
        """What a run says once its calls are done, with what to do about timeouts; empty for none."""
        if not self.retries and not self.timeouts:
            return ""
        line = f"{self.retries} request attempt(s) sent again"
        if self.timeouts:
            line += (
                f"; {self.timeouts} ran out of time: a slow server wants -M timeout_s=N, or fewer requests "
                "at once (--concurrency, and -M parallel= for llama.cpp)"
            )
        return line


EVENTS = CallEvents()
"""This process's: every agent in it counts here (a Ray worker's count stays in the worker)."""
