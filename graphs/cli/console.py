"""Where the CLI writes: results to stdout, warnings and errors to stderr.

Off a terminal (pipes, CI logs) lines are not wrapped at 80 columns, so
tables and messages stay whole and greppable.
"""

import sys

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, ProgressColumn, Task, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from agents.call_events import EVENTS
from agents.secrets import redact

PIPE_WIDTH = 200

console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else PIPE_WIDTH)
error_console = Console(stderr=True, highlight=False, soft_wrap=True)


def print_error(error: Exception) -> None:
    """A toolkit error as the one line `error: ...` on stderr, secrets redacted."""
    error_console.print(f"[red]error:[/red] {escape(redact(str(error)))}", highlight=False)


def progress_columns() -> tuple[ProgressColumn, ...]:
    """A progress line's columns: what is done, a bar, the count, the time taken and left."""
    return (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )


class EventsColumn(ProgressColumn):
    """The requests sent again and those that timed out, read at every refresh, so a run whose calls
    all time out says so while it waits, not only when an item ends (`agents.call_events`)."""

    def render(self, task: Task) -> Text:
        return Text(EVENTS.words(), style="yellow")
