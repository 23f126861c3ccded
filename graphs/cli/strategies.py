"""`bongard strategies` and `bongard graph`: what each strategy does and how it is wired."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from graphs.cli.console import console
from graphs.registry import get_strategy, strategy_names
from graphs.solve import compiled


def list_strategies() -> None:
    """Every registered strategy with its paper and section, roles, and calls per problem."""
    table = Table("strategy", "paper", "section", "roles", "calls per problem")
    for name in strategy_names():
        info = get_strategy(name)
        table.add_row(*map(escape, (name, info.paper, info.section, ", ".join(info.roles), info.calls)))
    console.print(table)


def draw_graph(name: Annotated[str, typer.Argument(metavar="STRATEGY")]) -> None:
    """Print the strategy's graph as a Mermaid diagram."""
    print(compiled(get_strategy(name).name).get_graph().draw_mermaid())
