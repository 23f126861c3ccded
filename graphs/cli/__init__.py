"""The `bongard` command: the one place that wires the rooms together for the shell.

A command's module is imported when the command is run, not before: `bongard run` loads neither
the analyses' nor the generator's modules, and Typer builds the options of that one command.
`bongard --help`, and a name that is no command, load them all.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterable
from functools import cache
from importlib import import_module
from typing import Annotated

import typer

from datasets_io.errors import BongardError
from graphs.cli.console import print_error
from graphs.cli.imports import uncollected_imports

COMMANDS = {
    "datasets": "graphs.cli.datasets:datasets_app",
    "agents": "graphs.cli.agents:list_agents",
    "ask": "graphs.cli.agents:ask",
    "cache": "graphs.cli.agents:cache_app",
    "strategies": "graphs.cli.strategies:list_strategies",
    "run": "graphs.cli.run:run",
    "runs": "graphs.cli.run:runs_app",
    "judge": "graphs.cli.run:judge",
    "compare": "graphs.cli.compare:compare",
    "show": "graphs.cli.show:show",
    "analyze": "graphs.cli.analyze:analyze_app",
    "generate": "graphs.cli.generate:generate_app",
    "review": "graphs.cli.generate:review",
    "variants": "graphs.cli.generate:variants",
    "graph": "graphs.cli.strategies:draw_graph",
    "view": "graphs.cli.view:view",
    "export": "graphs.cli.export:export",
    "experiment": "graphs.cli.experiment:experiment_app",
    "study": "graphs.cli.study:study_app",
}
"""Each command, in the order `--help` lists them, and where it is (`module:attribute`): a
function, or a Typer app of subcommands."""


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"bongard-agents {version('bongard-agents')}")
        except PackageNotFoundError:
            print("bongard-agents (not installed as a package)")
        raise typer.Exit()


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


def build_app(names: Iterable[str]) -> typer.Typer:
    """The `bongard` app with the commands `names` (keys of `COMMANDS`), their modules imported."""
    built = typer.Typer(
        name="bongard",
        help="Solve Bongard problems with vision-language models, judge and compare strategies.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    built.callback()(_options)
    for name in names:
        module, attribute = COMMANDS[name].split(":")
        command = getattr(import_module(module), attribute)
        if isinstance(command, typer.Typer):
            built.add_typer(command, name=name)
        else:
            built.command(name)(command)
    return built


@cache
def _every_command() -> typer.Typer:
    return build_app(COMMANDS)


def __getattr__(name: str) -> typer.Typer:
    """`app`, with every command: for those who drive the CLI as a Typer app (tests, documentation)."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _every_command()


def main() -> None:
    """Entry point: any toolkit error (a `BongardError`) ends in one clear line on stderr and
    exit code 2, with secrets redacted, never a traceback. The process exits next, so what it holds
    is frozen out of the garbage collector (`gc.freeze`): the interpreter's exit walked it all,
    0.4 s after a run over the 100 classic problems."""
    asked = sys.argv[1] if len(sys.argv) > 1 else ""
    try:
        with uncollected_imports():
            app = build_app([asked] if asked in COMMANDS else COMMANDS)
        app()
    except BongardError as error:
        print_error(error)
        sys.exit(2)
    finally:
        gc.freeze()
