"""The `bongard` process leaves its heap to its exit: frozen out of the garbage collector, which
otherwise walked all of it as the interpreter shut down (0.4 s after a run over 100 problems)."""

from __future__ import annotations

import gc
import sys

import pytest

from graphs.cli import main


def test_the_entry_point_freezes_its_heap_for_the_exit_whatever_the_command_ends_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for argv in (["bongard", "--version"], ["bongard", "run", "--strategy", "no-such-strategy"]):
        gc.unfreeze()
        monkeypatch.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit):
            main()
        try:
            assert gc.get_freeze_count() > 0, argv
        finally:
            gc.unfreeze()
