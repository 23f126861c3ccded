"""`bongard view`: the results store in a local web page, read-only, on 127.0.0.1."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Annotated

import typer
from rich.markup import escape

from datasets_io.errors import BongardError
from datasets_io.workspace import DEFAULT_HOME, HOME_ENV
from graphs.cli.console import console, error_console
from graphs.cli.options import HomeOption
from results.store import STORE_FILE

DEFAULT_PORT = 8765
VIEW_PACKAGES = ("starlette", "jinja2", "uvicorn", "markupsafe", "anyio", "h11", "click", "python_multipart")
"""What the `view` extra brings: a missing one is an install hint, not a traceback."""


class ViewerNotInstalled(BongardError):
    """The web stack of the `view` extra is not installed."""


def web_module(name: str, command: str) -> ModuleType:
    """A module of the toolkit's web pages, imported; a missing package of the `view` extra is an
    install hint, not a traceback."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as missing:
        package = (missing.name or "").split(".")[0]
        if package not in VIEW_PACKAGES:
            raise
        raise ViewerNotInstalled(
            f"{command} needs the `view` extra ({package} is missing): pip install 'bongard-agents[view]'"
        ) from None


def store_path(home: Path | None) -> Path:
    """The workspace's store, found as `workspace_home` finds it but without creating the folder:
    the viewer only reads."""
    return (home or Path(os.environ.get(HOME_ENV) or DEFAULT_HOME)).expanduser() / STORE_FILE


def view(
    home: HomeOption = None,
    port: Annotated[
        int,
        typer.Option(
            min=0, max=65535, metavar="PORT", help="Port on 127.0.0.1 to serve on (0: any free one)."
        ),
    ] = DEFAULT_PORT,
) -> None:
    """Browse the results store in a web page: runs, their problems, every call, verdicts, comparisons.

    Read-only and local: the store is opened read-only and the server listens on 127.0.0.1 alone.
    Needs the `view` extra: pip install 'bongard-agents\\[view]'.
    """
    serve = web_module("graphs.view.app", "bongard view").serve
    path = store_path(home)

    def announce(url: str) -> None:
        console.print(f"bongard view: {url} (store {escape(str(path))}, read-only; Ctrl-C stops it)")
        if not path.is_file():
            error_console.print(
                f"[yellow]warning:[/yellow] no results store at {escape(str(path))} yet; "
                "runs appear once one is stored"
            )

    serve(path, port, announce)
