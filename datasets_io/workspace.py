"""The workspace: one folder holding the results store, the response cache, checkpoints and logs."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from datasets_io.errors import BongardError

HOME_ENV = "BONGARD_HOME"
DEFAULT_HOME = Path("~/.bongard")


class WorkspaceError(BongardError):
    """The workspace folder is not one: a file, or a place it cannot be made."""


def workspace_home(home: Path | None = None) -> Path:
    """`home` if given, else `$BONGARD_HOME`, else `~/.bongard`; created on first use. One that is a
    file, or cannot be made, is refused in one line naming it and where it was given."""
    given = "--home" if home else HOME_ENV if os.environ.get(HOME_ENV) else "the default workspace"
    path = (home or Path(os.environ.get(HOME_ENV) or DEFAULT_HOME)).expanduser()
    if path.exists() and not path.is_dir():
        raise WorkspaceError(
            f"the workspace {path} ({given}) is a file, not a folder: give --home DIR or set {HOME_ENV} "
            "to a folder"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise WorkspaceError(
            f"the workspace {path} ({given}) cannot be made: {error.strerror or error}: give --home DIR or "
            f"set {HOME_ENV} to a folder you can write"
        ) from None
    return path


def home_flag(home: Path | None) -> str:
    """` --home DIR` for a command printed as advice, so it acts on the workspace it was made in;
    empty for the default workspace (the command finds it as this one did)."""
    return f" --home {shlex.quote(str(home))}" if home is not None else ""


def store_home_flag(folder: Path) -> str:
    """` --home DIR` for advice about the workspace at `folder` (where a store lies); empty where it
    is the one a command finds without `--home` (`$BONGARD_HOME`, else the default)."""
    default = Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).expanduser()
    return "" if folder.resolve() == default.resolve() else home_flag(folder)
