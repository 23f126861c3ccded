"""Every command's `--help` explains every option and argument and names its value in words a reader
knows.

Options are held strictly, to what the help shows after the option's name: a flag shows nothing
(`metavar=""`, else Typer shows `<bool>`), a choice shows its choices (`<png|svg|pdf>`), and any
other value shows an explicit metavar in capitals (RUN, DIR, KEY=VALUE, [TASK=]RULE), never a type
name such as `<str>`, `<path>` or `<int range>`.

Arguments are held by their name instead. Typer 0.29 prints a type column for an argument from its
annotation alone (`TyperArgument.display_type_rich` ignores `metavar`) and offers no supported way
to hide it, so an argument must have an explicit metavar, one capitalised word (RUN, PROBLEM,
DATASET): that is the name the help's argument panel and usage line show, and Typer adds the
brackets of an optional argument (`[RUN]`), the braces of a required one (`{RUN}`) and the `...`
of a repeated one itself (`[RUN]...`), so the metavar carries none of them.

Typer's own `--help` option (which shows `<bool>`) is left out: it is not ours to describe.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import typer
from typer._click.core import Command, Context  # typer's own click, which its commands are built on
from typer.core import TyperArgument, TyperGroup, TyperOption

from graphs.cli import app

TYPE_NAME = re.compile(r"<(str|int|float|bool|path|file|dir|list\[.*\]|.* range)>")
"""The type names Typer shows when no metavar is given: readable to a programmer, not a user."""
OPTION_METAVAR = re.compile(r"[A-Z\[][A-Z0-9_=:\[\] .,|-]*")
"""An option's value in capitals: SPEC, IDS, KEY=VALUE, [TASK=]RULE."""
ARGUMENT_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
"""An argument's name: one capitalised word, Typer adding brackets, braces and `...` itself."""


def commands(command: Command, path: tuple[str, ...] = ("bongard",)) -> Iterator[tuple[str, Command]]:
    """Every command and group with its full name; a group's own options (`--version`) count too."""
    yield " ".join(path), command
    if isinstance(command, TyperGroup):
        for name, sub in command.commands.items():
            yield from commands(sub, (*path, name))


def option_offence(param: TyperOption, shown: str) -> str | None:
    """What is wrong with the value an option's help shows, if anything."""
    if param.is_flag:
        return None if shown == "" else f"flag shows {shown}"
    if TYPE_NAME.search(shown):
        return f"metavar {shown}"
    if param.type_descriptor.is_choice:
        return None  # its choices, e.g. <plain|grey|square|square-grey>
    if param.metavar is None or not OPTION_METAVAR.fullmatch(shown):
        return f"metavar {shown!r} is not an explicit name in capitals"
    return None


def argument_offence(param: TyperArgument) -> str | None:
    """What is wrong with the name an argument's help shows, if anything."""
    if param.metavar is None:
        return f"no metavar (shown as {param.name!r})"
    if not ARGUMENT_NAME.fullmatch(param.metavar):
        return f"metavar {param.metavar!r} is not one word in capitals"
    return None


def offenders() -> list[str]:
    found = []
    for name, command in commands(typer.main.get_command(app)):
        context = Context(command, info_name=name)
        for param in command.params:
            if not isinstance(param, TyperOption | TyperArgument) or param.name in {"help"}:
                continue
            label = param.opts[-1] if isinstance(param, TyperOption) else param.name
            if not (param.help or "").strip():
                found.append(f"{name} {label}: no help text")
            if isinstance(param, TyperOption):
                offence = option_offence(param, param.display_type_rich(ctx=context) or "")
            else:
                offence = argument_offence(param)
            if offence:
                found.append(f"{name} {label}: {offence}")
    return found


def test_every_option_and_argument_has_help_text_and_a_readable_name() -> None:
    assert offenders() == []


def test_a_flag_shows_no_type_in_the_help() -> None:
    """`metavar=""` is what hides a flag's `<bool>` in the help Typer prints, not only in the check."""
    from typer.testing import CliRunner

    shown = CliRunner().invoke(app, ["compare", "--help"], env={"COLUMNS": "200"}).output
    line = next(line for line in shown.splitlines() if "--mixed-rows" in line)
    assert "<bool>" not in line
    assert "<list[str]>" in shown  # an argument keeps its type column: Typer offers no way to hide it
    assert "<path>" not in shown and "<str>" not in shown.split("Options", 1)[1]
