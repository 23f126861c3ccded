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

RECORDED_CHECKSUMS = "download-checksums.json"
"""In the workspace: SHA-256s recorded at first downloads of archives whose source publishes none."""


def download_dir(home: Path | None) -> Path:
    """`$BONGARD_DATA` if set, else the workspace's `data/`."""
    configured = os.environ.get(DATA_DIR_ENV)
    return Path(configured) if configured else workspace_home(home) / "data"


def fetch_dataset(
    name: str, to: Path, home: Path | None, mirror: str | None = None, repin: bool = False
) -> Path:
    """A dataset downloaded into `to`, saying what and from where first, with a progress bar."""
    found = source(name)
    if (to / name).exists():
        console.print(f"{name} is already in {to}")
        return to / name
    console.print(f"downloading {escape(found.described())}", highlight=False)
    columns = (BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    checksums = workspace_home(home) / RECORDED_CHECKSUMS
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(name, total=None)
        done = download(
            name, to, mirror, lambda n, total: bar.update(task, completed=n, total=total), checksums, repin
        )
    for url in done.replaced:
        console.print(f"{escape(url)}: its earlier pin was replaced by this install's", highlight=False)
    for url in done.recorded:
        console.print(
            f"{escape(url)}: its source publishes no checksum; its SHA-256, now that it installed, is "
            f"recorded in {checksums} and later downloads are checked against it",
            highlight=False,
        )
    for dataset in done.pinned:
        console.print(
            f"{escape(dataset)}: the commit its main branch had at the first download (recorded in "
            f"{checksums}); every download fetches that commit",
            highlight=False,
        )
    console.print(f"{name}: {done.count} file{'' if done.count == 1 else 's'} checked, in {done.path}")
    return done.path
