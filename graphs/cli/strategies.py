"""`bongard strategies` and `bongard graph`: what each strategy does and how it is wired."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from graphs.cli.console import console

if TYPE_CHECKING:  # the graphs room loads LangGraph: imported by the commands that use it
    from graphs.registry import StrategyInfo


def list_strategies(
    name: Annotated[
        str | None, typer.Argument(metavar="[STRATEGY]", help="Show this strategy's options (-S KEY=VALUE).")
    ] = None,
) -> None:
    """Every registered strategy with its paper and section, roles, and calls per problem."""
    from graphs.registry import get_strategy, strategy_names

    if name is not None:
        _show_strategy(get_strategy(name))
        return
    table = Table("strategy", "paper", "section", "roles", "calls per problem")
    for listed in strategy_names():
        info = get_strategy(listed)
        table.add_row(*map(escape, (listed, info.paper, info.section, ", ".join(info.roles), info.calls)))
    console.print(table)


def _show_strategy(info: StrategyInfo[Any]) -> None:
    """One strategy: where it comes from, its calls, and each option with its description and default."""
    console.print(escape(f"{info.name}: {info.paper}, {info.section}"))
    console.print(escape(f"roles: {', '.join(info.roles)}; calls per problem: {info.calls}"))
    console.print("scored by: " + ("judges (free-form answers)" if info.judged else "exact match"))
    sent = ", ".join(f"{key}={value}" for key, value in info.decoding.items()) or "each API's defaults"
    console.print(escape(f"decoding (the paper's; -M overrides): {sent}"))
    options = Table("option", "type", "default", "description", title="options (-S KEY=VALUE)")
    for key, field in info.options.model_fields.items():
        default = field.get_default(call_default_factory=True)
        kind = getattr(field.annotation, "__name__", None) or str(field.annotation)
        options.add_row(*map(escape, (key, kind, repr(default), field.description or "")))
    console.print(options if info.options.model_fields else "options: none")


def draw_graph(name: Annotated[str, typer.Argument(metavar="STRATEGY")]) -> None:
    """Print the strategy's graph as a Mermaid diagram."""
    from graphs.registry import get_strategy
    from graphs.solve import compiled

    print(compiled(get_strategy(name).name).get_graph().draw_mermaid())
