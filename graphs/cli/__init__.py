"""The `bongard` command: the one place that wires the rooms together for the shell."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.markup import escape

from agents.secrets import redact
from datasets_io.errors import BongardError
from graphs.cli.agents import ask, cache_app, list_agents
from graphs.cli.analyze import analyze_app
from graphs.cli.console import error_console
from graphs.cli.datasets import datasets_app
from graphs.cli.export import export
from graphs.cli.generate import generate, review, variants
from graphs.cli.run import compare, judge, run, runs_app
from graphs.cli.show import show
from graphs.cli.strategies import draw_graph, list_strategies
from graphs.cli.view import view

app = typer.Typer(
    name="bongard",
    help="Solve Bongard problems with vision-language models, judge and compare strategies.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"bongard-agents {version('bongard-agents')}")
        except PackageNotFoundError:
            print("bongard-agents (not installed as a package)")
        raise typer.Exit()


@app.callback()
def _options(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            metavar="",
            help="Print the toolkit's version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Solve Bongard problems with vision-language models, judge and compare strategies."""


app.add_typer(datasets_app, name="datasets")
app.command("agents")(list_agents)
app.command("ask")(ask)
app.add_typer(cache_app, name="cache")
app.command("strategies")(list_strategies)
app.command("run")(run)
app.add_typer(runs_app, name="runs")
app.command("judge")(judge)
app.command("compare")(compare)
app.command("show")(show)
app.add_typer(analyze_app, name="analyze")
app.command("generate")(generate)
app.command("review")(review)
app.command("variants")(variants)
app.command("graph")(draw_graph)
app.command("view")(view)
app.command("export")(export)


def main() -> None:
    """Entry point: any toolkit error (a `BongardError`) ends in one clear line on stderr and
    exit code 2, with secrets redacted, never a traceback."""
    try:
        app()
    except BongardError as error:
        error_console.print(f"[red]error:[/red] {escape(redact(str(error)))}", highlight=False)
        sys.exit(2)
