"""bongard-agents: how a problem is solved: LangGraph strategies, the dataset runner and the CLI.

Three strata, each importing only the ones below it:

- the author API, what a strategy is written against: `registry` (the `@strategy` contract and its
  options), `nodes` (the item's context, state, calls, conversations, graph shapes), `answer`,
  `kept`, `solve`, `protocol_cards`; its names are re-exported here (`from graphs import strategy,
  Ctx, ask`);
- `blocks/`, building blocks several families share, and `strategies/`, one module per paper family;
- the machinery around them: `runs/` (runner, checkpoints, provenance, judging), `cluster/` (the Ray
  pools), `generation/` (the Bongard-RWR+ pipeline), `reports/`, `view/`, and `cli/` on top, which
  nothing imports.

The names below are loaded on first use (PEP 562), so importing the CLI does not load LangGraph.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from agents.deferred_imports import defer_package_inits

defer_package_inits()  # before LangChain or LangGraph is imported: agents/deferred_imports.py

if TYPE_CHECKING:
    from graphs.answer import Answer, AnswerParts, parse_rules
    from graphs.kept import KeptResults
    from graphs.nodes import (
        CASE_STUDY,
        Conversation,
        Ctx,
        Item,
        SolveState,
        ask,
        fan_out_graph,
        free_answer,
        intro,
        label_answer,
        linear_graph,
        needs_concept,
        panel_source,
        panel_sources,
        send_each,
        sheet_source,
        side_of_label,
        user_message,
        with_intro,
    )
    from graphs.registry import (
        DatasetContext,
        Graph,
        Preparation,
        ProtocolCard,
        Shape,
        StrategyError,
        StrategyOptions,
        family_strategy,
        get_strategy,
        seeded_random,
        strategy,
    )

_HOMES = {
    "graphs.registry": (
        "DatasetContext", "Graph", "Preparation", "ProtocolCard", "Shape", "StrategyError",
        "StrategyOptions", "family_strategy", "get_strategy", "seeded_random", "strategy",
    ),
    "graphs.nodes": (
        "CASE_STUDY", "Conversation", "Ctx", "Item", "SolveState", "ask", "fan_out_graph", "free_answer",
        "intro", "label_answer", "linear_graph", "needs_concept", "panel_source", "panel_sources",
        "send_each", "sheet_source", "side_of_label", "user_message", "with_intro",
    ),
    "graphs.answer": ("Answer", "AnswerParts", "parse_rules"),
    "graphs.kept": ("KeptResults",),
}  # fmt: skip
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "CASE_STUDY", "Answer", "AnswerParts", "Conversation", "Ctx", "DatasetContext", "Graph", "Item",
    "KeptResults", "Preparation", "ProtocolCard", "Shape", "SolveState", "StrategyError", "StrategyOptions",
    "ask", "family_strategy", "fan_out_graph", "free_answer", "get_strategy", "intro", "label_answer",
    "linear_graph", "needs_concept", "panel_source", "panel_sources", "parse_rules", "seeded_random",
    "send_each", "sheet_source", "side_of_label", "strategy", "user_message", "with_intro",
]  # fmt: skip
"""Written out for the type checkers; a test holds it equal to the names of `_HOMES`."""


def __getattr__(name: str) -> Any:
    """An author-API name, imported from its module the first time it is asked for."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'graphs' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
