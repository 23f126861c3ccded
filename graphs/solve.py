"""Solving one problem with one strategy: prepare its inputs, run its graph, collect the answer."""

from __future__ import annotations

from functools import cache
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from datasets_io.problem import BongardProblem
from graphs.answer import Answer
from graphs.nodes import SolveRuntime
from graphs.registry import DatasetContext, StrategyError, get_strategy


@cache
def compiled(name: str) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A strategy's graph, compiled once per process."""
    return get_strategy(name).build()


def strategy_inputs(
    name: str, problem: BongardProblem, context: DatasetContext, seed: int, options: dict[str, Any]
) -> dict[str, Any]:
    """The seeded, plain-JSON inputs a strategy derives for a problem (test order, distractors...)."""
    info = get_strategy(name)
    if info.needs_test_panels and not problem.test_panels:
        raise StrategyError(
            f"{name} needs test images and {problem.key} has none "
            "(for bongard-classic, hold out panels 5 and 11 with -O holdout_test=true)"
        )
    return info.prepare(problem, context, seed, options) if info.prepare else {}


async def solve(
    name: str,
    problem: BongardProblem,
    runtime: SolveRuntime,
    *,
    context: DatasetContext | None = None,
    seed: int = 0,
    options: dict[str, Any] | None = None,
    checkpoints: BaseCheckpointSaver[Any] | None = None,
    thread: str | None = None,
) -> Answer:
    """Run strategy `name` on `problem`; the answer carries the trace of every call.

    With a checkpointer and a thread id, a thread that was interrupted part way
    continues from its last checkpoint instead of starting again.
    """
    inputs = strategy_inputs(name, problem, context or DatasetContext(), seed, options or {})
    graph = compiled(name)
    config = RunnableConfig(
        configurable={"runtime": runtime}, recursion_limit=get_strategy(name).recursion_limit
    )
    start: dict[str, Any] | None = {
        "problem": problem.model_dump(mode="json"),
        "inputs": inputs,
        "notes": [],
        "trace": [],
    }
    if checkpoints is None or thread is None:
        state = await graph.ainvoke(start, config=config)
    else:
        graph = graph.copy(update={"checkpointer": checkpoints})
        config["configurable"] = {"runtime": runtime, "thread_id": thread}
        if (await graph.aget_state(config)).values:
            start = None  # continue the interrupted thread; a finished one just returns its state
        state = await graph.ainvoke(start, config=config, durability="sync")
    return Answer.model_validate({**state["answer"], "trace": state["trace"]})
