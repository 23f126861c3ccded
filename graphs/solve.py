"""Solving one problem with one strategy: prepare its inputs, run its graph, collect the answer."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from datasets_io.problem import BongardProblem
from graphs.answer import Answer, AnswerParts
from graphs.nodes import Item, SolveRuntime, SolveState
from graphs.registry import (
    DatasetContext,
    Graph,
    Preparation,
    Reused,
    StrategyError,
    StrategyOptions,
    get_strategy,
)


@cache
def compiled(name: str) -> Graph:
    """A strategy's graph, compiled once per process."""
    return get_strategy(name).build()


def no_test_images(name: str, problem: BongardProblem) -> StrategyError:
    """The refusal of strategy `name`, which places held-out test images, on a problem with none."""
    return StrategyError(
        f"{name} needs test images and {problem.key} has none "
        "(for bongard-classic, hold out panels 5 and 11 with -O holdout_test=true)"
    )


def strategy_inputs(
    name: str,
    problem: BongardProblem,
    context: DatasetContext,
    seed: int,
    options: Mapping[str, Any] | StrategyOptions,
    reused: Mapping[str, Reused] | None = None,
) -> Any:
    """The seeded inputs a strategy derives for a problem (test order, distractors...).

    `options` are `-S` values by name, or the strategy's options already parsed (a run parses them
    once); `reused` the earlier runs' results for this problem, by the option that named the run.
    """
    info = get_strategy(name)
    if info.needs_test_panels and not problem.test_panels:
        raise no_test_images(name, problem)
    parsed = options if isinstance(options, StrategyOptions) else info.parse_options(options)
    preparation = Preparation(problem, context, seed, parsed, dict(reused or {}))
    return info.prepare(preparation) if info.prepare else None


async def solve(
    name: str,
    problem: BongardProblem,
    runtime: SolveRuntime,
    *,
    context: DatasetContext | None = None,
    seed: int = 0,
    options: Mapping[str, Any] | StrategyOptions | None = None,
    reused: Mapping[str, Reused] | None = None,
    checkpoints: BaseCheckpointSaver[Any] | None = None,
    thread: str | None = None,
) -> Answer:
    """Run strategy `name` on `problem`; the answer carries the trace of every call.

    With a checkpointer and a thread id, a thread that was interrupted part way
    continues from its last checkpoint instead of starting again.
    """
    inputs = strategy_inputs(name, problem, context or DatasetContext(), seed, options or {}, reused)
    item = Item(problem=problem, inputs=inputs, run=runtime)
    graph = compiled(name)
    config = RunnableConfig(recursion_limit=get_strategy(name).recursion_limit)
    start: SolveState | None = {"trace": []}
    if checkpoints is None or thread is None:
        state = await graph.ainvoke(start, config=config, context=item)
    else:
        graph = graph.copy(update={"checkpointer": checkpoints})
        config["configurable"] = {"thread_id": thread}
        if (await graph.aget_state(config)).values:
            start = None  # continue the interrupted thread; a finished one just returns its state
        state = await graph.ainvoke(start, config=config, context=item, durability="sync")
    parts = AnswerParts.model_validate(state["answer"])
    return Answer(**dict(parts), strategy=name, problem=problem.key, trace=state["trace"])
