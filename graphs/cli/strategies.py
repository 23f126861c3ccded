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
        str | None,
        typer.Argument(metavar="STRATEGY", help="Show this strategy's protocol card and options."),
    ] = None,
    markdown: Annotated[
        bool,
        typer.Option(
            "--markdown",
            metavar="",
            help="Print every protocol card as the Markdown table of docs/strategies.md.",
        ),
    ] = False,
) -> None:
    """Every registered strategy with its paper and section, roles, and calls per problem."""
    from graphs.registry import get_strategy, strategy_names

    if name is not None:
        _show_strategy(get_strategy(name))
        return
    if markdown:
        from graphs.protocol_cards import markdown_table

        print(markdown_table(get_strategy(listed) for listed in strategy_names()))
        return
    table = Table("strategy", "paper", "section", "roles", "calls per problem")
    for listed in strategy_names():
        info = get_strategy(listed)
        table.add_row(*map(escape, (listed, info.paper, info.section, ", ".join(info.roles), info.calls)))
    console.print(table)


def _show_strategy(info: StrategyInfo[Any]) -> None:
    """One strategy's protocol card (the paper's protocol, and what may be added on top of it), then
    each option with its description and default."""
    from graphs.protocol_cards import RUN_DEPARTURES, card_fields

    console.print(f"[bold]{escape(info.name)}[/bold]")
    for heading, text in card_fields(info).items():
        console.print(escape(f"{heading}: {text}"))
    judges = f"judges (free-form answers), {info.judge_style} prompt unless --style"
    console.print("scored here by: " + (judges if info.judged else "exact match"))
    console.print("any run may also add (off unless given, recorded with the run):")
    for setting, text in RUN_DEPARTURES:
        console.print(escape(f"  {setting}: {text}"))
    options = Table("option", "type", "default", "description", title="options (-S KEY=VALUE)")
    for key, field in info.options.model_fields.items():
        default = field.get_default(call_default_factory=True)
        kind = getattr(field.annotation, "__name__", None) or str(field.annotation)
        options.add_row(*map(escape, (key, kind, repr(default), field.description or "")))
    console.print(options if info.options.model_fields else "options: none")


def draw_graph(
    name: Annotated[
        str, typer.Argument(metavar="STRATEGY", help="Strategy name (see `bongard strategies`).")
    ],
) -> None:
    """Print the strategy's graph as a Mermaid diagram."""
    from graphs.registry import get_strategy
    from graphs.solve import compiled

    print(compiled(get_strategy(name).name).get_graph().draw_mermaid())
