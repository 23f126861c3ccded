"""A command's imports made with the cycle collector paused, what they made then frozen out of it.

Importing a run's libraries (LangChain, LangGraph, LangSmith's models, pydantic's schemas) makes a
few hundred thousand objects that live until the process exits, and each one the collector sees
again on every pass: with the collector running, importing them cost 0.69 s of CPU against 0.60 s
paused (medians of 5 on this machine). Nothing an import makes is garbage worth collecting early,
so the collector waits until the imports are done, and `gc.freeze` then keeps what they made out of
its later passes (the run unfreezes it when it ends, `graphs.runs.runner.frozen_heap`).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def uncollected_imports() -> Iterator[None]:
    """Pause the cycle collector for the block, then freeze what exists and let it run again."""
    running = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if running:
            gc.enable()
