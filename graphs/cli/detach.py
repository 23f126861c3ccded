"""`bongard run --detach`: a batch-mode run that submits its batches, keeps them, and exits; the
usual resume collects what they answered (`agents.batch_detach` decides when to stop)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from agents.batch_detach import DETACH, DetachWatch
from agents.batch_ledger import BatchLedger

if TYPE_CHECKING:
    from graphs.cluster.executor import ClusterOptions
    from graphs.runs.runner import Runner

SHOWN_IDS = 3


@dataclass(frozen=True)
class Detached:
    """A run that detached: where its workspace keeps the batches it left in progress."""

    ledger: Path

    def line(self, resume: str) -> str:
        waiting = [b for b, status in BatchLedger(self.ledger).statuses().items() if status == "submitted"]
        shown = ", ".join(waiting[:SHOWN_IDS]) + (", ..." if len(waiting) > SHOWN_IDS else "")
        return (
            f"detached: {len(waiting)} batch{'es' if len(waiting) != 1 else ''} in progress ({shown}), "
            f"kept in {self.ledger}; `{resume}` collects what they answered and goes on, waiting for "
            "the rest (add --detach to submit the next round and exit again)"
        )


async def until_detached(solving: Coroutine[Any, Any, None]) -> bool:
    """Solve until the run is done (False) or every call in flight waits on a kept batch (True)."""
    task = asyncio.current_task()
    assert task is not None
    watch = DetachWatch(on_detach=task.cancel)
    DETACH.set(watch)
    try:
        await solving
    except asyncio.CancelledError:
        if not watch.detached:
            raise
        task.uncancel()
        return True
    return False


def check_detachable(runner: Runner, cluster: ClusterOptions | None) -> None:
    """`--detach` needs batch mode, in this process."""
    if cluster is not None:
        raise typer.BadParameter("a run on a Ray cluster cannot detach; run it here", param_hint="--detach")
    if not any(agent.params.batch for agent in runner.agents.values()):
        raise typer.BadParameter(
            "detaching leaves batches to finish on their own: give --batch (or -M batch=true)",
            param_hint="--detach",
        )
