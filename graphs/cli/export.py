"""`bongard export RUN --format inspect`: a run in another tool's log format."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from graphs.cli.console import console
from graphs.cli.options import HomeOption
from graphs.cli.run import open_reader


class ExportFormat(StrEnum):
    inspect = "inspect"


class LogFormat(StrEnum):
    eval = "eval"
    json = "json"


def export(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="A run id or `latest`.")],
    export_format: Annotated[
        ExportFormat,
        typer.Option("--format", help="inspect: an inspect_ai eval log, opened by `inspect view`."),
    ] = ExportFormat.inspect,
    out: Annotated[
        Path,
        typer.Option("--out", metavar="DIR", help="Folder the log is written to (inspect's default: logs)."),
    ] = Path("logs"),
    images: Annotated[
        bool,
        typer.Option(
            "--images/--no-images",
            metavar="",
            help="Put the images each call sent into its prompt (drawn beside the writing, in processes "
            "from 500 items; most of an export's time: 13 ms a classic problem's sheet here; "
            "--no-images for runs of thousands).",
        ),
    ] = True,
    log_format: Annotated[
        LogFormat,
        typer.Option(
            "--log-format",
            help="inspect's log format: eval (a zip, inspect's default) or json (one document, larger, "
            "written faster); either is written as its samples are made.",
        ),
    ] = LogFormat.eval,
    home: HomeOption = None,
) -> None:
    """Write a run as another tool's log: every item, its calls, answer, target and score."""
    from graphs.reports.inspect_export import export_run

    store = open_reader(home)
    resolved = store.resolve_run(run_id)
    path = export_run(store, resolved, out, images=images, log_format=log_format.value, processes=True)
    console.print(f"{path} (open it with `inspect view --log-dir {out}`)", highlight=False)
