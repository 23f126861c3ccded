"""Where the real Bongard data lies: `$BONGARD_SHARED_DATA`, else `../shared/data` beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA_ENV = "BONGARD_SHARED_DATA"


def shared_data_dir() -> Path:
    """The folder, found or not; the `shared_data` fixture says what is missing."""
    return Path(os.environ.get(SHARED_DATA_ENV) or REPO_ROOT.parent / "shared" / "data")
