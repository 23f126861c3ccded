"""The workspace: one folder holding the results store, the response cache, checkpoints and logs."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "BONGARD_HOME"
DEFAULT_HOME = Path("~/.bongard")


def workspace_home(home: Path | None = None) -> Path:
    """`home` if given, else `$BONGARD_HOME`, else `~/.bongard`; created on first use."""
    path = (home or Path(os.environ.get(HOME_ENV) or DEFAULT_HOME)).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path
