"""Where the CLI writes: results to stdout, warnings and errors to stderr.

Off a terminal (pipes, CI logs) lines are not wrapped at 80 columns, so
tables and messages stay whole and greppable.
"""

import sys

from rich.console import Console

PIPE_WIDTH = 200

console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else PIPE_WIDTH)
error_console = Console(stderr=True, highlight=False, soft_wrap=True)
