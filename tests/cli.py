"""Running the `bongard` command as a user does: a real process, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BONGARD = Path(sys.executable).with_name("bongard")


def run_bongard(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(BONGARD), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result
