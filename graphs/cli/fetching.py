"""Datasets fetched for the commands: where downloads go, and a download with its progress bar."""

from __future__ import annotations

import os
from pathlib import Path

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from datasets_io.catalog import DATA_DIR_ENV
from datasets_io.downloads import download, source
from datasets_io.workspace import workspace_home
from graphs.cli.console import console


def download_dir(home: Path | None) -> Path:
    """`$BONGARD_DATA` if set, else the workspace's `data/`."""
    configured = os.environ.get(DATA_DIR_ENV)
    return Path(configured) if configured else workspace_home(home) / "data"


def fetch_dataset(name: str, to: Path, mirror: str | None = None) -> Path:
    """A dataset downloaded into `to`, saying what and from where first, with a progress bar."""
    found = source(name)
    if (to / name).exists():
        console.print(f"{name} is already in {to}")
        return to / name
    console.print(f"downloading {escape(found.described())}", highlight=False)
    columns = (BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(name, total=None)
        target = download(name, to, mirror, lambda done, total: bar.update(task, completed=done, total=total))
    console.print(f"{name}: {len(found.manifest())} files checked, in {target}")
    return target
