"""The `bongard` command: the one place that wires the rooms together for the shell."""

from __future__ import annotations

import sys

import typer

from datasets_io.errors import DatasetError
from graphs.cli.console import error_console
from graphs.cli.datasets import datasets_app

app = typer.Typer(
    name="bongard",
    help="Solve Bongard problems with vision-language models, judge and compare strategies.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(datasets_app, name="datasets")


def main() -> None:
    """Entry point: bad input ends in one clear line on stderr, never a traceback."""
    try:
        app()
    except DatasetError as error:
        error_console.print(f"[red]error:[/red] {error}", highlight=False)
        sys.exit(2)
