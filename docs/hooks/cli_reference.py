"""mkdocs hook: the CLI reference page, generated from the `bongard` command itself.

`docs/reference/cli.md` holds a marker; at build time it becomes every command's and subcommand's
`--help`, as Typer prints it, so the reference cannot trail the options the code takes.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup as Group
from typer.testing import CliRunner

from graphs.cli import COMMANDS, build_app

MARKER = "<!-- the bongard command's help, generated -->"
WIDTH = "80"


def on_page_markdown(markdown: str, **_: Any) -> str:
    """The page's marker replaced by the reference; every other page as it is."""
    return markdown.replace(MARKER, reference()) if MARKER in markdown else markdown


def reference() -> str:
    """A section per command, in `--help`'s order, each with its help text as printed."""
    app = build_app(COMMANDS)
    sections: list[str] = []

    def walk(command: Any, path: list[str]) -> None:
        shown = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": WIDTH, "NO_COLOR": "1"})
        title = " ".join(["bongard", *path])
        sections.append(f"## `{title}`\n\n```text\n{shown.output.rstrip()}\n```\n")
        if isinstance(command, Group):
            context = command.make_context("bongard", [], resilient_parsing=True)
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                if sub is not None and not sub.hidden:
                    walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return "\n".join(sections)
